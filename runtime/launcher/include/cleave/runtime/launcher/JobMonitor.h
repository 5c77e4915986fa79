//===- JobMonitor.h - Watch a job's ranks and say what went wrong -*- C++ -*-===//
//
// A rank's own watchdog times out an instruction that hangs, but a rank
// that is stopped as a whole (SIGSTOP, a debugger, a frozen node) cannot
// speak: its peers time out waiting on it and name themselves. The
// launcher therefore watches too. Each worker's watchdog thread rewrites a
// heartbeat file a few times a second (Watchdog's `heartbeatPath`); the
// monitor reads them while the job runs, and a rank whose heartbeat has
// stopped for the job's --timeout while its process is still there is
// ended (SIGKILL), so the job fails within the timeout wherever the rank
// stopped: inside a collective, a checkpoint write, between steps.
//
// What reaches the user is cleave's account, not Open MPI's: the help
// blocks Open MPI prints around an abort and its log lines go to a log
// file whose name the error gives; a rank mpirun saw die is named with
// its signal.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_LAUNCHER_JOBMONITOR_H
#define CLEAVE_RUNTIME_LAUNCHER_JOBMONITOR_H

#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace cleave::launcher {

/// One rank's heartbeat file ("pid=P time_ms=T since_ms=S where=TEXT").
struct Heartbeat {
  int rank = -1;
  int pid = 0;
  /// Milliseconds since the epoch of the last beat, and of the first that
  /// said `where`.
  int64_t timeMs = 0, sinceMs = 0;
  std::string where;
  bool done = false;
};

/// The heartbeat files in `dir` ("rank-<N>"), by rank.
std::map<int, Heartbeat> readHeartbeats(const std::string &dir);

/// The state letter /proc gives process `pid` (R, S, D, T, t, Z), or 0
/// when there is no such process.
char processState(int pid);

/// This machine's processes whose command line contains `marker`, by the
/// rank Open MPI gave them (OMPI_COMM_WORLD_RANK in their environment).
std::map<int, int> rankProcesses(const std::string &marker);

/// Watches one job: sorts its output lines, reads its heartbeats.
class JobMonitor {
public:
  /// `heartbeatDir` holds the ranks' files; `logPath` receives every line
  /// the job prints; `timeoutSeconds` is the job's --timeout.
  JobMonitor(std::string heartbeatDir, std::string logPath,
             double timeoutSeconds, int ranks);

  /// Whether `line` is for the user (cleave's own lines) rather than
  /// Open MPI's (logged only). Also notes the ranks mpirun saw die.
  bool forUser(const std::string &line);

  /// Called while the job runs: ends (SIGKILL) a rank whose heartbeat has
  /// stopped for the timeout while its process lives, and remembers why.
  /// Returns true when it could not end it (the caller then ends the job).
  bool check();

  /// After a failed job: one sentence per rank that stopped or died, for
  /// the error; empty when none is known. A rank the monitor did not end
  /// but whose last heartbeat is well before every other rank's (the
  /// others' watchdogs ended the job first) is named from its heartbeat.
  std::vector<std::string> findings() const;

  const std::string &logPath() const { return logPath_; }

private:
  std::string heartbeatDir_, logPath_;
  double timeoutSeconds_;
  int ranks_;
  std::ofstream log_;
  /// Ranks without a heartbeat yet that were seen stopped, since when (ms).
  std::map<int, int64_t> stoppedSince_;
  bool inHelpBlock_ = false;
  /// Ranks seen stopped (SIGSTOP, a debugger) while the job ran, before
  /// the timeout let check() end them: first and last seen so (ms), and
  /// the heartbeat they had. The others' watchdogs may end the job first
  /// (they were already waiting on that rank when it stopped), and
  /// mpirun's teardown continues a stopped rank (SIGCONT before SIGTERM)
  /// before it ends: one seen stopped for a second or more is kept.
  struct SeenStopped {
    int64_t firstMs = 0, lastMs = 0;
    Heartbeat beat;
  };
  std::map<int, SeenStopped> seenStopped_;
  /// Ranks ended by check(), with what they were doing.
  std::map<int, std::string> stopped_;
  /// "rank N ... signal S (NAME)" from mpirun's notices.
  std::vector<std::string> deaths_;
};

} // namespace cleave::launcher

#endif // CLEAVE_RUNTIME_LAUNCHER_JOBMONITOR_H
