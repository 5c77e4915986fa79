//===- GraphPlan.h - Data-parallel plans of graphs without layers -*- C++ -*-===//
//
// Knob-level plan scoring (cost_model TransformerPlan) needs transformer
// layers to split. Other graphs (ResNets, imported CNNs and MLPs) are
// planned here: every device runs the whole graph on its share of the
// batch (dp = every device; tp, pp, cp and ep = 1), with ZeRO 0-3 over the
// data-parallel group and a microbatch size, which is what the lowering
// runs for them. The graph is priced op by op with the cost model's
// operator costs, the way the intra-operator search prices a replicated
// op: a contraction's GEMM (forward and its two backward GEMMs), every
// other op by its FLOPs and bytes (once forward, once backward).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_SEARCH_GRAPHPLAN_H
#define CLEAVE_SEARCH_GRAPHPLAN_H

#include "cleave/cost_model/Cluster.h"
#include "cleave/cost_model/Profile.h"
#include "cleave/cost_model/TransformerPlan.h"

#include "absl/status/statusor.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace cleave::search {

/// What one device does for one microbatch when it runs the whole graph.
struct GraphWork {
  /// The microbatch the module was imported with.
  int64_t microbatch = 1;
  int64_t params = 0;
  double paramBytes = 0;
  /// What one microbatch's forward keeps for its backward: every forward
  /// intermediate (ModelSummary::activationBytes, an upper bound) unless
  /// the caller knows better (lowering::stashedActivationBytes reads it
  /// off the training step).
  double activationBytes = 0;
  /// The largest forward intermediate: the backward pass's working set
  /// (an op's output gradient, its input gradient and a temporary of that
  /// size) lives beside the stash at the peak.
  double largestIntermediateBytes = 0;
  double forwardSeconds = 0;
  double backwardSeconds = 0;
  /// Forward and backward FLOPs (ModelSummary's training estimate).
  double trainingFlops = 0;
};

/// Prices @forward of `module` (imported at the microbatch size) on one
/// device of `cluster`.
absl::StatusOr<GraphWork> measureGraphWork(mlir::ModuleOp module,
                                           int64_t microbatch,
                                           const cost::Cluster &cluster,
                                           const cost::Profile *profile);

/// The step of `plan` (dp must be every device, tp = pp = cp = ep = 1):
/// microbatches of forward and backward, the optimizer step (over the
/// device's ZeRO shard), the gradient reduction (an all-reduce overlapping
/// the last backward pass with ZeRO 0; reduce-scatters and parameter
/// all-gathers with ZeRO 1-3), and the memory per device. `optimizer` is
/// "adamw" (two fp32 states per parameter), "sgd" (one) or "none".
absl::StatusOr<cost::PlanPrediction>
scoreGraphPlan(const GraphWork &work, const cost::Cluster &cluster,
               const cost::ParallelConfig &plan, const std::string &optimizer,
               const cost::Profile *profile);

} // namespace cleave::search

#endif // CLEAVE_SEARCH_GRAPHPLAN_H
