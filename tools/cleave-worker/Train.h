//===- Train.h - The training steps of one rank -----------------*- C++ -*-===//

#ifndef CLEAVE_TOOLS_CLEAVE_WORKER_TRAIN_H
#define CLEAVE_TOOLS_CLEAVE_WORKER_TRAIN_H

#include "Checkpointing.h"
#include "Options.h"

#include "cleave/runtime/comm/Communicator.h"
#include "cleave/runtime/executor/Executor.h"
#include "cleave/runtime/plan/plan.pb.h"

#include <cstdint>
#include <string>

namespace cleave::worker {

struct TrainingRun {
  const Options &options;
  const plan::Plan &plan;
  executor::Executor &executor;
  /// The worker's own host-side messages (the trace's time origin and
  /// barrier); the executor has its own for the collectives.
  comm::Communicator &comm;
  /// Checkpoints' agreement between the ranks.
  MpiCoordinator &coordinator;
  /// The first step to run (after a resumed checkpoint's).
  int64_t firstStep = 1;
  /// The weights the run started from, recorded in its checkpoints.
  std::string initFrom;
  /// False for an inference plan: no loss, samples per second.
  bool hasLoss = true;
};

/// Runs --steps steps, with the faults the tests inject and the
/// checkpoints --save asks for; rank 0 prints a line per step:
///
///   step 1  loss 4.8523  time 12.3 ms  tokens/s 12345  TFLOP/s 0.05
///
/// (TFLOP/s per device; with loss scaling `loss scale S`, and `skipped
/// (gradients overflowed)` for a step that applied no update), or for an
/// inference plan `step 1  time 3.2 ms  samples/s 2500  TFLOP/s 0.01`.
/// Then the dumps and the trace. Any error ends the job (fail).
void train(const TrainingRun &run);

} // namespace cleave::worker

#endif // CLEAVE_TOOLS_CLEAVE_WORKER_TRAIN_H
