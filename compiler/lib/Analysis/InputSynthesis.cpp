//===- InputSynthesis.cpp - How a run makes up each model input -----------===//

#include "cleave/Analysis/InputSynthesis.h"

#include "cleave/Dialect/Graph/IR/GraphOps.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
namespace gr = cleave::graph;

namespace cleave {

llvm::StringRef inputSynthesisName(InputSynthesis s) {
  switch (s) {
  case InputSynthesis::Random:
    return "random";
  case InputSynthesis::Ones:
    return "ones";
  case InputSynthesis::Zeros:
    return "zeros";
  case InputSynthesis::Positions:
    return "positions";
  }
  return "random";
}

std::optional<InputSynthesis> parseInputSynthesis(llvm::StringRef name) {
  for (InputSynthesis s : {InputSynthesis::Random, InputSynthesis::Ones,
                           InputSynthesis::Zeros, InputSynthesis::Positions})
    if (name == inputSynthesisName(s))
      return s;
  return std::nullopt;
}

namespace {

/// The synthesis an input's name asks for (Hugging Face's and the
/// exporters' names: attention_mask, position_ids, token_type_ids).
InputSynthesis synthesisByName(llvm::StringRef name) {
  std::string lower = name.lower();
  llvm::StringRef n(lower);
  if (n.contains("mask"))
    return InputSynthesis::Ones;
  if (n.contains("position"))
    return InputSynthesis::Positions;
  if (n.contains("token_type") || n.contains("segment"))
    return InputSynthesis::Zeros;
  return InputSynthesis::Random;
}

/// The ids `v` may hold, from what reads it: the rows of a table it
/// gathers from, the classes of logits it labels. Reshapes and casts pass
/// ids through unchanged, so their uses count too.
std::optional<int64_t> idBound(Value v, int depth = 0) {
  std::optional<int64_t> bound;
  auto take = [&](int64_t b) {
    if (b > 0 && (!bound || b < *bound))
      bound = b;
  };
  for (OpOperand &use : v.getUses()) {
    Operation *user = use.getOwner();
    if (auto gather = dyn_cast<gr::GatherOp>(user)) {
      if (use.getOperandNumber() == 1) {
        auto data = cast<RankedTensorType>(gather.getData().getType());
        int64_t axis = gather.getAxis();
        if (axis < 0)
          axis += data.getRank();
        if (axis >= 0 && axis < data.getRank() && !data.isDynamicDim(axis))
          take(data.getDimSize(axis));
      }
    } else if (auto ce = dyn_cast<gr::CrossEntropyOp>(user)) {
      if (use.getOperandNumber() == 1) {
        auto logits = cast<RankedTensorType>(ce.getLogits().getType());
        take(logits.getShape().back());
      }
    } else if (isa<gr::ReshapeOp, gr::CastOp>(user) && depth < 4) {
      if (auto b = idBound(user->getResult(0), depth + 1))
        take(*b);
    }
  }
  return bound;
}

} // namespace

void annotateInputSynthesis(func::FuncOp forward) {
  MLIRContext *ctx = forward.getContext();
  forward.walk([&](gr::InputOp input) {
    if (input->hasAttr(kInputSynthesisAttr))
      return;
    InputSynthesis s = synthesisByName(input.getName());
    input->setAttr(kInputSynthesisAttr,
                   StringAttr::get(ctx, inputSynthesisName(s)));
    auto type = cast<RankedTensorType>(input.getType());
    if (isa<IntegerType>(type.getElementType()) &&
        !type.getElementType().isInteger(1))
      if (std::optional<int64_t> bound = idBound(input.getResult()))
        input->setAttr(kInputVocabAttr,
                       IntegerAttr::get(IntegerType::get(ctx, 64), *bound));
  });
}

} // namespace cleave
