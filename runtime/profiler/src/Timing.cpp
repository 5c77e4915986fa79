//===- Timing.cpp - Numbers with units for progress lines -----------------===//

#include "Timing.h"

#include <cstdio>
#include <initializer_list>
#include <utility>

namespace cleave::profiler {
namespace {

std::string
withUnit(double value,
         std::initializer_list<std::pair<double, const char *>> units) {
  // The largest unit that keeps the number at least 1.
  auto chosen = units.begin();
  for (auto it = units.begin(); it != units.end(); ++it)
    if (value >= it->first)
      chosen = it;
  // Three significant digits, or all digits before the point (1020 B,
  // not 1.02e+03 B).
  double scaled = value / chosen->first;
  int digits = scaled >= 1000 ? 4 : 3;
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.*g %s", digits, scaled,
                chosen->second);
  return buffer;
}

} // namespace

std::string formatSeconds(double seconds) {
  return withUnit(seconds,
                  {{1e-9, "ns"}, {1e-6, "us"}, {1e-3, "ms"}, {1, "s"}});
}

std::string formatRate(double bytesPerSecond) {
  return withUnit(bytesPerSecond,
                  {{1, "B/s"}, {1e3, "KB/s"}, {1e6, "MB/s"}, {1e9, "GB/s"}});
}

std::string formatBytes(double bytes) {
  return withUnit(
      bytes,
      {{1, "B"}, {1024.0, "KiB"}, {1048576.0, "MiB"}, {1073741824.0, "GiB"}});
}

} // namespace cleave::profiler
