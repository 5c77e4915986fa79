//===- StageWorkload.h - Pipeline plans scored from their chunks' work -*- C++ -*-===//
//
// A plan's pipeline chunks described by their work (per microbatch, on one
// device of the stage: passes, parameters, what the forward keeps for the
// backward and what crosses the cuts), and the one scoring of such chunks:
// the simulated schedule with its collectives (data-parallel gradient
// reductions and ZeRO's collectives, pipeline sends) and each stage's
// memory walked through the schedule's order. A planner produces the
// workload from what it knows of the model (GraphPlan: the graph's
// residual blocks priced op by op); the scoring is shared.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_COST_MODEL_STAGEWORKLOAD_H
#define CLEAVE_COST_MODEL_STAGEWORKLOAD_H

#include "cleave/cost_model/Simulator.h"
#include "cleave/cost_model/TransformerPlan.h"

#include "absl/status/statusor.h"

#include <cstdint>
#include <vector>

namespace cleave::cost {

/// One pipeline chunk's work for one microbatch on one device.
struct ChunkWorkload {
  /// Layers or residual blocks in it (ZeRO's window spans one of them).
  int64_t blocks = 0;
  /// Its passes, with the recomputed forward in the backward.
  double forwardSeconds = 0, backwardSeconds = 0;
  /// The weight-gradient products of the backward pass, which zero-bubble
  /// schedules defer (W), and the bytes they read until they run.
  double weightGradSeconds = 0, weightGradBytes = 0;
  /// Its trainable parameters: count, bytes and tensors.
  double params = 0, paramBytes = 0, paramTensors = 0;
  /// What its forward keeps for its backward (with recomputation, what
  /// the recomputing blocks keep), and the graph inputs it keeps.
  double activationBytes = 0, inputBytes = 0;
  /// The activation received at its first cut and sent at its last (0 at
  /// the ends of the model).
  double inBytes = 0, outBytes = 0;
  /// Largest piece: intermediate, parameters of a piece (ZeRO-3 gathers
  /// them where it runs) and a single parameter.
  double largestIntermediate = 0, largestParams = 0, largestParam = 0;
  /// A recomputing block's forward working set (one block at a time) and
  /// the recomputed FLOPs.
  double recomputedWork = 0, recomputedFlops = 0;
};

/// A plan's chunks, in model order: chunk c runs on stage c % pp.
struct StageWorkload {
  std::vector<ChunkWorkload> chunks;
  /// Microbatches each replica runs a step.
  int64_t microbatches = 1;
  /// The model's forward and backward FLOPs per microbatch of a replica.
  double trainingFlops = 0;
  /// Optimizer states per parameter (AdamW 2, SGD with momentum 1).
  double optimizerStates = 0;
};

/// Scores `plan` (any pp, one stage included; its chunks the workload's)
/// on `cluster`: the
/// simulated step, bubble and throughput, and each stage's memory, which
/// must fit (ResourceExhausted names the stage that does not). Stage s
/// recomputes as `plan` says (PlanPrediction's layers per chunk are the
/// chunks' blocks). `graphOut` and `timelineOut` receive the simulation.
absl::StatusOr<PlanPrediction>
scoreStages(const StageWorkload &work, const Cluster &cluster,
            const ParallelConfig &plan, const Profile *profile,
            TaskGraph *graphOut = nullptr, Timeline *timelineOut = nullptr);

/// The backward pass's working set beside the stash: an op's output
/// gradient, its input gradient and a temporary of the largest
/// intermediate's size, or a parameter's gradient computed in a temporary
/// before it is accumulated (what dominates a stage of few, wide layers:
/// a Wide ResNet's last block holds 36 MiB 3x3 convolution weights beside
/// 0.8 MiB activations).
double workspaceBytes(double largestIntermediate, double largestParam);

/// ZeRO-2/3's collectives beside a pass (collectivesBesidePass; the
/// lowering keeps a window of them in flight): `hidden` is the share they
/// run beside it (1 where the cluster's collectives overlap compute).
double besidePass(double pass, double comm, int64_t blocks, double hidden);

/// The share of the backward pass's ZeRO-2/3 window that runs beside it:
/// all where the cluster's collectives overlap compute, else what the
/// profile measured (collectiveWindowHidden) while overlap-grad keeps the
/// window, as the transformer cost model prices it.
double backwardWindowHidden(const Cluster &cluster, const Profile *profile,
                            const ParallelConfig &plan);

} // namespace cleave::cost

#endif // CLEAVE_COST_MODEL_STAGEWORKLOAD_H
