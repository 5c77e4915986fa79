//===- JobMonitorTest.cpp - The launcher's account of a failed job --------===//
//
// Lines as Open MPI 4 prints them around an MPI_Abort (copied from a job
// log), heartbeat files as the watchdog writes them.
//
//===----------------------------------------------------------------------===//

#include "cleave/runtime/launcher/JobMonitor.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <csignal>
#include <sys/wait.h>
#include <unistd.h>

using namespace cleave::launcher;

namespace {

std::string scratch(const std::string &name) {
  std::string dir = ::testing::TempDir() + "/cleave-jobmonitor-" + name +
                    "-" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

int64_t nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void beat(const std::string &dir, int rank, int pid, int64_t ms,
          const std::string &where) {
  std::ofstream(dir + "/rank-" + std::to_string(rank))
      << "pid=" << pid << " time_ms=" << ms << " since_ms=" << ms
      << " where=" << where << "\n";
}

/// Stops `pid` and waits until /proc shows it stopped.
void stopAndWait(pid_t pid) {
  ASSERT_EQ(kill(pid, SIGSTOP), 0);
  for (int i = 0; i < 200 && processState(pid) != 'T'; ++i)
    usleep(10000);
}

/// Ends `pid` (SIGKILL) and reaps it.
void end(pid_t pid) {
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

} // namespace

// Open MPI's help blocks and log lines go to the log only; cleave's lines
// reach the user even when they interleave with a help block; a rank
// mpirun saw die is named with its signal.
TEST(JobMonitor, SortsOpenMpiFromCleave) {
  std::string dir = scratch("lines");
  JobMonitor monitor("", dir + "/job.log", 5, 4);
  const std::string dashes(74, '-');
  struct Line {
    std::string text;
    bool forUser;
  } lines[] = {
      {"step 15  loss 6.9533  time 247.1 ms  tokens/s 8288", true},
      {dashes, false},
      {"MPI_ABORT was invoked on rank 3 in communicator MPI_COMM_WORLD", false},
      {"with errorcode 1.", false},
      {"rank 2: timed out on program 0 segment 0 instruction 104 "
       "(comm.reduce_scatter, loc(\"h.1.mlp.proj\")) after 5 s",
       true},
      {"NOTE: invoking MPI_ABORT causes Open MPI to kill all MPI processes.",
       false},
      {dashes, false},
      {"[vm:14921] 1 more process has sent help message help-mpi-api.txt / "
       "mpi-abort",
       false},
      {dashes, false},
      {"mpirun noticed that process rank 1 with PID 0 on node vm exited on "
       "signal 9 (Killed).",
       false},
      {dashes, false},
      {"Primary job  terminated normally, but 1 process returned", false},
      {"checkpoint: step 12 saved to ck/step-00000012: 11.3 MB", true},
  };
  for (const Line &line : lines)
    EXPECT_EQ(monitor.forUser(line.text), line.forUser) << line.text;
  std::vector<std::string> found = monitor.findings();
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0], "rank 1 on vm died of signal 9 (Killed)");
  // Everything is in the log.
  std::ifstream log(dir + "/job.log");
  int count = 0;
  for (std::string text; std::getline(log, text);)
    ++count;
  EXPECT_EQ(count, int(std::size(lines)));
  std::filesystem::remove_all(dir);
}

// A rank whose heartbeat stopped well before the others' is the one they
// waited on; finished ranks ("done") and fresh ones are not named.
TEST(JobMonitor, NamesTheRankWhoseHeartbeatStopped) {
  std::string dir = scratch("beats");
  int64_t now = nowMs();
  beat(dir, 0, 111, now, "on program 0 segment 2 instruction 0 (comm.wait, x)");
  beat(dir, 1, 112, now - 5200,
       "on program 0 segment 1 instruction 276 (comm.all_gather, "
       "loc(\"h.1.attn.q_proj\"))");
  beat(dir, 2, 113, now - 100, "between instructions");
  beat(dir, 3, 114, now - 9000, "done");
  std::map<int, Heartbeat> beats = readHeartbeats(dir);
  ASSERT_EQ(beats.size(), 4u);
  EXPECT_EQ(beats[1].pid, 112);
  EXPECT_TRUE(beats[3].done);
  JobMonitor monitor(dir, dir + "/job.log", 5, 4);
  std::vector<std::string> found = monitor.findings();
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].rfind("rank 1 stopped responding on program 0 segment 1 "
                           "instruction 276 (comm.all_gather",
                           0),
            0u)
      << found[0];
  std::filesystem::remove_all(dir);
}

// This process: running; a pid that does not exist: none.
TEST(JobMonitor, ReadsProcessStates) {
  char self = processState(getpid());
  EXPECT_TRUE(self == 'R' || self == 'S') << self;
  EXPECT_EQ(processState(0), 0);
  EXPECT_EQ(processState(1 << 30), 0);
}

// A rank seen stopped before its heartbeat is old enough for check() to
// end it is still named when the others' watchdogs end the job first
// (they were already waiting on it when it stopped).
TEST(JobMonitor, NamesARankSeenStoppedBeforeTheTimeout) {
  std::string dir = scratch("seen");
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    for (;;)
      pause();
  }
  stopAndWait(child);
  int64_t now = nowMs();
  beat(dir, 0, getpid(), now, "on program 0 segment 2 instruction 0 (comm.wait, x)");
  beat(dir, 1, child, now - 300,
       "on program 0 segment 1 instruction 43 (comm.all_gather, "
       "loc(\"h.3.mlp.fc\"))");
  JobMonitor monitor(dir, dir + "/job.log", 5, 2);
  EXPECT_FALSE(monitor.check()); // not silent for 5 s: not ended
  EXPECT_EQ(processState(child), 'T');
  end(child);
  std::vector<std::string> found = monitor.findings();
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0], "rank 1 stopped responding on program 0 segment 1 "
                      "instruction 43 (comm.all_gather, loc(\"h.3.mlp.fc\")): "
                      "its process was stopped (SIGSTOP or a debugger); the "
                      "other ranks timed out waiting for it");
  std::filesystem::remove_all(dir);
}

// A rank stopped while starting, before any rank wrote a heartbeat (the
// ranks agree on the trace's time origin first): found by its process,
// and named when the others' own timeouts end the job before the
// monitor's does (a stress trial at --timeout 3 saw exactly this).
TEST(JobMonitor, NamesARankStoppedWhileStarting) {
  std::string dir = scratch("starting");
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // A rank's process: the job's folder on its command line, its rank
    // in Open MPI's variable.
    char rank[] = "OMPI_COMM_WORLD_RANK=1";
    char *env[] = {rank, nullptr};
    execle("/bin/sh", "sh", "-c", "while :; do sleep 1; done", dir.c_str(),
           static_cast<char *>(nullptr), env);
    _exit(127);
  }
  // Until its command line shows the folder (exec done), then stopped.
  for (int i = 0; i < 200 && !rankProcesses(dir).count(1); ++i)
    usleep(10000);
  ASSERT_EQ(rankProcesses(dir).count(1), 1u);
  stopAndWait(child);
  JobMonitor monitor(dir, dir + "/job.log", 30, 2);
  EXPECT_FALSE(monitor.check()); // stopped for less than the timeout
  end(child);
  std::vector<std::string> found = monitor.findings();
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0], "rank 1 stopped responding while starting (before its "
                      "first instruction): its process was stopped (SIGSTOP "
                      "or a debugger); the other ranks timed out waiting for "
                      "it");
  std::filesystem::remove_all(dir);
}

// mpirun's teardown continues a stopped rank (SIGCONT before SIGTERM)
// just before the job ends: a rank seen stopped for a second or more is
// still named; one stopped for a moment and continued is not.
TEST(JobMonitor, KeepsARankStoppedUntilTheTeardownContinuedIt) {
  std::string dir = scratch("continued");
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    for (;;)
      pause();
  }
  auto stop = [&] {
    ASSERT_EQ(kill(child, SIGSTOP), 0);
    for (int i = 0; i < 200 && processState(child) != 'T'; ++i)
      usleep(10000);
  };
  auto resume = [&] {
    ASSERT_EQ(kill(child, SIGCONT), 0);
    for (int i = 0; i < 200 && processState(child) == 'T'; ++i)
      usleep(10000);
  };
  JobMonitor monitor(dir, dir + "/job.log", 30, 1);
  auto fresh = [&] {
    beat(dir, 0, child, nowMs(), "on program 0 segment 0 instruction 7 (x)");
  };
  // A moment's stop, continued: forgotten.
  fresh();
  stop();
  EXPECT_FALSE(monitor.check());
  resume();
  EXPECT_FALSE(monitor.check());
  EXPECT_TRUE(monitor.findings().empty());
  // Stopped for over a second, then continued by the teardown: named.
  stop();
  EXPECT_FALSE(monitor.check());
  usleep(1100 * 1000);
  EXPECT_FALSE(monitor.check());
  resume();
  fresh();
  EXPECT_FALSE(monitor.check());
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  std::vector<std::string> found = monitor.findings();
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].rfind("rank 0 stopped responding on program 0 segment 0 "
                           "instruction 7 (x): its process was stopped",
                           0),
            0u)
      << found[0];
  std::filesystem::remove_all(dir);
}
