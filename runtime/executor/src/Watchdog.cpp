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
#include <thread>

namespace cleave::executor {

struct Watchdog::State {
  std::mutex mutex;
  std::condition_variable wake;
  bool stop = false;
  std::thread thread;
};

Watchdog::Watchdog(const Executor &executor, double timeoutSeconds,
                   std::function<void()> onTimeout)
    : state_(std::make_unique<State>()) {
  State *state = state_.get();
  state->thread = std::thread([state, &executor, timeoutSeconds,
                               onTimeout = std::move(onTimeout)] {
    auto poll = std::chrono::milliseconds(
        std::max<int64_t>(10, std::min<int64_t>(500, timeoutSeconds * 100)));
    std::unique_lock<std::mutex> lock(state->mutex);
    while (!state->wake.wait_for(lock, poll, [state] { return state->stop; })) {
      const Progress &progress = executor.progress();
      int64_t started = progress.startedNs.load();
      if (started == 0)
        continue;
      int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::steady_clock::now().time_since_epoch())
                        .count();
      if ((now - started) * 1e-9 < timeoutSeconds)
        continue;
      const plan::Program &program = executor.program();
      int32_t s = progress.segment.load(), i = progress.instruction.load();
      if (s >= 0 && s < program.segments_size() && i >= 0 &&
          i < program.segments(s).instructions_size()) {
        const plan::Instruction &inst = program.segments(s).instructions(i);
        std::fprintf(stderr,
                     "rank %d: timed out on program %d segment %d instruction "
                     "%d (%s, %s) after %.0f s\n",
                     executor.rank(), program.id(), s, i, inst.op().c_str(),
                     inst.location().empty() ? "unknown location"
                                             : inst.location().c_str(),
                     timeoutSeconds);
      } else {
        std::fprintf(stderr,
                     "rank %d: timed out on program %d %s after %.0f s\n",
                     executor.rank(), program.id(),
                     i == -2   ? "completing the step's pipeline sends"
                     : i == -3 ? "completing the last step's parameter "
                                 "gathers"
                               : "reducing the step's loss",
                     timeoutSeconds);
      }
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
}

} // namespace cleave::executor
