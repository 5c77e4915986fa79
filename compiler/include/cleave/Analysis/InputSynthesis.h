//===- InputSynthesis.h - How a run makes up each model input --*- C++ -*-===//
//
// `cleave run` without --data or --input makes up every input of the model.
// What is valid depends on what the input is, which its uses and its name
// tell: token ids index an embedding table (ids below its rows), labels
// are a cross-entropy's targets (below its logits' classes), an attention
// mask is all ones, position ids count 0, 1, ... along the sequence,
// token-type ids are zeros (Hugging Face's defaults for the last three).
// The analysis runs on the whole forward graph, before partitioning (after
// it a vocab-parallel embedding holds a slice of the table), and records
// its finding on each graph.input for the program emitter.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_ANALYSIS_INPUTSYNTHESIS_H
#define CLEAVE_ANALYSIS_INPUTSYNTHESIS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>

namespace cleave {

/// How synthetic values of an input are made; the plan's
/// TensorDecl.Synthesis has the same members.
enum class InputSynthesis {
  /// Floats N(0, 1); integers uniform in [0, vocab).
  Random,
  Ones,
  Zeros,
  /// The position along the sequence dimension: 0, 1, ..., seq - 1.
  Positions,
};

/// Discardable attributes on graph.input that carry the findings.
inline constexpr llvm::StringLiteral kInputVocabAttr = "cleave.vocab";
inline constexpr llvm::StringLiteral kInputSynthesisAttr = "cleave.synthesis";

llvm::StringRef inputSynthesisName(InputSynthesis s);
std::optional<InputSynthesis> parseInputSynthesis(llvm::StringRef name);

/// Annotates every graph.input of `forward` that has no annotation yet:
/// the synthesis by its name (masks, positions, token types), and for
/// integer inputs the largest valid id + 1 from its uses (the rows of the
/// tables it gathers from, the classes of the logits it labels; the
/// smallest over several uses), looking through reshapes and casts.
void annotateInputSynthesis(mlir::func::FuncOp forward);

} // namespace cleave

#endif // CLEAVE_ANALYSIS_INPUTSYNTHESIS_H
