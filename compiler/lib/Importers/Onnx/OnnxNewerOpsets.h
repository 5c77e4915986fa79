//===- OnnxNewerOpsets.h - Opset 18-28 models in their opset-17 form -*- C++ -*-===//
//
// Internal to the ONNX importer. Debian bookworm's libonnx (1.12) checks,
// infers and converts up to opset 17, while PyTorch's exporters and
// current tools write opsets 18 to 20 and ONNX 1.23 defines up to 28. Those
// opsets changed few operators beyond their types; this pass rewrites a
// model's graph into the opset-17 forms of those (OnnxNewerOpsets.cpp
// lists them: Reduce* with their axes as attributes, Gelu as its
// definition, GroupNormalization over the groups, ...) and refuses, by
// name and opset, what has no opset-17 form.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_IMPORTERS_ONNX_ONNXNEWEROPSETS_H
#define CLEAVE_IMPORTERS_ONNX_ONNXNEWEROPSETS_H

#include "onnx/onnx_pb.h"

#include "llvm/Support/Error.h"

namespace cleave::onnx_import {

/// The newest default-domain opset the rewrite knows.
inline constexpr int64_t kNewestOpset = 28;

/// The domain that opset 23's Attention and RotaryEmbedding are moved to:
/// they have no opset-17 composition that does not depend on their
/// operands' types, so they keep their form for their own converters
/// (OnnxAttentionConverters.cpp), out of the way of libonnx 1.12's
/// checker, which knows no such op in the default domain.
inline constexpr const char *kOpset23Domain = "ai.cleave.opset23";

/// Rewrites `model` (its default-domain `opset`, 18 to kNewestOpset) to
/// opset 17: the graph and its subgraphs, the opset import, and an IR
/// version libonnx 1.12 reads. An error names the node, its operator and
/// the opset when it has no opset-17 form.
llvm::Error downgradeToOpset17(onnx::ModelProto &model, int64_t opset);

} // namespace cleave::onnx_import

#endif // CLEAVE_IMPORTERS_ONNX_ONNXNEWEROPSETS_H
