//===- MemoryProfile.cpp - Streaming bandwidth and per-call overhead ------===//
//
// The cpu-local cluster is one rank per core, so the bandwidth that replaces
// its per-device memory bandwidth is that of one thread: the kernels' add
// (single-threaded, like every kernel but the GEMMs) over arrays well past
// the last-level cache. Bytes moved count two reads and one write per
// element, as STREAM counts them (the write-allocate read is not counted).
//
// The kernel overhead is the time of the same add on one element: the shape
// checks and broadcast planning every kernel call pays whatever its size.
//
//===----------------------------------------------------------------------===//

#include "Measurements.h"
#include "Timing.h"

#include "cleave/runtime/kernels/Elementwise.h"

#include <cstdio>

namespace cleave::profiler {
namespace {

// 64 MiB per array, 192 MiB in all: twice a large server L3 per socket.
constexpr int64_t kStreamElements = int64_t(16) << 20;

} // namespace

MemoryMeasurements profileMemory(const CpuProfileOptions &options) {
  MemoryMeasurements result;
  {
    kernels::Tensor lhs({kStreamElements}, 1.0f), rhs({kStreamElements}, 2.0f),
        out({kStreamElements}, 0.0f);
    double seconds = medianSeconds(
        [&] { kernels::binary(kernels::BinaryOp::Add, lhs, rhs, out); },
        options.secondsPerMeasurement);
    double bytes = 3.0 * kStreamElements * sizeof(float);
    result.bandwidth = bytes / seconds;
  }
  if (options.progress)
    options.progress("memory: " + formatRate(result.bandwidth) +
                     " (one thread adding 64 MiB arrays)");

  kernels::Tensor lhs({1}, 1.0f), rhs({1}, 2.0f), out({1}, 0.0f);
  result.kernelOverhead = medianSeconds(
      [&] { kernels::binary(kernels::BinaryOp::Add, lhs, rhs, out); },
      options.secondsPerMeasurement);
  if (options.progress)
    options.progress(
        "kernel overhead: " + formatSeconds(result.kernelOverhead) +
        " (an add of one element)");
  return result;
}

} // namespace cleave::profiler
