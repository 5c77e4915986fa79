//===- ExportedMasks.h - An exported decoder's run-time masks ---*- C++ -*-===//
//
// Exporters (PyTorch's dynamo and TorchScript exporters on Hugging Face
// decoders) build attention's additive mask at run time from the model's
// `attention_mask` input (padding) and a causal triangle, so the fused
// graph.attention carries a mask where the zoo's models carry `causal`. A
// generation step pads nothing (each sequence's cache length bounds the
// keys it reads), so there the input is all ones, and a mask that then
// evaluates to the causal triangle is plain causal attention.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TRANSFORMS_EXPORTEDMASKS_H
#define CLEAVE_TRANSFORMS_EXPORTEDMASKS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace cleave {

/// The name of the padding input exporters give a decoder.
inline constexpr llvm::StringLiteral kPaddingMaskInput = "attention_mask";

/// Evaluates each fused attention's mask with `attention_mask` (if `f`
/// has that input) all ones; a mask that depends on nothing else (no
/// other input, no trainable parameter) and evaluates to the causal
/// triangle (0 where key j <= query i + Sk - Sq, -1e9 or less elsewhere)
/// is dropped and the attention marked causal. Returns how many were
/// dropped; the ops only the dropped masks read are erased, and so is
/// `attention_mask` once nothing reads it.
int64_t foldExportedCausalMasks(mlir::func::FuncOp f);

} // namespace cleave

#endif // CLEAVE_TRANSFORMS_EXPORTEDMASKS_H
