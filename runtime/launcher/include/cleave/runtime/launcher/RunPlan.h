//===- RunPlan.h - `cleave run`: launch a plan, check it --------*- C++ -*-===//

#ifndef CLEAVE_RUNTIME_LAUNCHER_RUNPLAN_H
#define CLEAVE_RUNTIME_LAUNCHER_RUNPLAN_H

#include "cleave/runtime/plan/plan.pb.h"

#include "absl/status/statusor.h"

#include <functional>
#include <vector>
#include <string>

namespace cleave::launcher {

struct RunRequest {
  std::string planPath;
  std::string argv0;
  int64_t steps = 3;
  std::string dataPath;
  std::string tracePath;
  double timeoutSeconds = 60;
  /// Where the plan trains: "cpu" or "cuda" (--check's reference always
  /// runs on the CPU backend).
  std::string backend = "cpu";
  /// Run fused instruction groups as one kernel (worker --no-fuse when
  /// off); --check's reference runs fused either way.
  bool fuse = true;
  /// Train the unpartitioned model on one rank alongside and compare.
  bool check = false;
  double tolerance = 1e-5;
  /// `NAME=FILE`: an input's values for the whole global batch.
  std::vector<std::string> inputs;
  /// Synthetic masks are right-padded samples (the worker's --masks).
  bool paddedMasks = false;
  /// `I=FILE`: the expected values of output I (an inference plan's
  /// result I) for the whole global batch, raw fp32; compared within
  /// `tolerance`.
  std::vector<std::string> expectedOutputs;
  /// Plans of as many ranks to run in the same launch, one step of each
  /// in turn (cleave-worker --interleave); CPU only, no check or outputs.
  std::vector<std::string> interleave;
  /// Checkpoints (cleave-worker --save ...): the directory, every K steps
  /// (0: after the last only), how many to keep (0: all), written on the
  /// training thread instead of in the background.
  std::string saveDir;
  int64_t saveEvery = 0;
  int64_t keep = 0;
  bool saveSync = false;
  /// Continue from this checkpoint (a save directory or a step directory)
  /// for `steps` more steps.
  std::string resumePath;
  /// Start from these whole weights (safetensors).
  std::string initFrom;
  /// When the job fails (a rank died, the watchdog stopped a hung one),
  /// start it again from the last complete checkpoint in `saveDir`, up to
  /// this many times, until the steps asked for are done.
  int maxRestarts = 0;
  /// Fault injection for tests (cleave-worker --fault ...), on the first
  /// launch only: a restarted job runs clean.
  std::string fault;
  int faultRank = -1;
  int64_t faultStep = 1;
  /// `cleave generate`: the worker's generation flags (--generate PROMPTS
  /// and the sampling settings, tools/cleave-worker/Generate.h); the plan
  /// must be a generation plan, and no steps, checks or saves apply.
  std::vector<std::string> generateArgs;
  /// Builds the one-rank reference plan of `plan`'s model (needs the
  /// compiler); used by --check.
  std::function<absl::StatusOr<plan::Plan>(const plan::Plan &)> reference;
};

/// Runs the plan's ranks on this machine through mpirun; with `check`,
/// compares the loss of every step and the final parameters with the
/// reference. Returns the exit code (0, 1: run failed or diverged, 2: bad
/// input).
int runPlan(const RunRequest &request);

/// A time left for a progress line: "42 s", "3:07", "1:02:03".
std::string formatEta(double seconds);

} // namespace cleave::launcher

#endif // CLEAVE_RUNTIME_LAUNCHER_RUNPLAN_H
