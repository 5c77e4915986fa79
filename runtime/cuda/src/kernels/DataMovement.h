//===- DataMovement.h - Strided copies and casts on the GPU -----*- C++ -*-===//
//
// transpose, slice and its gradient, concat, split and shard_slice are all
// one kernel: a copy between two strided views of the same logical shape.
// Each op only says how its source and destination are laid out.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_CUDA_SRC_KERNELS_DATAMOVEMENT_H
#define CLEAVE_RUNTIME_CUDA_SRC_KERNELS_DATAMOVEMENT_H

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

namespace cleave::cuda {

/// A view of `dims` (row-major logical order) with element strides into a
/// buffer, starting at element `offset`.
struct StridedView {
  std::vector<int64_t> strides;
  int64_t offset = 0;
};

/// dst[view d] := src[view s] for every index of `dims`; elements of
/// `elementBytes` (1, 4 or 8). Throws std::invalid_argument beyond rank 8.
void stridedCopy(const void *src, const StridedView &s, void *dst,
                 const StridedView &d, const std::vector<int64_t> &dims,
                 int elementBytes, cudaStream_t stream);

/// Element-wise conversions: f32 -> i64 (truncation, as static_cast) and
/// i64 -> f32.
void castF32ToI64(const float *in, int64_t *out, int64_t n,
                  cudaStream_t stream);
void castI64ToF32(const int64_t *in, float *out, int64_t n,
                  cudaStream_t stream);

} // namespace cleave::cuda

#endif // CLEAVE_RUNTIME_CUDA_SRC_KERNELS_DATAMOVEMENT_H
