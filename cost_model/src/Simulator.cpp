//===- Simulator.cpp - Timelines of per-rank compute and comm streams -----===//

#include "cleave/cost_model/Simulator.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

#include <algorithm>
#include <deque>
#include <iomanip>
#include <map>

namespace cleave::cost {

const char *streamName(Stream stream) {
  switch (stream) {
  case Stream::Compute:
    return "compute";
  case Stream::PipelineSend:
    return "pipeline send";
  case Stream::PipelineRecv:
    return "pipeline recv";
  case Stream::DataParallelComm:
    return "data-parallel comm";
  }
  return "?";
}

int TaskGraph::add(Task task) {
  tasks_.push_back(std::move(task));
  return size() - 1;
}

std::vector<std::vector<Span>> busySpans(const TaskGraph &graph,
                                        const Timeline &tl) {
  std::vector<std::vector<Span>> spans(tl.numRanks);
  const std::vector<Task> &tasks = graph.tasks();
  for (size_t i = 0; i < tasks.size() && i < tl.end.size(); ++i)
    if (tl.end[i] > tl.start[i] && tasks[i].rank >= 0 &&
        tasks[i].rank < tl.numRanks)
      spans[tasks[i].rank].push_back({tl.start[i], tl.end[i]});
  for (std::vector<Span> &rank : spans) {
    std::sort(rank.begin(), rank.end(), [](const Span &a, const Span &b) {
      return a.start < b.start;
    });
    std::vector<Span> merged;
    for (const Span &span : rank) {
      if (!merged.empty() && span.start <= merged.back().end)
        merged.back().end = std::max(merged.back().end, span.end);
      else
        merged.push_back(span);
    }
    rank = std::move(merged);
  }
  return spans;
}

absl::StatusOr<Timeline> simulate(const TaskGraph &graph) {
  const std::vector<Task> &tasks = graph.tasks();
  int n = graph.size();
  // Predecessors: data dependencies plus the previous task of the same
  // stream, which makes each stream run in program order.
  std::vector<std::vector<int>> succs(n);
  std::vector<int> pending(n, 0);
  std::map<std::pair<int, int>, int> lastOnStream;
  int numRanks = 0;
  for (int i = 0; i < n; ++i) {
    const Task &t = tasks[i];
    numRanks = std::max(numRanks, t.rank + 1);
    for (int d : t.deps) {
      if (d < 0 || d >= n || d == i)
        return absl::InvalidArgumentError(
            absl::StrCat("task '", t.name, "' depends on invalid task ", d));
      succs[d].push_back(i);
      ++pending[i];
    }
    auto key = std::make_pair(t.rank, static_cast<int>(t.stream));
    auto it = lastOnStream.find(key);
    if (it != lastOnStream.end()) {
      succs[it->second].push_back(i);
      ++pending[i];
    }
    lastOnStream[key] = i;
  }

  Timeline tl;
  tl.start.assign(n, 0);
  tl.end.assign(n, 0);
  tl.numRanks = numRanks;
  std::deque<int> ready;
  for (int i = 0; i < n; ++i)
    if (!pending[i])
      ready.push_back(i);
  int done = 0;
  while (!ready.empty()) {
    int i = ready.front();
    ready.pop_front();
    tl.end[i] = tl.start[i] + tasks[i].seconds;
    tl.makespan = std::max(tl.makespan, tl.end[i]);
    ++done;
    for (int s : succs[i]) {
      tl.start[s] = std::max(tl.start[s], tl.end[i]);
      if (--pending[s] == 0)
        ready.push_back(s);
    }
  }
  if (done != n) {
    for (int i = 0; i < n; ++i)
      if (pending[i])
        return absl::FailedPreconditionError(absl::StrCat(
            "the schedule deadlocks: task '", tasks[i].name, "' on rank ",
            tasks[i].rank, " (", streamName(tasks[i].stream),
            ") waits on a task that can never run"));
  }

  tl.computeBusy.assign(numRanks, 0);
  std::vector<bool> computes(numRanks, false);
  for (int i = 0; i < n; ++i) {
    if (tasks[i].stream != Stream::Compute)
      continue;
    tl.computeBusy[tasks[i].rank] += tasks[i].seconds;
    computes[tasks[i].rank] = true;
  }
  double idle = 0;
  int counted = 0;
  for (int r = 0; r < numRanks; ++r) {
    if (!computes[r] || tl.makespan <= 0)
      continue;
    idle += 1.0 - tl.computeBusy[r] / tl.makespan;
    ++counted;
  }
  tl.bubbleFraction = counted ? idle / counted : 0;

  return tl;
}

static void writeJsonString(std::ostream &os, const std::string &s) {
  os << '"';
  for (char c : s) {
    if (c == '"' || c == '\\')
      os << '\\' << c;
    else if (static_cast<unsigned char>(c) < 0x20)
      os << ' ';
    else
      os << c;
  }
  os << '"';
}

void writeChromeTrace(const TaskGraph &graph, const Timeline &tl,
                      std::ostream &os) {
  const std::vector<Task> &tasks = graph.tasks();
  os << "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
  bool first = true;
  auto sep = [&] {
    if (!first)
      os << ",\n";
    first = false;
  };
  for (int r = 0; r < tl.numRanks; ++r) {
    sep();
    os << "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": " << r
       << ", \"args\": {\"name\": \"rank " << r << "\"}}";
    for (int s = 0; s < kNumStreams; ++s) {
      sep();
      os << "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": " << r
         << ", \"tid\": " << s << ", \"args\": {\"name\": \""
         << streamName(static_cast<Stream>(s)) << "\"}}";
    }
  }
  os << std::fixed << std::setprecision(3);
  for (int i = 0; i < graph.size(); ++i) {
    const Task &t = tasks[i];
    sep();
    os << "{\"ph\": \"X\", \"name\": ";
    writeJsonString(os, t.name);
    os << ", \"cat\": ";
    writeJsonString(os, t.category);
    os << ", \"pid\": " << t.rank << ", \"tid\": " << static_cast<int>(t.stream)
       << ", \"ts\": " << tl.start[i] * 1e6 << ", \"dur\": " << t.seconds * 1e6
       << ", \"args\": {\"stage\": " << t.stage
       << ", \"microbatch\": " << t.microbatch << ", \"chunk\": " << t.chunk
       << "}}";
  }
  os << "\n]}\n";
}

} // namespace cleave::cost
