//===- StageWorkload.h - Pipeline plans scored from their chunks' work -*- C++ -*-===//
//
// A plan's pipeline chunks described by their work (per microbatch, on one
// device of the stage: passes, parameters, what the forward keeps for the
// backward and what crosses the cuts), and the one scoring of such chunks:
// the simulated schedule with its collectives (data-parallel gradient
// reductions and ZeRO's collectives, pipeline sends) and each stage's
// memory. A planner produces the workload from what it knows of the
// model (GraphPlan: the graph's residual blocks priced op by op;
// scoreTransformerPlan: a transformer's layers priced from its shape);
// the scoring, with its rules for ZeRO, gradient reduction, optimizer
// and model-state memory, is this one.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_COST_MODEL_STAGEWORKLOAD_H
#define CLEAVE_COST_MODEL_STAGEWORKLOAD_H

#include "cleave/cost_model/Simulator.h"
#include "cleave/cost_model/TransformerPlan.h"

#include "absl/status/statusor.h"

#include <cstdint>
#include <limits>
#include <vector>

namespace cleave::cost {

/// One pipeline chunk's work for one microbatch on one device.
struct ChunkWorkload {
  /// Layers or residual blocks in it (ZeRO's window spans one of them).
  int64_t blocks = 0;
  /// The pieces its gradients come out of in turn (a transformer's
  /// layers; a graph's residual blocks and the stem or head it holds): the
  /// data-parallel reduction runs in one bucket per piece, up to 8, beside
  /// the last backward pass.
  int64_t gradientPieces = 0;
  /// Its passes, with the recomputed forward in the backward and the
  /// collectives inside them (tensor, context and expert parallel): what
  /// one device's compute stream runs.
  double forwardSeconds = 0, backwardSeconds = 0;
  /// The weight-gradient products of the backward pass, which zero-bubble
  /// schedules defer (W), and the bytes they read until they run.
  double weightGradSeconds = 0, weightGradBytes = 0;
  /// Model FLOPs of its forward and backward passes on the stage's replica
  /// (all its tensor-parallel devices; recomputation excluded), and those
  /// the recomputation adds.
  double forwardFlops = 0, backwardFlops = 0, recomputedFlops = 0;
  /// One device's trainable parameters (a count; their bytes follow from
  /// the plan's precision), and of them the experts' (replicated over
  /// dp / ep replicas, so ZeRO shards their states over that group).
  double params = 0, expertParams = 0;
  /// Its parameter tensors: ZeRO's lowering runs a collective per tensor
  /// (or per bucket, ParallelConfig::zeroBucketElements).
  double paramTensors = 0;
  /// What its forward keeps for its backward (with recomputation, what
  /// the recomputing blocks keep), and the graph inputs it keeps.
  double activationBytes = 0, inputBytes = 0;
  /// The activation received at its first cut and sent at its last (0 at
  /// the ends of the model).
  double inBytes = 0, outBytes = 0;
  /// Largest piece: intermediate, parameters of a piece (ZeRO-3 gathers
  /// them where it runs) and a single parameter, in bytes.
  double largestIntermediate = 0, largestParams = 0, largestParam = 0;
  /// A recomputing block's forward working set (one block at a time).
  double recomputedWork = 0;
  /// The collectives its passes run a step (tensor, context, expert
  /// parallel), counted for the report; the scoring adds the pipeline's
  /// sends and the data-parallel ones.
  CollectiveTally collectives;
};

/// A plan's chunks, in model order: chunk c runs on stage c % pp.
struct StageWorkload {
  std::vector<ChunkWorkload> chunks;
  /// Microbatches each replica runs a step.
  int64_t microbatches = 1;
  /// Optimizer states per parameter (AdamW 2, SGD with momentum 1).
  double optimizerStates = 0;
  /// Where the producer models a stage's activations itself (the
  /// transformer's analytic memory model, validated against Megatron-LM's
  /// formulas): per stage, its activations, communication buffers and
  /// workspace. Empty: each stage's stashes are walked through its
  /// schedule from the chunks' activation bytes.
  std::vector<MemoryBreakdown> stageMemory;
};

/// How scoreStages runs beyond the scoring itself.
struct ScoreOptions {
  /// A plan whose lower bound on the step exceeds this is not simulated:
  /// its step is that bound (a search's pruning).
  double simulateBelow = std::numeric_limits<double>::infinity();
  /// Core sharing: one factor per task of `scaledGraph`, multiplying each
  /// task's time before the simulation where the plan's task graph is the
  /// same.
  const std::vector<double> *taskScale = nullptr;
  const TaskGraph *scaledGraph = nullptr;
  /// Receive the simulated task graph and timeline.
  TaskGraph *graphOut = nullptr;
  Timeline *timelineOut = nullptr;
};

/// Scores `plan` (any pp, one stage included; its chunks the workload's)
/// on `cluster`: the data-parallel gradient reduction and ZeRO's
/// collectives over the plan's groups, the pipeline's sends, each stage's
/// optimizer step and memory (which must fit: ResourceExhausted names the
/// stage that does not), and the simulated step, bubble and throughput.
absl::StatusOr<PlanPrediction>
scoreStages(const StageWorkload &work, const Cluster &cluster,
            const ParallelConfig &plan, const Profile *profile,
            const ScoreOptions &options = {});

/// The backward pass's working set beside the stash: an op's output
/// gradient, its input gradient and a temporary of the largest
/// intermediate's size, or a parameter's gradient computed in a temporary
/// before it is accumulated (what dominates a stage of few, wide layers:
/// a Wide ResNet's last block holds 36 MiB 3x3 convolution weights beside
/// 0.8 MiB activations).
double workspaceBytes(double largestIntermediate, double largestParam);

} // namespace cleave::cost

#endif // CLEAVE_COST_MODEL_STAGEWORKLOAD_H
