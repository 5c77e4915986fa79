//===- PipelineSchedule.h - Per-stage order of pipeline passes --*- C++ -*-===//
//
// The order in which each pipeline stage runs the forward (F), backward (B)
// and, for zero-bubble schedules, weight-gradient (W) passes of its
// microbatches. The simulator turns these orders into timelines; the memory
// model reads from them how many microbatches each stage holds at once.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_COST_MODEL_PIPELINESCHEDULE_H
#define CLEAVE_COST_MODEL_PIPELINESCHEDULE_H

#include "absl/status/statusor.h"

#include <string>
#include <vector>

namespace cleave::cost {

enum class ScheduleKind {
  /// All forwards, then all backwards (Huang et al. 2019).
  GPipe,
  /// One forward, one backward, after p - s - 1 warm-up forwards
  /// (PipeDream-Flush; Narayanan et al. 2021).
  OneFOneB,
  /// 1F1B over v model chunks per stage (Narayanan et al. 2021, Sec. 2.2).
  Interleaved,
  /// 1F1B with the backward split into B (input gradient) and W (weight
  /// gradient), W deferred into the cool-down bubble (Qi et al. 2024,
  /// ZB-H1).
  ZeroBubbleH1,
};

absl::StatusOr<ScheduleKind> parseSchedule(const std::string &name);
const char *scheduleName(ScheduleKind kind);

enum class PassKind { Forward, Backward, WeightGrad };

struct PipelineSlot {
  PassKind pass;
  int microbatch;
  /// Model chunk of the stage (0 unless interleaved).
  int chunk;
};

/// The order of stage `stage` of `stages` running `microbatches`
/// microbatches over `chunks` chunks per stage. Backward is one pass (input
/// and weight gradients) except in ZeroBubbleH1, where B and W are split.
/// Interleaving needs the microbatch count to be a multiple of the stage
/// count, as in Megatron-LM.
absl::StatusOr<std::vector<PipelineSlot>>
pipelineOrder(ScheduleKind kind, int stages, int stage, int microbatches,
              int chunks = 1);

/// The largest number of (microbatch, chunk) forward passes whose
/// activations a stage holds at once under `order`: a forward adds one, its
/// backward frees one.
int peakInFlight(const std::vector<PipelineSlot> &order);

/// With B and W split: the most backwards whose weight gradient is still to
/// run. Each keeps only the inputs of its layers' weight GEMMs (and the
/// output gradients), a fraction of the full activations, which the memory
/// model adds on top of peakInFlight.
int peakPendingWeightGrads(const std::vector<PipelineSlot> &order);

/// How a stage keeps its chunks' stashes when they differ in size (the
/// interleaved schedule over uneven chunks): chunks, in order of stash size,
/// form classes (runs of that order); each class has as many frames as its
/// chunks hold microbatches at once under `order`, each the size of its
/// largest stash. The lowering lays stashes out this way (a frame is reused
/// by any chunk of its class), the cost model prices the same bytes.
struct StashFrames {
  /// Per chunk, its class; per class, its frames and their size.
  std::vector<int> classOf;
  std::vector<int64_t> frames;
  std::vector<double> frameBytes;
  /// Over the classes, frames x their size.
  double bytes = 0;
};

/// The split into classes with the fewest bytes: every split for up to 16
/// chunks (2^(chunks-1)), else one class or two. `stashBytes` has one
/// entry per chunk; W passes in `order` are ignored (what a W reads is
/// held apart).
StashFrames planStashFrames(const std::vector<PipelineSlot> &order,
                            const std::vector<double> &stashBytes);

/// The same for pipelineOrder(kind, stages, stage, microbatches,
/// stashBytes.size()), with the order's peaks cached per thread (the
/// search prices one order for many plans).
absl::StatusOr<StashFrames>
planStashFrames(ScheduleKind kind, int stages, int stage, int microbatches,
                const std::vector<double> &stashBytes);

} // namespace cleave::cost

#endif // CLEAVE_COST_MODEL_PIPELINESCHEDULE_H
