//===- Subprocess.h - Run a program with a timeout --------------*- C++ -*-===//
//
// mpirun can hang (a rank that never reaches a collective, a launcher
// waiting on a network it cannot reach), and the profiler and the launcher
// must then fail with a message rather than wait forever. The child runs in its own
// process group so that a timeout can end it and everything it started.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_SUBPROCESS_SUBPROCESS_H
#define CLEAVE_RUNTIME_SUBPROCESS_SUBPROCESS_H

#include "absl/status/statusor.h"

#include <functional>
#include <string>
#include <vector>

namespace cleave::subprocess {

struct ProcessOutcome {
  /// The exit code, or 128 + the signal that ended it.
  int exitStatus = 0;
  bool timedOut = false;
  /// Ended because `shouldStop` said so.
  bool stopped = false;
  /// The last lines of stdout and stderr together, for error messages.
  std::vector<std::string> lastLines;
};

/// Runs argv[0] (looked up on PATH) with `extraEnvironment` ("NAME=value")
/// added to this process's environment, calling `onLine` with each line it
/// writes to stdout or stderr as it comes. After `timeoutSeconds` the
/// process group is sent SIGTERM, then SIGKILL; the same when
/// `shouldStop`, asked about twice a second, returns true (a monitor that
/// found a rank stopped). Fails only if the program cannot be started.
absl::StatusOr<ProcessOutcome>
runProcess(const std::vector<std::string> &argv,
           const std::vector<std::string> &extraEnvironment,
           double timeoutSeconds,
           const std::function<void(const std::string &)> &onLine,
           const std::function<bool()> &shouldStop = {});

/// A session directory of its own for one mpirun. Open MPI 4 keeps its
/// session files under `$TMPDIR/ompi.<host>.<uid>`, and two mpiruns started
/// at the same moment race to create that directory: the loser fails with
/// "A call to mkdir was unable to create the desired directory ... File
/// exists" (seen with tests running side by side). Each launch therefore
/// passes a fresh directory as `orte_tmpdir_base`, removed with whatever
/// Open MPI left in it when this object goes.
class MpiSessionDirectory {
public:
  MpiSessionDirectory();
  ~MpiSessionDirectory();
  MpiSessionDirectory(const MpiSessionDirectory &) = delete;
  MpiSessionDirectory &operator=(const MpiSessionDirectory &) = delete;

  /// "OMPI_MCA_orte_tmpdir_base=<dir>", or nothing where the directory
  /// could not be made (mpirun then uses its default).
  std::vector<std::string> environment() const;

private:
  std::string path;
};

} // namespace cleave::subprocess

#endif // CLEAVE_RUNTIME_SUBPROCESS_SUBPROCESS_H
