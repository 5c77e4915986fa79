//===- Timing.h - Median time of a repeated call ----------------*- C++ -*-===//
//
// One timed call says little: the first touches cold caches and starts
// OpenBLAS's threads, and short calls are below the clock's resolution. So
// calls are batched so that a batch lasts about a third of the target time,
// batches repeat until the target is reached (and at least three ran), and
// the median batch gives the time, which ignores a batch that another
// process on the machine interrupted.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_PROFILER_SRC_TIMING_H
#define CLEAVE_RUNTIME_PROFILER_SRC_TIMING_H

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace cleave::profiler {

inline double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

/// The median of `values` (the mean of the middle two for an even count).
inline double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid]
                           : 0.5 * (values[mid - 1] + values[mid]);
}

/// Seconds of one call of `fn`, measured as described above.
template <typename Fn> double medianSeconds(Fn &&fn, double targetSeconds) {
  constexpr int kMinRepeats = 3;
  constexpr int kMaxRepeats = 1000;
  auto timeOne = [&] {
    auto start = std::chrono::steady_clock::now();
    fn();
    return secondsSince(start);
  };
  // A warm-up call, then the fastest of a few single calls sizes the
  // batches: one call that another process interrupted would make them so
  // short that every batch is at the mercy of the scheduler.
  double perCallEstimate = timeOne();
  for (int i = 0; i < 3 && perCallEstimate < targetSeconds / kMinRepeats; ++i)
    perCallEstimate = std::min(perCallEstimate, timeOne());
  auto calls = static_cast<int64_t>(std::clamp(
      targetSeconds / kMinRepeats / std::max(perCallEstimate, 1e-9), 1.0, 1e7));
  std::vector<double> perCall;
  double total = 0;
  while (static_cast<int>(perCall.size()) < kMinRepeats ||
         (total < targetSeconds &&
          static_cast<int>(perCall.size()) < kMaxRepeats)) {
    auto start = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < calls; ++i)
      fn();
    double elapsed = secondsSince(start);
    perCall.push_back(elapsed / static_cast<double>(calls));
    total += elapsed;
  }
  return median(std::move(perCall));
}

/// "12.3 us", "4.56 ms": three significant digits, for progress lines.
std::string formatSeconds(double seconds);
/// "12.3 GB/s" (decimal units, like the profile file).
std::string formatRate(double bytesPerSecond);
/// "64 MiB", "1 KiB", "1000 B".
std::string formatBytes(double bytes);

} // namespace cleave::profiler

#endif // CLEAVE_RUNTIME_PROFILER_SRC_TIMING_H
