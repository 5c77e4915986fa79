//===- PipelineSimulation.h - Task graphs of pipelined training steps -*- C++ -*-===//
//
// Expands a pipeline schedule over per-stage costs into the simulator's task
// graph: compute passes on each stage's compute stream, activation and
// gradient transfers on the send stream, data-parallel gradient reduction
// in buckets on its own stream (overlapping the last microbatch's backward,
// as Megatron-LM and PyTorch DDP do), then the optimizer step. One rank
// stands for each stage: the ranks of a stage's tensor- and data-parallel
// groups run the same timeline.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_COST_MODEL_PIPELINESIMULATION_H
#define CLEAVE_COST_MODEL_PIPELINESIMULATION_H

#include "cleave/cost_model/PipelineSchedule.h"
#include "cleave/cost_model/Simulator.h"

namespace cleave::cost {

/// Costs of one model chunk on one stage, for one microbatch.
struct ChunkCosts {
  double forward = 0;
  /// The whole backward (input and weight gradients), recomputation
  /// included.
  double backward = 0;
  /// The weight-gradient share of `backward`, split off as W by zero-bubble
  /// schedules.
  double weightGrad = 0;
  /// Model FLOPs of forward and backward (recomputation excluded), and the
  /// FLOPs recomputation adds.
  double forwardFlops = 0, backwardFlops = 0, recomputeFlops = 0;
  /// Sending this chunk's output activations (forward) or input gradients
  /// (backward) to the neighbouring stage.
  double sendForward = 0, sendBackward = 0;
  /// Data-parallel gradient reduction of the chunk's parameters, split in
  /// buckets that start as the last microbatch's backward produces them.
  double gradReduce = 0;
  int gradBuckets = 1;
  /// ZeRO-1/2 with the gather of the updated blocks carried into the next
  /// step: that gather of the chunk's parameters, which starts the step.
  /// Beside compute (on the data-parallel stream) the chunk's first
  /// forward pass needs it before its last of `carriedLayers` layers (the
  /// lowering waits for each parameter before its first reader); else it
  /// runs on the compute stream before that pass (in a pipeline's
  /// warm-up, in time the stage would wait anyway).
  double carriedGather = 0;
  int carriedLayers = 1;
  bool carriedBeside = true;
};

struct StageCosts {
  std::vector<ChunkCosts> chunks;
  double optimizer = 0;
  /// ZeRO-1 and 2: gathering the updated parameter shards over the
  /// data-parallel replicas. It needs the optimizer's update, so it follows
  /// the optimizer step and nothing of the step hides it (unless carried
  /// into the next step: ChunkCosts::carriedGather instead).
  double paramGather = 0;
};

struct PipelineSpec {
  ScheduleKind schedule = ScheduleKind::OneFOneB;
  int microbatches = 1;
  /// Transfers between stages on their own stream, overlapping compute; off
  /// models runtimes that block on them (Megatron-LM's synchronous p2p).
  bool overlapTransfers = true;
  /// One entry per stage, each with the same number of chunks.
  std::vector<StageCosts> stages;
};

/// Builds the task graph of one training step.
absl::StatusOr<TaskGraph> buildPipelineTasks(const PipelineSpec &spec);

} // namespace cleave::cost

#endif // CLEAVE_COST_MODEL_PIPELINESIMULATION_H
