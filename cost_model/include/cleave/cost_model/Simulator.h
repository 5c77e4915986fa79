//===- Simulator.h - Timelines of per-rank compute and comm streams -*- C++ -*-===//
//
// A plan becomes a task graph: every forward, backward and weight-gradient
// pass of every microbatch, every send/recv between pipeline stages, every
// gradient reduction and the optimizer step, each on one stream of one rank,
// with the data dependencies between them. Streams run their tasks in the
// order they were added (as CUDA streams and MPI progress do), so a task
// starts when its stream is free and its dependencies are done; different
// streams of a rank overlap, which is how gradient reduction hides behind the
// backward pass. The result is the exact timeline of that discrete-event
// model, its makespan, per-rank busy time and bubbles, and a Chrome trace.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_COST_MODEL_SIMULATOR_H
#define CLEAVE_COST_MODEL_SIMULATOR_H

#include "absl/status/statusor.h"

#include <ostream>
#include <string>
#include <vector>

namespace cleave::cost {

/// Streams of one rank. Compute runs the passes; the others overlap it.
enum class Stream : int {
  Compute = 0,
  PipelineSend = 1,
  PipelineRecv = 2,
  DataParallelComm = 3,
};
inline constexpr int kNumStreams = 4;
const char *streamName(Stream stream);

struct Task {
  std::string name;
  /// forward, backward, wgrad, send, recv, grad-reduce, optimizer, ...
  std::string category;
  int rank = 0;
  Stream stream = Stream::Compute;
  double seconds = 0;
  std::vector<int> deps;
  int stage = -1, microbatch = -1, chunk = -1;
  /// Model FLOPs the task performs (recomputation excluded), for achieved
  /// TFLOP/s; `hwFlops` includes recomputation.
  double flops = 0, hwFlops = 0;
};

class TaskGraph {
public:
  /// Adds a task; returns its id (its index).
  int add(Task task);
  const std::vector<Task> &tasks() const { return tasks_; }
  Task &operator[](int id) { return tasks_[id]; }
  int size() const { return static_cast<int>(tasks_.size()); }

private:
  std::vector<Task> tasks_;
};

struct Timeline {
  std::vector<double> start, end;
  double makespan = 0;
  int numRanks = 0;
  /// Per rank: seconds its compute stream was busy.
  std::vector<double> computeBusy;
  /// Mean over ranks of the share of the step their compute stream idles:
  /// (p - 1) / (m + p - 1) for 1F1B over uniform stages.
  double bubbleFraction = 0;
};

/// A stretch of time [start, end) in seconds.
struct Span {
  double start = 0, end = 0;
};

/// Simulates the graph. Fails (naming a task) when dependencies and stream
/// order deadlock, e.g. a recv ordered before the send it waits for.
absl::StatusOr<Timeline> simulate(const TaskGraph &graph);

/// Per rank of a simulated graph, the stretches in which it runs a task on
/// any stream, merged, in time order.
std::vector<std::vector<Span>> busySpans(const TaskGraph &graph,
                                         const Timeline &timeline);

/// Writes the timeline as Chrome trace JSON (chrome://tracing, Perfetto):
/// one process per rank, one thread per stream, times in microseconds.
void writeChromeTrace(const TaskGraph &graph, const Timeline &timeline,
                      std::ostream &os);

} // namespace cleave::cost

#endif // CLEAVE_COST_MODEL_SIMULATOR_H
