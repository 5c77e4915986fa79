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

/// How GEMMs multiply the plan's fp32 tensors. Programs hold fp32 tensors
/// (weights are fp32 masters); the plan's precision knob picks the tensor
/// cores: tf32 rounds inside them, bf16 and fp16 multiply rounded copies of
/// the operands; every product accumulates and is stored in fp32.
enum class GemmPrecision { Fp32, Tf32, Bf16, Fp16 };

/// "fp32", "tf32", "bf16" or "fp16" (a plan's Knobs.precision); an error
/// names anything else.
absl::StatusOr<GemmPrecision> parseGemmPrecision(const std::string &name);

/// The ops the backend has kernels for, sorted (no GPU needed).
std::vector<std::string> kernelOps();

/// Starts the backend on GPU `localRank % deviceCount` (one rank per GPU
/// of a node); only one per process.
absl::StatusOr<std::unique_ptr<executor::Backend>>
createCudaBackend(int localRank,
                  GemmPrecision precision = GemmPrecision::Fp32);

/// Changes the running backend's GEMM precision (tests).
void setGemmPrecision(GemmPrecision precision);

} // namespace cleave::cuda

#endif // CLEAVE_RUNTIME_CUDA_CUDABACKEND_H
