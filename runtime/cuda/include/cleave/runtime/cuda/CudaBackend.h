//===- CudaBackend.h - Run a plan's kernels on an NVIDIA GPU ----*- C++ -*-===//
//
// The executor's CUDA backend: the arena in GPU memory, kernels on one
// stream (cuBLASLt GEMMs, CUDA kernels for the rest), host copies through
// pinned staging. No CUDA header is needed to include this; the binaries
// link the CUDA runtime statically and load the driver at run time, so a
// machine without a GPU or driver gets a clear error (probeCuda), never a
// failure to start.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_CUDA_CUDABACKEND_H
#define CLEAVE_RUNTIME_CUDA_CUDABACKEND_H

#include "cleave/runtime/executor/Backend.h"

#include "absl/status/statusor.h"

#include <memory>
#include <string>
#include <vector>

namespace cleave::cuda {

/// The number of usable GPUs, or an error saying why there are none
/// ("no CUDA GPU found: cudaErrorNoDevice (...)", or
/// cudaErrorInsufficientDriver where no driver is installed).
absl::StatusOr<int> probeCuda();

/// The ops the backend has kernels for, sorted (no GPU needed).
std::vector<std::string> kernelOps();

/// Starts the backend on GPU `localRank % deviceCount` (one rank per GPU
/// of a node); only one per process. `tf32`: fp32 GEMMs on TF32 tensor
/// cores (a plan of precision tf32).
absl::StatusOr<std::unique_ptr<executor::Backend>>
createCudaBackend(int localRank, bool tf32 = false);

} // namespace cleave::cuda

#endif // CLEAVE_RUNTIME_CUDA_CUDABACKEND_H
