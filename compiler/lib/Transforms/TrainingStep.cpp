//===- TrainingStep.cpp - Forward graph to one training step --------------===//

#include "cleave/Dialect/Graph/IR/GraphOps.h"
#include "cleave/Transforms/Autodiff.h"
#include "cleave/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/DenseSet.h"

namespace cleave {
#define GEN_PASS_DEF_TRAININGSTEP
#include "cleave/Transforms/Passes.h.inc"
} // namespace cleave

using namespace mlir;
using namespace cleave::graph;

namespace {

struct TrainingStepPass
    : public cleave::impl::TrainingStepBase<TrainingStepPass> {
  using TrainingStepBase::TrainingStepBase;

  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<GraphDialect, func::FuncDialect>();
    cleave::registerAutodiffExternalModels(registry);
  }

  void runOnOperation() override;

private:
  /// Appends the optimizer update of `param` given its gradient; returns the
  /// new values with the names they update.
  void buildUpdate(OpBuilder &b, ParamOp param, Value grad, Value stepInput,
                   Block &body,
                   SmallVectorImpl<std::pair<Value, std::string>> &outputs);
};

void TrainingStepPass::runOnOperation() {
  ModuleOp module = getOperation();
  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  if (!forward) {
    module.emitError("expected a func.func @forward holding the model");
    return signalPassFailure();
  }
  if (module.lookupSymbol("train_step")) {
    module.emitError("the module already has a @train_step");
    return signalPassFailure();
  }
  if (optimizer != "sgd" && optimizer != "adamw" && optimizer != "none") {
    module.emitError("unknown optimizer '")
        << optimizer << "' (expected sgd, adamw or none)";
    return signalPassFailure();
  }
  if (!forward.getBody().hasOneBlock()) {
    forward.emitError("@forward must have a single block");
    return signalPassFailure();
  }
  ArrayRef<Type> results = forward.getFunctionType().getResults();
  auto lossType = results.empty() ? RankedTensorType()
                                  : dyn_cast<RankedTensorType>(results[0]);
  if (!lossType || lossType.getRank() != 0 ||
      !isa<FloatType>(lossType.getElementType())) {
    forward.emitError("@forward must return a scalar float loss as its first "
                      "result; --cleave-append-loss adds one to an inference "
                      "graph");
    return signalPassFailure();
  }

  OpBuilder b(module.getContext());
  b.setInsertionPointAfter(forward);
  auto step = cast<func::FuncOp>(b.clone(*forward));
  step.setName("train_step");
  Block &body = step.front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  size_t forwardOps = body.getOperations().size();

  // Values that depend on a trainable parameter are the only ones whose
  // gradient anyone needs; integer values never carry one.
  llvm::DenseSet<Value> active;
  auto isFloat = [](Value v) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    return t && isa<FloatType>(t.getElementType());
  };
  for (Operation &op : body.without_terminator()) {
    auto param = dyn_cast<ParamOp>(op);
    bool fromParam = param && param.isTrainable();
    bool fromActive = llvm::any_of(
        op.getOperands(), [&](Value v) { return active.contains(v); });
    if (fromParam || fromActive)
      for (Value r : op.getResults())
        if (isFloat(r))
          active.insert(r);
  }

  llvm::DenseMap<Value, Value> grads;
  b.setInsertionPoint(ret);
  Value loss = ret.getOperand(0);
  grads[loss] = ConstantOp::create(
      b, loss.getLoc(),
      DenseElementsAttr::get(lossType,
                             b.getFloatAttr(lossType.getElementType(), 1.0)));

  SmallVector<Operation *> forwardOrder;
  for (Operation &op : body.without_terminator())
    forwardOrder.push_back(&op);
  for (Operation *op : llvm::reverse(forwardOrder)) {
    SmallVector<Value> dys;
    bool anyGrad = false;
    for (Value r : op->getResults()) {
      dys.push_back(grads.lookup(r));
      anyGrad |= static_cast<bool>(dys.back());
    }
    if (!anyGrad || llvm::none_of(op->getOperands(), [&](Value v) {
          return active.contains(v);
        }))
      continue;
    auto rule = dyn_cast<AutodiffOpInterface>(op);
    if (!rule) {
      op->emitOpError("has no derivative rule, but a trainable parameter "
                      "reaches it");
      return signalPassFailure();
    }
    SmallVector<Value> dxs;
    if (failed(rule.buildGradients(b, dys, dxs)) ||
        dxs.size() != op->getNumOperands()) {
      op->emitOpError("derivative rule failed");
      return signalPassFailure();
    }
    for (auto [operand, dx] : llvm::zip(op->getOperands(), dxs)) {
      if (!dx || !active.contains(operand))
        continue;
      Value &acc = grads[operand];
      acc = acc ? Value(AddOp::create(b, op->getLoc(), acc, dx)) : dx;
    }
  }

  // Optimizer updates, in parameter order.
  Value stepInput;
  if (optimizer == "adamw") {
    OpBuilder top = OpBuilder::atBlockBegin(&body);
    stepInput = InputOp::create(top, step.getLoc(),
                                RankedTensorType::get({}, b.getF32Type()),
                                "step");
  }
  SmallVector<std::pair<Value, std::string>> outputs;
  for (Operation *op : forwardOrder) {
    auto param = dyn_cast<ParamOp>(op);
    if (!param || !param.isTrainable())
      continue;
    Value grad = grads.lookup(param);
    if (!grad) {
      // A parameter the loss does not depend on still has a (zero) gradient.
      OpBuilder top = OpBuilder::atBlockBegin(&body);
      grad = ConstantOp::create(
          top, param.getLoc(),
          DenseElementsAttr::get(
              param.getType(),
              b.getFloatAttr(param.getType().getElementType(), 0.0)));
    }
    ++numParams;
    buildUpdate(b, param, grad, stepInput, body, outputs);
  }

  SmallVector<Value> newResults{loss};
  for (auto &[value, name] : outputs)
    newResults.push_back(value);
  func::ReturnOp::create(b, ret.getLoc(), newResults);
  ret.erase();
  step.setFunctionType(b.getFunctionType({}, TypeRange(ValueRange(newResults))));
  StringRef tag = optimizer == "none" ? "cleave.grad" : "cleave.update";
  for (auto [i, output] : llvm::enumerate(outputs))
    step.setResultAttr(i + 1, tag, b.getStringAttr(output.second));

  // Rules build every operand's gradient; drop the ones nobody uses.
  IRRewriter rewriter(module.getContext());
  (void)runRegionDCE(rewriter, step.getBody());
  numBackwardOps = body.getOperations().size() - forwardOps;
}

void TrainingStepPass::buildUpdate(
    OpBuilder &b, ParamOp param, Value grad, Value stepInput, Block &body,
    SmallVectorImpl<std::pair<Value, std::string>> &outputs) {
  std::string name = param.getName().str();
  Location loc = param.getLoc();
  if (optimizer == "none") {
    outputs.push_back({grad, name});
    return;
  }
  OpBuilder top = OpBuilder::atBlockBegin(&body);
  auto state = [&](StringRef suffix) {
    return OptimizerStateOp::create(top, loc, param.getType(),
                                    (name + "." + suffix).str())
        .getResult();
  };
  if (optimizer == "sgd") {
    Value momentumBuf = state("momentum");
    auto update = SgdUpdateOp::create(
        b, loc, param, grad, momentumBuf, b.getF64FloatAttr(lr),
        b.getF64FloatAttr(momentum), b.getF64FloatAttr(weightDecay));
    outputs.push_back({update.getNewParam(), name});
    outputs.push_back({update.getNewMomentum(), name + ".momentum"});
    return;
  }
  Value m = state("exp_avg"), v = state("exp_avg_sq");
  auto update = AdamwUpdateOp::create(
      b, loc, param, grad, m, v, stepInput, b.getF64FloatAttr(lr),
      b.getF64FloatAttr(beta1), b.getF64FloatAttr(beta2),
      b.getF64FloatAttr(eps), b.getF64FloatAttr(weightDecay));
  outputs.push_back({update.getNewParam(), name});
  outputs.push_back({update.getNewExpAvg(), name + ".exp_avg"});
  outputs.push_back({update.getNewExpAvgSq(), name + ".exp_avg_sq"});
}

} // namespace
