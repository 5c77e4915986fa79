//===- CudaProfiler.h - Measure this node's GPUs for the cost model -*- C++ -*-===//
//
// `cleave profile --backend cuda` measures what the built-in GPU clusters
// take from datasheets: GEMM times through cuBLASLt on a grid of shapes for
// fp32, tf32, bf16 and fp16 (fp32 accumulation), the device's copy
// bandwidth and the cost of launching a small kernel, and, with two or more
// GPUs in the node, NCCL collective curves (all-reduce, all-gather,
// reduce-scatter, all-to-all) over groups of 2, 4 and 8 GPUs, driven from
// this one process as nccl-tests does (ncclCommInitAll), which also gives
// the intra-node bus bandwidth. The result is a cost::Profile that
// cost::formatProfile writes and `--profile` reads back.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_CUDA_CUDAPROFILER_H
#define CLEAVE_RUNTIME_CUDA_CUDAPROFILER_H

#include "cleave/cost_model/Profile.h"

#include "absl/status/statusor.h"

#include <functional>
#include <string>

namespace cleave::cuda {

struct CudaProfileOptions {
  /// A small grid (GEMM dimensions, collective sizes), for tests.
  bool quick = false;
  /// A point repeats until it has run this long (and at least 3 times);
  /// its time is the median repeat.
  double secondsPerMeasurement = 0.05;
  /// At most this many GPUs for the collectives (0: every GPU).
  int maxGpus = 0;
  /// One line per phase and point.
  std::function<void(const std::string &)> progress;
};

/// Measures GPU 0 (and the node's GPUs for collectives). Fails with the
/// CUDA runtime's reason where there is no GPU.
absl::StatusOr<cost::Profile> profileCuda(const CudaProfileOptions &options);

/// The `#` header: host, GPU name, CUDA and NCCL versions, what was
/// measured.
std::string cudaProfileComment(const CudaProfileOptions &options);

} // namespace cleave::cuda

#endif // CLEAVE_RUNTIME_CUDA_CUDAPROFILER_H
