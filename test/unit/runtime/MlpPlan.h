//===- MlpPlan.h - A hand-built plan of a 2-layer MLP for the tests -------===//
//
// x [b, in] -> matmul W1 -> relu -> matmul W2 -> cross_entropy(labels),
// its backward with the grad ops the autodiff pass emits, gradient
// accumulation over microbatches and an SGD (or AdamW) update, laid out in
// an arena as the compiler would. W1 is split by columns and W2 by rows
// over "tp" (Megatron's MLP: one all-reduce of the logits), the batch over
// "dp" (gradients all-reduced, mean, asynchronously).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TEST_UNIT_RUNTIME_MLPPLAN_H
#define CLEAVE_TEST_UNIT_RUNTIME_MLPPLAN_H

#include "cleave/runtime/plan/plan.pb.h"

#include <string>

namespace cleave::test {

struct MlpPlanOptions {
  int64_t batch = 8;
  int64_t in = 6;
  int64_t hidden = 8;
  int64_t classes = 5;
  int64_t dp = 1;
  int64_t tp = 1;
  int64_t microbatches = 1;
  double lr = 0.5;
  /// "sgd" or "adamw".
  std::string optimizer = "sgd";
  /// Pipeline plan: 1F1B order instead of GPipe, and whether its sends are
  /// `buffered` (completed at the end of the step).
  bool oneFOneB = false;
  bool bufferedSends = true;
};

/// Tensor ids of the plan's program.
enum MlpTensor : int32_t {
  kW1 = 0,
  kW2,
  kX,
  kLabels,
  kPre,
  kAct,
  kLogits,
  kLoss,
};

plan::Plan buildMlpPlan(const MlpPlanOptions &options);

/// The same MLP in two pipeline stages over a "pp" axis of 2 (dp and tp
/// must be 1): stage 0 holds W1 and sends the activations, stage 1 holds W2
/// and the loss and sends their gradient back; GPipe order, SGD.
plan::Plan buildMlpPipelinePlan(const MlpPlanOptions &options);

/// An inference plan (optimizer "none", forward segments only): y = relu(x
/// W) with x an F32 INPUT "pixels" [batch / (microbatches dp), in], W a
/// parameter [in, hidden] and y the model output (Program.output_tensors),
/// a STASH with one slot per microbatch. dp ranks over a "dp" axis; no loss.
plan::Plan buildInferencePlan(const MlpPlanOptions &options);

/// The 2-layer MLP's forward as an inference plan in two pipeline stages
/// over "pp" (dp and tp 1): stage 0 relu(x W1) sent (buffered) to stage 1,
/// which computes logits = act W2, the output. Forward segments only.
plan::Plan buildInferencePipelinePlan(const MlpPlanOptions &options);

/// Tensor ids of the inference plan's program.
enum InferenceTensor : int32_t { kInferW = 0, kInferX, kInferY };

} // namespace cleave::test

#endif // CLEAVE_TEST_UNIT_RUNTIME_MLPPLAN_H
