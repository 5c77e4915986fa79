//===- Context.h - The process's GPU: stream, cuBLASLt, scratch -*- C++ -*-===//
//
// One rank per process and one GPU per rank: the CUDA backend makes the
// process's Context when it starts, and every CUDA kernel of the registry
// (whose signature, void(OpContext &), leaves no room for a device handle)
// finds its stream and library handles here. Everything a kernel enqueues
// goes on `compute`, in instruction order; communication runs on the
// communicator's own streams and joins through events.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_CUDA_SRC_CONTEXT_H
#define CLEAVE_RUNTIME_CUDA_SRC_CONTEXT_H

#include "cleave/runtime/cuda/CudaBackend.h"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace cleave::cuda {

struct Context {
  int device = -1;
  cudaDeviceProp properties{};
  cudaStream_t compute = nullptr;
  cublasLtHandle_t lt = nullptr;
  /// cuBLASLt's workspace (32 MiB, as PyTorch gives it on Hopper).
  void *ltWorkspace = nullptr;
  size_t ltWorkspaceBytes = 0;
  /// How GEMMs multiply the plan's fp32 tensors (its precision knob).
  GemmPrecision gemmPrecision = GemmPrecision::Fp32;
};

/// The process's context; throws std::runtime_error before the CUDA
/// backend has made it.
Context &context();
/// Makes the context on `device` (cudaSetDevice, stream, cuBLASLt); throws
/// std::runtime_error with the CUDA error's name on failure.
void createContext(int device);
/// Frees it (at the backend's end).
void destroyContext();

/// Throws std::runtime_error "what: cudaErrorX (text)" unless `status` is
/// cudaSuccess.
void check(cudaError_t status, const char *what);
void check(cublasStatus_t status, const char *what);

#define CLEAVE_CUDA_CHECK(expr) ::cleave::cuda::check((expr), #expr)
/// After a kernel launch: a bad configuration shows up here, at once.
#define CLEAVE_CUDA_LAUNCHED(name)                                             \
  ::cleave::cuda::check(cudaGetLastError(), name)

/// Device memory for the duration of one kernel's work, from the stream-
/// ordered pool (cudaMallocAsync on the compute stream), returned to it in
/// stream order when the Scratch goes out of scope.
class Scratch {
public:
  explicit Scratch(size_t bytes);
  ~Scratch();
  Scratch(const Scratch &) = delete;
  Scratch &operator=(const Scratch &) = delete;
  void *data() const { return data_; }
  template <typename T> T *as() const { return static_cast<T *>(data_); }

private:
  void *data_ = nullptr;
};

/// Blocks of `threads` for a grid-stride loop over n elements (capped, the
/// loop covers the rest).
inline unsigned blocksFor(int64_t n, int threads = 256) {
  int64_t blocks = (n + threads - 1) / threads;
  if (blocks < 1)
    blocks = 1;
  if (blocks > 65535 * 8)
    blocks = 65535 * 8;
  return static_cast<unsigned>(blocks);
}

} // namespace cleave::cuda

#endif // CLEAVE_RUNTIME_CUDA_SRC_CONTEXT_H
