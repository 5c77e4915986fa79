//===- AppendLoss.cpp - Give an inference graph a loss --------------------===//

#include "cleave/Dialect/Graph/IR/GraphOps.h"
#include "cleave/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace cleave {
#define GEN_PASS_DEF_APPENDLOSS
#include "cleave/Transforms/Passes.h.inc"
} // namespace cleave

using namespace mlir;
using namespace cleave::graph;

namespace {

struct AppendLossPass : public cleave::impl::AppendLossBase<AppendLossPass> {
  using AppendLossBase::AppendLossBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto forward = module.lookupSymbol<func::FuncOp>("forward");
    if (!forward || !forward.getBody().hasOneBlock()) {
      module.emitError("expected a single-block func.func @forward");
      return signalPassFailure();
    }
    auto ret = cast<func::ReturnOp>(forward.front().getTerminator());
    if (output >= ret.getNumOperands()) {
      forward.emitError("output ")
          << unsigned(output) << " does not exist; @forward has "
          << ret.getNumOperands() << " results";
      return signalPassFailure();
    }
    Value logits = ret.getOperand(output);
    auto type = cast<RankedTensorType>(logits.getType());
    if (type.getRank() < 1 || !isa<FloatType>(type.getElementType())) {
      forward.emitError("output ")
          << unsigned(output) << " of type " << type
          << " cannot be logits: expected a float tensor [..., classes]";
      return signalPassFailure();
    }
    OpBuilder b = OpBuilder::atBlockBegin(&forward.front());
    // Outputs of rank 4 and more are channel-first feature maps, [N, C,
    // H, W...] (segmentation, as PyTorch's CrossEntropyLoss reads them):
    // the classes are dimension 1, moved last for the loss. Lower ranks
    // hold the classes last ([N, C], a language model's [N, S, V]).
    SmallVector<int64_t> permutation;
    if (type.getRank() >= 4) {
      permutation.push_back(0);
      for (int64_t d = 2; d < type.getRank(); ++d)
        permutation.push_back(d);
      permutation.push_back(1);
    }
    SmallVector<int64_t> labelShape;
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (permutation.empty() ? d + 1 < type.getRank() : d != 1)
        labelShape.push_back(type.getDimSize(d));
    Value labels = InputOp::create(
        b, forward.getLoc(), RankedTensorType::get(labelShape, b.getI64Type()),
        "labels");
    b.setInsertionPoint(ret);
    if (!permutation.empty())
      logits = TransposeOp::create(b, ret.getLoc(), logits,
                                   b.getDenseI64ArrayAttr(permutation));
    Value loss = CrossEntropyOp::create(b, ret.getLoc(), logits, labels,
                                        b.getI64IntegerAttr(-100));
    ret->setOperands({loss});
    forward.setFunctionType(b.getFunctionType({}, {loss.getType()}));
  }
};

} // namespace
