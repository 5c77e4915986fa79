//===- TrainingStep.cpp - Forward graph to one training step --------------===//

#include "cleave/Dialect/Graph/IR/GraphOps.h"
#include "cleave/Transforms/Autodiff.h"
#include "cleave/Transforms/Passes.h"
#include "cleave/Transforms/TrainingStepBuilder.h"

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

/// Builds the step's body; one instance per function.
class StepBuilder {
public:
  StepBuilder(func::FuncOp step, const cleave::StepOptions &options)
      : step(step), b(step.getContext()), options(options) {}

  LogicalResult build(cleave::StepStatistics &stats);

private:
  /// Appends the optimizer update of `param` given its gradient; returns the
  /// new values with the names they update.
  void buildUpdate(ParamOp param, Value grad, Value stepInput,
                   SmallVectorImpl<std::pair<Value, std::string>> &outputs);

  func::FuncOp step;
  OpBuilder b;
  const cleave::StepOptions &options;
};

bool isFloat(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && isa<FloatType>(t.getElementType());
}

LogicalResult StepBuilder::build(cleave::StepStatistics &stats) {
  Block &body = step.front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  size_t forwardOps = body.getOperations().size();

  // Values that depend on a trainable parameter, or arrive from another
  // pipeline stage, are the only ones whose gradient anyone needs; integer
  // values never carry one.
  llvm::DenseSet<Value> active;
  for (Operation &op : body.without_terminator()) {
    auto param = dyn_cast<ParamOp>(op);
    bool source = (param && param.isTrainable()) || isa<RecvOp>(op);
    bool fromActive = llvm::any_of(
        op.getOperands(), [&](Value v) { return active.contains(v); });
    if (source || fromActive)
      for (Value r : op.getResults())
        if (isFloat(r))
          active.insert(r);
  }

  SmallVector<Operation *> forwardOrder;
  for (Operation &op : body.without_terminator())
    forwardOrder.push_back(&op);

  llvm::DenseMap<Value, Value> grads;
  b.setInsertionPoint(ret);
  Value loss;
  if (ret.getNumOperands() > 0) {
    auto lossType = dyn_cast<RankedTensorType>(ret.getOperand(0).getType());
    if (lossType && lossType.getRank() == 0 && isFloat(ret.getOperand(0))) {
      loss = ret.getOperand(0);
      Value seed = ConstantOp::create(
          b, loss.getLoc(),
          DenseElementsAttr::get(
              lossType,
              b.getFloatAttr(lossType.getElementType(), options.lossScale)));
      if (options.scaledLoss) {
        if (!lossType.getElementType().isF32())
          return step.emitOpError("scales a loss of type ")
                 << lossType << " (loss scaling needs an f32 loss)";
        OpBuilder top = OpBuilder::atBlockBegin(&body);
        Value scale = InputOp::create(top, step.getLoc(), lossType,
                                      "loss_scale");
        seed = MulOp::create(b, loss.getLoc(), seed, scale);
      }
      grads[loss] = seed;
    }
  }
  // A value sent to the next stage gets its gradient back from there.
  for (Operation *op : forwardOrder)
    if (auto send = dyn_cast<SendOp>(op))
      if (active.contains(send.getInput()))
        grads[send.getInput()] = RecvOp::create(
            b, send.getLoc(), send.getInput().getType(), send.getAxisAttr(),
            send.getOffsetAttr(), send.getTagAttr());
  if (!loss && grads.empty())
    return step.emitOpError("has neither a scalar loss as its first result "
                            "nor a value sent to another stage to "
                            "differentiate");

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
    if (!rule)
      return op->emitOpError("has no derivative rule, but a trainable "
                             "parameter reaches it");
    SmallVector<Value> dxs;
    if (failed(rule.buildGradients(b, dys, dxs)) ||
        dxs.size() != op->getNumOperands())
      return op->emitOpError("derivative rule failed");
    for (auto [operand, dx] : llvm::zip(op->getOperands(), dxs)) {
      if (!dx || !active.contains(operand))
        continue;
      Value &acc = grads[operand];
      acc = acc ? Value(AddOp::create(b, op->getLoc(), acc, dx)) : dx;
    }
  }
  // A value received from the previous stage sends its gradient back.
  for (Operation *op : forwardOrder)
    if (auto recv = dyn_cast<RecvOp>(op))
      if (Value grad = grads.lookup(recv.getResult()))
        SendOp::create(b, recv.getLoc(), grad, recv.getAxisAttr(),
                       recv.getOffsetAttr(),
                       recv.getTagAttr());

  // Optimizer updates, in parameter order.
  Value stepInput;
  if (options.optimizer == cleave::Optimizer::AdamW) {
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
    ++stats.params;
    buildUpdate(param, grad, stepInput, outputs);
  }

  SmallVector<Value> newResults;
  if (loss)
    newResults.push_back(loss);
  for (auto &[value, name] : outputs)
    newResults.push_back(value);
  func::ReturnOp::create(b, ret.getLoc(), newResults);
  ret.erase();
  step.setFunctionType(b.getFunctionType(step.getArgumentTypes(),
                                         TypeRange(ValueRange(newResults))));
  StringRef tag =
      cleave::trains(options.optimizer) ? "cleave.update" : "cleave.grad";
  unsigned first = loss ? 1 : 0;
  // All at once: setResultAttr rebuilds the array of every result's
  // attributes per call, and the context keeps each one, which made a model
  // of 1024 layers take 19 GB here.
  SmallVector<DictionaryAttr> resultAttrs(newResults.size(),
                                          b.getDictionaryAttr({}));
  for (auto [i, output] : llvm::enumerate(outputs))
    resultAttrs[first + i] = b.getDictionaryAttr(
        b.getNamedAttr(tag, b.getStringAttr(output.second)));
  step.setAllResultAttrs(resultAttrs);

  // Tag the phases for the lowering to per-device segments: every op the
  // builder added is backward, from the first optimizer update on optimizer.
  if (options.tagPhases) {
    llvm::DenseSet<Operation *> forwardSet(forwardOrder.begin(),
                                           forwardOrder.end());
    auto phase = b.getStringAttr("backward");
    for (Operation &op : body.without_terminator()) {
      if (isa<SgdUpdateOp, AdamwUpdateOp>(op))
        phase = b.getStringAttr("optimizer");
      if (!forwardSet.contains(&op) && !isa<OptimizerStateOp, InputOp>(op))
        op.setAttr("cleave.phase", phase);
    }
  }
  // Rules build every operand's gradient; drop the ones nobody uses.
  IRRewriter rewriter(step.getContext());
  (void)runRegionDCE(rewriter, step.getBody());

  stats.backwardOps = body.getOperations().size() - forwardOps;
  return success();
}

void StepBuilder::buildUpdate(
    ParamOp param, Value grad, Value stepInput,
    SmallVectorImpl<std::pair<Value, std::string>> &outputs) {
  Block &body = step.front();
  std::string name = param.getName().str();
  Location loc = param.getLoc();
  if (!cleave::trains(options.optimizer)) {
    outputs.push_back({grad, name});
    return;
  }
  OpBuilder top = OpBuilder::atBlockBegin(&body);
  auto state = [&](StringRef suffix) {
    return OptimizerStateOp::create(top, loc, param.getType(),
                                    (name + "." + suffix).str())
        .getResult();
  };
  if (options.optimizer == cleave::Optimizer::Sgd) {
    Value momentumBuf = state("momentum");
    auto update = SgdUpdateOp::create(
        b, loc, param, grad, momentumBuf, b.getF64FloatAttr(options.lr),
        b.getF64FloatAttr(options.momentum),
        b.getF64FloatAttr(options.weightDecay));
    outputs.push_back({update.getNewParam(), name});
    outputs.push_back({update.getNewMomentum(), name + ".momentum"});
    return;
  }
  Value m = state("exp_avg"), v = state("exp_avg_sq");
  auto update = AdamwUpdateOp::create(
      b, loc, param, grad, m, v, stepInput, b.getF64FloatAttr(options.lr),
      b.getF64FloatAttr(options.beta1), b.getF64FloatAttr(options.beta2),
      b.getF64FloatAttr(options.eps), b.getF64FloatAttr(options.weightDecay));
  outputs.push_back({update.getNewParam(), name});
  outputs.push_back({update.getNewExpAvg(), name + ".exp_avg"});
  outputs.push_back({update.getNewExpAvgSq(), name + ".exp_avg_sq"});
}

struct TrainingStepPass
    : public cleave::impl::TrainingStepBase<TrainingStepPass> {
  using TrainingStepBase::TrainingStepBase;

  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<GraphDialect, func::FuncDialect>();
    cleave::registerAutodiffExternalModels(registry);
  }

  void runOnOperation() override;
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
  std::optional<cleave::Optimizer> chosen =
      cleave::parseOptimizer(optimizer.getValue());
  if (!chosen) {
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
  cleave::StepOptions options;
  options.optimizer = *chosen;
  options.lr = lr;
  options.momentum = momentum;
  options.beta1 = beta1;
  options.beta2 = beta2;
  options.eps = eps;
  options.weightDecay = weightDecay;
  options.tagPhases = tagPhases;
  options.scaledLoss = scaledLoss;
  cleave::StepStatistics stats;
  if (failed(cleave::buildTrainingStep(forward, "train_step", options, &stats)))
    return signalPassFailure();
  numBackwardOps = stats.backwardOps;
  numParams = stats.params;
}

} // namespace

namespace cleave {

FailureOr<func::FuncOp> buildTrainingStep(func::FuncOp forward, StringRef name,
                                          const StepOptions &options,
                                          StepStatistics *stats) {
  if (!forward.getBody().hasOneBlock())
    return forward.emitOpError("must have a single block to differentiate");
  OpBuilder b(forward.getContext());
  b.setInsertionPointAfter(forward);
  auto step = cast<func::FuncOp>(b.clone(*forward));
  step.setName(name);
  StepStatistics local;
  if (failed(StepBuilder(step, options).build(stats ? *stats : local))) {
    step.erase();
    return failure();
  }
  return step;
}

} // namespace cleave
