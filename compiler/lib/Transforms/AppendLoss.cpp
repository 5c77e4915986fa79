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
    Value labels = InputOp::create(
        b, forward.getLoc(),
        RankedTensorType::get(type.getShape().drop_back(), b.getI64Type()),
        "labels");
    b.setInsertionPoint(ret);
    Value loss = CrossEntropyOp::create(b, ret.getLoc(), logits, labels,
                                        b.getI64IntegerAttr(-100));
    ret->setOperands({loss});
    forward.setFunctionType(b.getFunctionType({}, {loss.getType()}));
  }
};

} // namespace
