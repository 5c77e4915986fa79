//===- GemmProfile.cpp - fp32 GEMM times of the CPU kernels ---------------===//
//
// The GEMMs go through the kernels' matmul, the code the CPU runtime runs,
// so the table includes its shape checks and the cblas_sgemm call, with
// OpenBLAS's threads as the environment configures them.
//
//===----------------------------------------------------------------------===//

#include "Measurements.h"
#include "Timing.h"

#include "cleave/runtime/kernels/Matmul.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace cleave::profiler {

std::vector<int64_t> gemmGridDimensions(bool quick) {
  // Powers of 4 up to where OpenBLAS is at its peak on a few cores; the
  // cost model interpolates between them and extrapolates at the nearest
  // point's FLOP rate beyond.
  if (quick)
    return {32, 128, 512};
  return {64, 256, 1024, 2048};
}

absl::StatusOr<cost::GemmTable> profileGemms(const CpuProfileOptions &options) {
  std::vector<int64_t> dims = gemmGridDimensions(options.quick);
  int64_t largest = *std::max_element(dims.begin(), dims.end());
  // Operands cold in cache, as in a training step, where other ops have
  // read and written far more than the caches hold since a GEMM's operands
  // were made: each call takes the next of as many operand sets as fill
  // the pool (at least 96 MiB, beyond a server's last-level cache), so a
  // small GEMM is not timed on matrices it has just read. Cold operands
  // cost 2-10% at 256x512x512 and 40-60% at 64^3 on this machine.
  // Small nonzero values keep the FLOPs free of denormals and NaNs.
  constexpr int64_t kPoolBytes = int64_t(96) << 20;
  int64_t poolFloats = std::max<int64_t>(3 * largest * largest, kPoolBytes / 4);
  kernels::Tensor pool({poolFloats});
  for (int64_t i = 0; i < poolFloats; ++i)
    pool[i] = 0.01f * static_cast<float>(i % 7 - 3);
  // Two rounds over the grid, the second in reverse order, each with half
  // the time, keeping each shape's faster median: a slow spell of the
  // machine (another tenant, a frequency drop) lasting seconds slows the
  // shapes timed during it in one round only. Measured: one profile of one
  // round took 1.5-2.6x as long for every GEMM with m = 64, a run of
  // consecutive shapes, while the plans it priced ran as fast as the
  // profile before it had predicted.
  struct Shape {
    int64_t m, n, k;
  };
  std::vector<Shape> shapes;
  for (int64_t m : dims)
    for (int64_t n : dims)
      for (int64_t k : dims)
        shapes.push_back({m, n, k});
  std::vector<double> fastest(shapes.size(), HUGE_VAL);
  constexpr int kRounds = 2;
  size_t done = 0, total = kRounds * shapes.size();
  for (int round = 0; round < kRounds; ++round)
    for (size_t step = 0; step < shapes.size(); ++step) {
      size_t i = round % 2 ? shapes.size() - 1 - step : step;
      auto [m, n, k] = shapes[i];
      int64_t set = m * k + k * n + m * n;
      int64_t sets = std::max<int64_t>(1, poolFloats / set);
      int64_t next = 0;
      double seconds = medianSeconds(
          [&] {
            float *base = pool.data() + (next++ % sets) * set;
            kernels::ConstTensorRef lhs(base, {m, k});
            kernels::ConstTensorRef rhs(base + m * k, {k, n});
            kernels::TensorRef out(base + m * k + k * n, {m, n});
            kernels::matmul(lhs, rhs, false, false, out);
          },
          options.secondsPerMeasurement / kRounds);
      fastest[i] = std::min(fastest[i], seconds);
      ++done;
      if (options.progress) {
        double flops = 2.0 * m * n * k;
        char line[160];
        std::snprintf(line, sizeof(line),
                      "gemm %zu/%zu: %lldx%lldx%lld fp32 %s (%.1f GFLOP/s)",
                      done, total, static_cast<long long>(m),
                      static_cast<long long>(n), static_cast<long long>(k),
                      formatSeconds(seconds).c_str(), flops / seconds / 1e9);
        options.progress(line);
      }
    }
  std::vector<cost::GemmSample> samples;
  for (size_t i = 0; i < shapes.size(); ++i)
    samples.push_back({shapes[i].m, shapes[i].n, shapes[i].k, fastest[i]});
  return cost::GemmTable::create(std::move(samples));
}

} // namespace cleave::profiler
