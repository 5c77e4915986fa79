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
  // One set of buffers at the largest shape; each point views a prefix.
  // Small nonzero values keep the FLOPs free of denormals and NaNs.
  kernels::Tensor a({largest * largest}), b({largest * largest}),
      c({largest * largest});
  for (int64_t i = 0; i < a.numElements(); ++i) {
    a[i] = 0.01f * static_cast<float>(i % 7 - 3);
    b[i] = 0.01f * static_cast<float>(i % 5 - 2);
  }

  std::vector<cost::GemmSample> samples;
  size_t total = dims.size() * dims.size() * dims.size();
  for (int64_t m : dims)
    for (int64_t n : dims)
      for (int64_t k : dims) {
        kernels::ConstTensorRef lhs(a.data(), {m, k});
        kernels::ConstTensorRef rhs(b.data(), {k, n});
        kernels::TensorRef out(c.data(), {m, n});
        double seconds =
            medianSeconds([&] { kernels::matmul(lhs, rhs, false, false, out); },
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
