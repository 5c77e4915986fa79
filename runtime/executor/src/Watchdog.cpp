//===- Watchdog.cpp - End the job when an instruction hangs ---------------===//
//
// A peer that dies usually makes mpirun end the job, but a peer that hangs
// (or a collective that the plan mismatched across ranks) leaves the others
// waiting forever in MPI. The watchdog turns that into an error naming the
// instruction.
//
//===----------------------------------------------------------------------===//

#include "cleave/runtime/executor/Executor.h"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

#include <unistd.h>

namespace cleave::executor {

namespace {

int64_t steadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// What the rank is doing, in words: the instruction (op, location), the
/// end-of-step work, or a watched phase.
std::string describe(const Executor &executor) {
  const Progress &progress = executor.progress();
  const plan::Program &program = executor.program();
  if (const char *phase = progress.phase.load())
    return phase;
  int32_t s = progress.segment.load(), i = progress.instruction.load();
  char text[512];
  if (s >= 0 && s < program.segments_size() && i >= 0 &&
      i < program.segments(s).instructions_size()) {
    const plan::Instruction &inst = program.segments(s).instructions(i);
    std::snprintf(text, sizeof(text),
                  "on program %d segment %d instruction %d (%s, %s)",
                  program.id(), s, i, inst.op().c_str(),
                  inst.location().empty() ? "unknown location"
                                          : inst.location().c_str());
  } else {
    std::snprintf(text, sizeof(text), "on program %d %s", program.id(),
                  i == -2   ? "completing the step's pipeline sends"
                  : i == -3 ? "completing the last step's parameter gathers"
                            : "reducing the step's loss");
  }
  return text;
}

/// What a heartbeat says and since when (wall-clock ms) it has said it.
struct Beat {
  std::string where;
  int64_t sinceMs = 0;
};

/// Rewrites `path` with one line, atomically (a reader never sees half):
/// what the rank is doing and since when, or "done" once its watchdog
/// ends.
void writeHeartbeat(const std::string &path, const Executor &executor,
                    Beat &last, bool done = false) {
  int64_t ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count();
  std::string where = done ? std::string("done")
                      : executor.progress().startedNs.load()
                          ? describe(executor)
                          : std::string("between instructions");
  if (where != last.where || last.sinceMs == 0)
    last = {where, ms};
  std::string line = "pid=" + std::to_string(getpid()) +
                     " time_ms=" + std::to_string(ms) +
                     " since_ms=" + std::to_string(last.sinceMs) +
                     " where=" + where + "\n";
  std::string tmp = path + ".tmp";
  if (FILE *f = std::fopen(tmp.c_str(), "w")) {
    std::fputs(line.c_str(), f);
    std::fclose(f);
    std::rename(tmp.c_str(), path.c_str());
  }
}

} // namespace

struct Watchdog::State {
  std::mutex mutex;
  std::condition_variable wake;
  bool stop = false;
  std::thread thread;
  const Executor *executor = nullptr;
  std::string heartbeatPath;
  Beat last;
};

Watchdog::Watchdog(const Executor &executor, double timeoutSeconds,
                   std::function<void()> onTimeout, std::string heartbeatPath)
    : state_(std::make_unique<State>()) {
  State *state = state_.get();
  state->executor = &executor;
  state->heartbeatPath = heartbeatPath;
  state->thread = std::thread([state, &executor, timeoutSeconds,
                               onTimeout = std::move(onTimeout),
                               heartbeatPath = std::move(heartbeatPath)] {
    auto poll = std::chrono::milliseconds(
        std::max<int64_t>(10, std::min<int64_t>(500, timeoutSeconds * 100)));
    std::unique_lock<std::mutex> lock(state->mutex);
    // The first beat at once: a rank that dies early has one.
    if (!heartbeatPath.empty())
      writeHeartbeat(heartbeatPath, executor, state->last);
    while (!state->wake.wait_for(lock, poll, [state] { return state->stop; })) {
      if (!heartbeatPath.empty())
        writeHeartbeat(heartbeatPath, executor, state->last);
      int64_t started = executor.progress().startedNs.load();
      if (started == 0 || (steadyNs() - started) * 1e-9 < timeoutSeconds)
        continue;
      std::string where = describe(executor);
      std::fprintf(stderr, "rank %d: timed out %s after %.0f s\n",
                   executor.rank(), where.c_str(), timeoutSeconds);
      std::fflush(stderr);
      onTimeout();
      return;
    }
  });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->stop = true;
  }
  state_->wake.notify_all();
  state_->thread.join();
  // A rank that finished is not one that stopped (JobMonitor).
  if (!state_->heartbeatPath.empty())
    writeHeartbeat(state_->heartbeatPath, *state_->executor, state_->last,
                   /*done=*/true);
}

WatchedPhase::WatchedPhase(Executor &executor, const char *what)
    : progress_(executor.progress()) {
  progress_.phase = what;
  progress_.startedNs = steadyNs();
}

WatchedPhase::~WatchedPhase() {
  progress_.startedNs = 0;
  progress_.phase = nullptr;
}

} // namespace cleave::executor
