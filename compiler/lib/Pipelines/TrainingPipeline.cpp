//===- TrainingPipeline.cpp - Forward graph to training step --------------===//

#include "cleave/Pipelines.h"

#include "cleave/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;

namespace cleave {

bool needsLoss(ModuleOp module) {
  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  if (!forward)
    return false;
  ArrayRef<Type> results = forward.getFunctionType().getResults();
  auto first = results.empty() ? RankedTensorType()
                               : dyn_cast<RankedTensorType>(results[0]);
  return !first || first.getRank() != 0;
}

void buildTrainingPipeline(OpPassManager &pm,
                           const TrainingPipelineOptions &options) {
  if (options.appendLoss)
    pm.addPass(createAppendLoss());
  TrainingStepOptions step;
  step.optimizer = optimizerName(options.optimizer);
  step.lr = options.lr;
  pm.addPass(createTrainingStep(step));
}

} // namespace cleave
