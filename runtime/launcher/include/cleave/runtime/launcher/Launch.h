//===- Launch.h - Start a plan's ranks under mpirun -------------*- C++ -*-===//
//
// `cleave run` (and the tests) start one cleave-worker per rank of a plan
// with Open MPI's mpirun on this machine:
//
//   mpirun -n N [--allow-run-as-root] [--oversubscribe] --bind-to none
//          --mca mpi_yield_when_idle 1 cleave-worker PLAN ARGS...
//
// --allow-run-as-root only when running as root (CI containers);
// --oversubscribe lets N exceed the cores (slow, not wrong); a rank waiting
// in MPI yields its core instead of spinning, which matters when ranks
// share cores.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_LAUNCHER_LAUNCH_H
#define CLEAVE_RUNTIME_LAUNCHER_LAUNCH_H

#include "absl/status/statusor.h"

#include <functional>
#include <string>
#include <vector>

namespace cleave::launcher {

struct LaunchOptions {
  std::string mpirun = "mpirun";
  /// Path of cleave-worker (see defaultWorkerPath).
  std::string worker;
  int ranks = 1;
  /// The plan path and worker flags (--steps, --data, --trace, ...).
  std::vector<std::string> workerArgs;
  /// NAME=VALUE settings of every rank's environment (mpirun -x).
  std::vector<std::string> environment;
  bool oversubscribe = true;
  /// The whole job is ended after this long.
  double timeoutSeconds = 24 * 3600;
  /// Each line the ranks print (stdout and stderr together); null: copied
  /// to this process's stdout.
  std::function<void(const std::string &)> onLine;
  /// Asked twice a second while the job runs; true ends it (JobMonitor).
  std::function<bool()> shouldStop;
};

struct LaunchResult {
  /// mpirun's exit status (128 + signal when killed).
  int exitStatus = 0;
  bool timedOut = false;
  /// Ended because shouldStop said so.
  bool stopped = false;
  /// The last lines of output, for messages.
  std::vector<std::string> lastLines;
};

/// The mpirun command line `launch` runs.
std::vector<std::string> launchCommand(const LaunchOptions &options);

/// Runs the job to completion. Fails only if mpirun cannot be started.
absl::StatusOr<LaunchResult> launch(const LaunchOptions &options);

/// cleave-worker beside the executable `argv0` names (build trees and
/// installs put the tools in one directory), else "cleave-worker" on PATH.
std::string defaultWorkerPath(const std::string &argv0);

} // namespace cleave::launcher

#endif // CLEAVE_RUNTIME_LAUNCHER_LAUNCH_H
