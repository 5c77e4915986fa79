//===- Gather.h - graph.gather and its gradient on the GPU ------*- C++ -*-===//
//
// Launchers for graph.gather and graph.gather_grad, with the gathered axis
// viewed as the middle of data [outer, size, inner] and `count` int64
// indices; GatherOps.cpp checks shapes and attributes first. Pointers are
// device memory and every launcher only enqueues on `stream`. The
// semantics are the CPU kernels' (runtime/kernels/src/DataMovement.cpp):
// an index i < 0 means i + size (ONNX). An index outside [-size, size),
// which the CPU rejects (the executor keeps generated ids in range), is
// not reported by a kernel: it gathers zeros and scatters nothing.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_CUDA_SRC_KERNELS_GATHER_H
#define CLEAVE_RUNTIME_CUDA_SRC_KERNELS_GATHER_H

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace cleave::cuda {

/// out [outer, count, inner]: out[o, j, :] = data[o, indices[j], :].
void launchGather(const float *data, const int64_t *indices, float *out,
                  int64_t outer, int64_t size, int64_t inner, int64_t count,
                  cudaStream_t stream);

/// Bytes of workspace launchGatherGrad needs.
size_t gatherGradWorkspaceBytes(int64_t count, int64_t size);

/// dData [outer, size, inner]: zeros, plus dOut[o, j, :] added to row
/// indices[j] for every j. The indices are sorted (stably) by row and each
/// row's gradients are summed in index order, so the result is
/// deterministic and is the CPU's bit for bit (no atomics).
void launchGatherGrad(const int64_t *indices, const float *dOut, float *dData,
                      int64_t outer, int64_t size, int64_t inner, int64_t count,
                      void *workspace, cudaStream_t stream);

} // namespace cleave::cuda

#endif // CLEAVE_RUNTIME_CUDA_SRC_KERNELS_GATHER_H
