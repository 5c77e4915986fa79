//===- Trace.cpp - Chrome trace JSON of executed steps --------------------===//

#include "cleave/runtime/executor/Executor.h"

#include <iomanip>

namespace cleave::executor {

namespace {

void writeJsonString(std::ostream &os, const std::string &s) {
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

void separate(std::ostream &os, bool &first) {
  if (!first)
    os << ",\n";
  first = false;
}

const char *kThreadNames[] = {"segments", "compute", "comm"};

} // namespace

void writeChromeTraceHeader(std::ostream &os) {
  os << "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
}

void writeChromeTraceFooter(std::ostream &os) { os << "\n]}\n"; }

void writeChromeTraceRankNames(int rank, std::ostream &os, bool &first) {
  separate(os, first);
  os << "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": " << rank
     << ", \"args\": {\"name\": \"rank " << rank << "\"}}";
  for (int t = 0; t < 3; ++t) {
    separate(os, first);
    os << "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": " << rank
       << ", \"tid\": " << t << ", \"args\": {\"name\": \"" << kThreadNames[t]
       << "\"}}";
  }
}

void writeChromeTraceEvents(const std::vector<TraceEvent> &events, int rank,
                            double originUs, std::ostream &os, bool &first) {
  os << std::fixed << std::setprecision(3);
  for (const TraceEvent &e : events) {
    separate(os, first);
    os << "{\"ph\": \"X\", \"name\": ";
    writeJsonString(os, e.name);
    os << ", \"cat\": ";
    writeJsonString(os, e.category);
    os << ", \"pid\": " << rank << ", \"tid\": " << e.thread
       << ", \"ts\": " << e.startUs - originUs << ", \"dur\": " << e.durationUs
       << ", \"args\": {\"microbatch\": " << e.microbatch << "}}";
  }
}

} // namespace cleave::executor
