//===- TrainingStepBuilder.h - Forward function to a training step -*- C++ -*-===//
//
// The reverse-mode core shared by cleave-training-step (the whole model)
// and the pipeline lowering (one stage at a time). A stage's function has
// no loss unless it is the last; instead it sends activations to the next
// stage (graph.send) and receives them from the previous one (graph.recv).
// The builder pairs them: the gradient of a sent value is received back,
// and the gradient of a received value is sent back, to and from the same
// peer (the same offset) with the same tag.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TRANSFORMS_TRAININGSTEPBUILDER_H
#define CLEAVE_TRANSFORMS_TRAININGSTEPBUILDER_H

#include "cleave/Transforms/Optimizer.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <string>

namespace cleave {

struct StepOptions {
  /// The update; None returns the gradients.
  Optimizer optimizer = Optimizer::AdamW;
  double lr = 1e-3, momentum = 0.9, beta1 = 0.9, beta2 = 0.999, eps = 1e-8,
         weightDecay = 0.0;
  /// The gradient seeded at the loss: 1 for one step of the whole batch,
  /// 1 / (microbatches * data-parallel replicas) when each device's loss is
  /// the mean over its share and gradients are summed afterwards.
  double lossScale = 1.0;
  /// Loss scaling (fp16 storage): the seed is also multiplied by the
  /// scalar f32 `graph.input "loss_scale"`, which the runtime fills every
  /// step; the lowering unscales the reduced gradients before the updates.
  bool scaledLoss = false;
  /// Tag backward and optimizer ops with `cleave.phase` (for the lowering
  /// to per-device segments).
  bool tagPhases = false;
};

struct StepStatistics {
  int64_t backwardOps = 0, params = 0;
};

/// Clones `forward` into a new function `name` (inserted after it) that runs
/// the forward ops, the backward ops and the optimizer updates (with
/// `tagPhases`, tagged `cleave.phase = "backward"` and "optimizer"), and
/// returns the loss (when `forward` returns one first) followed by every
/// updated parameter and state, tagged `cleave.update` (or `cleave.grad`
/// with optimizer "none"). Errors are emitted at the offending op.
llvm::FailureOr<mlir::func::FuncOp>
buildTrainingStep(mlir::func::FuncOp forward, llvm::StringRef name,
                  const StepOptions &options, StepStatistics *stats = nullptr);

} // namespace cleave

#endif // CLEAVE_TRANSFORMS_TRAININGSTEPBUILDER_H
