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
  int64_t poolFloats =
      std::max<int64_t>(3 * largest * largest, kPoolBytes / 4);
  kernels::Tensor pool({poolFloats});
  for (int64_t i = 0; i < poolFloats; ++i)
    pool[i] = 0.01f * static_cast<float>(i % 7 - 3);
  std::vector<cost::GemmSample> samples;
  size_t total = dims.size() * dims.size() * dims.size();
  for (int64_t m : dims)
    for (int64_t n : dims)
      for (int64_t k : dims) {
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
            options.secondsPerMeasurement);
        samples.push_back({m, n, k, seconds});
        if (options.progress) {
          double flops = 2.0 * m * n * k;
          char line[160];
          std::snprintf(line, sizeof(line),
                        "gemm %zu/%zu: %lldx%lldx%lld fp32 %s (%.1f GFLOP/s)",
                        samples.size(), total, static_cast<long long>(m),
                        static_cast<long long>(n), static_cast<long long>(k),
                        formatSeconds(seconds).c_str(), flops / seconds / 1e9);
          options.progress(line);
        }
      }
  return cost::GemmTable::create(std::move(samples));
}

} // namespace cleave::profiler
