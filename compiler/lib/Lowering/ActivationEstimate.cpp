//===- ActivationEstimate.cpp - What a training step keeps for backward ---===//

#include "cleave/Lowering/ActivationEstimate.h"

#include "cleave/Dialect/Graph/IR/GraphOps.h"
#include "cleave/Dialect/Graph/IR/ShapeInference.h"
#include "cleave/Transforms/Passes.h"
#include "cleave/Transforms/TrainingStepBuilder.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"

namespace cleave::lowering {

using namespace mlir;

FailureOr<double> stashedActivationBytes(ModuleOp module,
                                         const std::string &optimizer) {
  OwningOpRef<ModuleOp> copy(module.clone());
  auto forward = copy->lookupSymbol<func::FuncOp>("forward");
  if (!forward)
    return failure();
  auto results = forward.getFunctionType().getResults();
  auto first = results.empty() ? RankedTensorType()
                               : dyn_cast<RankedTensorType>(results[0]);
  if (!first || first.getRank() != 0) {
    PassManager pm(module.getContext());
    pm.addPass(createAppendLoss());
    if (failed(pm.run(*copy)))
      return failure();
    forward = copy->lookupSymbol<func::FuncOp>("forward");
  }
  StepOptions step;
  step.optimizer = optimizer == "none" ? "sgd" : optimizer;
  step.tagPhases = true;
  FailureOr<func::FuncOp> train =
      buildTrainingStep(forward, "activation_estimate", step);
  if (failed(train))
    return failure();
  // Forward ops carry no phase; a value one of them defines and a backward
  // op reads stays alive from its forward to its backward.
  auto phase = [](Operation *op) {
    auto attr = op->getAttrOfType<StringAttr>("cleave.phase");
    return attr ? attr.getValue() : StringRef("forward");
  };
  // Parameters, constants and inputs have their own places in memory; so
  // do values made from parameters alone (a transposed weight lives as
  // long as its parameter), which are not per-microbatch activations.
  llvm::DenseSet<Operation *> persistent;
  double bytes = 0;
  train->walk([&](Operation *op) {
    if (phase(op) != "forward" || isa<func::FuncOp>(op))
      return;
    if (isa<graph::InputOp>(op))
      return;
    if (isa<graph::ParamOp, graph::ConstantOp>(op) ||
        (op->getNumOperands() > 0 &&
         llvm::all_of(op->getOperands(), [&](Value v) {
           Operation *def = v.getDefiningOp();
           return def && persistent.contains(def);
         }))) {
      persistent.insert(op);
      return;
    }
    for (Value result : op->getResults())
      if (llvm::any_of(result.getUsers(), [&](Operation *user) {
            return phase(user) == "backward";
          }))
        bytes += static_cast<double>(graph::tensorBytes(result.getType()));
  });
  return bytes;
}

} // namespace cleave::lowering
