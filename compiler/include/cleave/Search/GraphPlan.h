//===- GraphPlan.h - Data-parallel plans of graphs without layers -*- C++ -*-===//
//
// Knob-level plan scoring (cost_model TransformerPlan) needs transformer
// layers to split. Other graphs (ResNets, imported CNNs and MLPs) are
// planned here: pipeline stages of residual blocks, data parallelism with
// ZeRO 0-3 over the replicas, a microbatch size, and tensor parallelism
// whose sharding the intra-operator search chooses (cp = ep = 1), which is
// what the lowering runs for them. The graph is priced op by op with the
// cost model's operator costs, the way the intra-operator search prices a
// replicated op: a contraction's GEMM (forward and its two backward
// GEMMs), every other op by its FLOPs and bytes (once forward, once
// backward). Under tensor parallelism each piece's time is scaled by what
// the search's choice costs against running its ops whole (compute, the
// choice's collectives and resharding, all in the search's own prices).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_SEARCH_GRAPHPLAN_H
#define CLEAVE_SEARCH_GRAPHPLAN_H

#include "cleave/Transforms/Optimizer.h"
#include "cleave/cost_model/Cluster.h"
#include "cleave/cost_model/Profile.h"
#include "cleave/cost_model/Simulator.h"
#include "cleave/cost_model/TransformerPlan.h"

#include "absl/status/statusor.h"

#include "mlir/IR/BuiltinOps.h"

#include <cmath>
#include <map>
#include <string>

namespace cleave::search {

/// A piece of the graph that pipeline stages hold whole: the ops before
/// the first residual block (a stem), a block (numberResidualBlocks), or
/// the ops after the last (pooling, classifier, loss). Per microbatch.
struct GraphPiece {
  double forwardSeconds = 0, backwardSeconds = 0;
  /// Its forward FLOPs (what recomputation adds to the hardware's work).
  double forwardFlops = 0;
  /// The share of backwardSeconds that computes weight gradients (the
  /// weight GEMMs of its contractions and convolutions): the W pass a
  /// zero-bubble schedule defers. Until it runs a microbatch keeps those
  /// ops' activation inputs and output gradients, weightGradBytes (one
  /// device's under tensor parallelism).
  double weightGradSeconds = 0, weightGradBytes = 0;
  /// The graph inputs it reads (the images): a pipeline stage keeps each
  /// microbatch's from its forward to its backward pass.
  double inputBytes = 0;
  double params = 0, paramBytes = 0;
  /// Its trainable parameter tensors: ZeRO's lowering runs a collective
  /// per tensor, each paying the collective's latency.
  double paramTensors = 0;
  /// What its forward keeps for its backward (the caller fills it from the
  /// training step, lowering::stashedActivationBytesByBlock).
  double activationBytes = 0;
  /// The same under full recomputation (a block keeps its input and output,
  /// and runs its forward again in the backward pass); negative where not
  /// known, and then the plan cannot recompute. Filled like
  /// activationBytes, from the step cleave-recompute rewrote.
  double recomputedActivationBytes = -1;
  double largestIntermediateBytes = 0;
  /// Its largest trainable parameter: the backward pass computes that
  /// parameter's gradient in a temporary before accumulating it.
  double largestParamBytes = 0;
  /// The value it hands to the next piece: what a stage cut after it sends.
  double outputBytes = 0;
  /// The fraction of its intermediates one device holds under the tensor-
  /// parallel sharding (1 without): the caller scales the stash it fills
  /// in by it.
  double activationShare = 1;
};

/// What one device does for one microbatch when it runs the whole graph.
struct GraphWork {
  /// The microbatch the module was imported with.
  int64_t microbatch = 1;
  /// The tensor-parallel degree it was priced for; with more than one
  /// device, parameters and times are one device's under the
  /// intra-operator search's sharding.
  int64_t tp = 1;
  /// That search: its objective (seconds of one device's forward and
  /// backward, in the search's prices) against the same ops run whole,
  /// and the strategies it chose, counted by name.
  double tpSearchSeconds = 0, tpWholeSeconds = 0;
  /// The relative gap CBC proved for that sharding (0 with tp = 1): how far
  /// above the best sharding's objective it may be.
  double tpGap = 0;
  std::map<std::string, int64_t> tpStrategies;
  /// The sharding it chose for each op of @forward, in order, as
  /// #graph.op_sharding text (empty with tp = 1): the artifact writes them
  /// on the ops it lowers, so the lowering runs the sharding priced here
  /// instead of solving again on a graph it has changed (a loss appended,
  /// 16-bit activations).
  std::vector<std::string> tpShardings;
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
  /// The same work by piece: [0] before the first residual block, [1 + k]
  /// block k, the last after the last block; two pieces when the graph has
  /// no residual blocks (so no pipeline stages).
  std::vector<GraphPiece> pieces;
  int64_t numBlocks() const {
    return pieces.size() > 2 ? int64_t(pieces.size()) - 2 : 0;
  }
};

/// Prices @forward of `module` (imported at the microbatch size) on one
/// device of `cluster`, or with `tp` > 1 on one of tp neighbouring devices
/// under the sharding the intra-operator search chooses with the limits
/// the lowering uses (tensorParallelLimits), so that the plan priced is
/// the plan run. `training`: price the backward pass and the update in the
/// search (an optimizer other than None).
absl::StatusOr<GraphWork> measureGraphWork(mlir::ModuleOp module,
                                           int64_t microbatch,
                                           const cost::Cluster &cluster,
                                           const cost::Profile *profile,
                                           int64_t tp = 1,
                                           bool training = true,
                                           double searchTimeLimit = 60);

/// The step of `plan` (dp x pp x tp must be every device, tp that of
/// `work`, cp = ep = 1; ranks are pp-major, tp innermost as in the plan's
/// mesh, so a tensor-parallel group is neighbouring devices):
/// microbatches of forward and backward, the optimizer step (over the
/// device's ZeRO shard), the gradient reduction (an all-reduce overlapping
/// the last backward pass with ZeRO 0; reduce-scatters and parameter
/// all-gathers with ZeRO 1-3), and the memory per device, with the fp32
/// states `optimizer` keeps per parameter (optimizerStates).
///
/// With pp > 1 the residual blocks are cut into pp contiguous stages, or
/// pp x vpp chunks under the interleaved schedule (chunk c on stage
/// c % pp), balanced by their forward and backward time (the stem with the
/// first, the head with the last; StageBalance.h), and the step is
/// simulated under the plan's schedule (GPipe, 1F1B, interleaved 1F1B,
/// ZB-H1): each chunk's passes, the block outputs and their gradients sent
/// between stages, each chunk's gradient reduction over its dp replicas
/// and each stage's optimizer step. A stage keeps the stashes its schedule
/// holds at once (interleaved: in frames by classes of chunks, as the
/// lowering lays them out, cost::planStashFrames), two send slots of what
/// it sends each way, and its own parameters. Under ZB-H1 a chunk's W is
/// its pieces' weightGradSeconds, and from its B to its W a microbatch
/// keeps their weightGradBytes; the first chunk, which sends no gradient
/// back, runs its whole backward as B (as the lowering does).
///
/// Recomputation (the plan's `recompute`, or per stage `stage_recompute`)
/// is `full` or `none`: a recomputing stage stashes its blocks'
/// recomputedActivationBytes per microbatch in flight, holds one block's
/// whole stash beside them while that block's backward pass runs, and runs
/// each block's forward pass again before its backward pass. Stages that
/// recompute are balanced with the extra pass (refineForChunkCosts).
///
/// A one-stage plan is a pipeline of one chunk holding the whole graph,
/// scored the same way (cost::scoreStages). With `graph` and `timeline`,
/// the simulated step is returned for a Chrome trace. A plan whose lower
/// bound exceeds `simulateBelow` comes back unsimulated (a search's
/// pruning, as the transformer search's).
absl::StatusOr<cost::PlanPrediction>
scoreGraphPlan(const GraphWork &work, const cost::Cluster &cluster,
               const cost::ParallelConfig &plan, Optimizer optimizer,
               const cost::Profile *profile, cost::TaskGraph *graph = nullptr,
               cost::Timeline *timeline = nullptr,
               double simulateBelow = HUGE_VAL);

} // namespace cleave::search

#endif // CLEAVE_SEARCH_GRAPHPLAN_H
