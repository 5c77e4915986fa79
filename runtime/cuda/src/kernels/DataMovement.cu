//===- DataMovement.cu - Strided copies and casts on the GPU --------------===//

#include "kernels/DataMovement.h"

#include "Context.h"

#include <stdexcept>

namespace cleave::cuda {

namespace {

constexpr int kMaxRank = 8;

/// Passed by value: the launch carries it in constant parameter space.
struct CopyPlan {
  int rank;
  int64_t dims[kMaxRank];
  int64_t src[kMaxRank];
  int64_t dst[kMaxRank];
  int64_t srcOffset, dstOffset;
};

template <typename T>
__global__ void stridedCopyKernel(const T *__restrict__ in,
                                  T *__restrict__ out, CopyPlan p, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t rest = i, s = p.srcOffset, d = p.dstOffset;
    for (int a = p.rank - 1; a >= 0; --a) {
      int64_t coord = rest % p.dims[a];
      rest /= p.dims[a];
      s += coord * p.src[a];
      d += coord * p.dst[a];
    }
    out[d] = in[s];
  }
}

__global__ void f32ToI64(const float *__restrict__ in,
                         int64_t *__restrict__ out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = static_cast<int64_t>(in[i]);
}

__global__ void i64ToF32(const int64_t *__restrict__ in,
                         float *__restrict__ out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = static_cast<float>(in[i]);
}

/// Drops unit dimensions and merges neighbours that are contiguous in both
/// views, so that a plain copy of a block runs as a rank-1 loop.
void simplify(CopyPlan &p) {
  int r = 0;
  for (int a = 0; a < p.rank; ++a) {
    if (p.dims[a] == 1)
      continue;
    if (r > 0 && p.src[r - 1] == p.src[a] * p.dims[a] &&
        p.dst[r - 1] == p.dst[a] * p.dims[a]) {
      p.dims[r - 1] *= p.dims[a];
      p.src[r - 1] = p.src[a];
      p.dst[r - 1] = p.dst[a];
      continue;
    }
    p.dims[r] = p.dims[a];
    p.src[r] = p.src[a];
    p.dst[r] = p.dst[a];
    ++r;
  }
  if (r == 0) {
    p.dims[0] = 1;
    p.src[0] = p.dst[0] = 1;
    r = 1;
  }
  p.rank = r;
}

} // namespace

void stridedCopy(const void *src, const StridedView &s, void *dst,
                 const StridedView &d, const std::vector<int64_t> &dims,
                 int elementBytes, cudaStream_t stream) {
  int rank = static_cast<int>(dims.size());
  if (rank > kMaxRank || s.strides.size() != dims.size() ||
      d.strides.size() != dims.size())
    throw std::invalid_argument("strided copy of rank " +
                                std::to_string(rank) +
                                " (at most 8, strides per dimension)");
  CopyPlan p{};
  p.rank = rank;
  int64_t n = 1;
  for (int a = 0; a < rank; ++a) {
    p.dims[a] = dims[a];
    p.src[a] = s.strides[a];
    p.dst[a] = d.strides[a];
    n *= dims[a];
  }
  p.srcOffset = s.offset;
  p.dstOffset = d.offset;
  if (n == 0)
    return;
  simplify(p);
  unsigned blocks = blocksFor(n);
  switch (elementBytes) {
  case 1:
    stridedCopyKernel<uint8_t><<<blocks, 256, 0, stream>>>(
        static_cast<const uint8_t *>(src), static_cast<uint8_t *>(dst), p, n);
    break;
  case 4:
    stridedCopyKernel<uint32_t><<<blocks, 256, 0, stream>>>(
        static_cast<const uint32_t *>(src), static_cast<uint32_t *>(dst), p,
        n);
    break;
  case 8:
    stridedCopyKernel<uint64_t><<<blocks, 256, 0, stream>>>(
        static_cast<const uint64_t *>(src), static_cast<uint64_t *>(dst), p,
        n);
    break;
  default:
    throw std::invalid_argument("strided copy of " +
                                std::to_string(elementBytes) +
                                "-byte elements");
  }
  CLEAVE_CUDA_LAUNCHED("stridedCopy");
}

void castF32ToI64(const float *in, int64_t *out, int64_t n,
                  cudaStream_t stream) {
  if (n == 0)
    return;
  f32ToI64<<<blocksFor(n), 256, 0, stream>>>(in, out, n);
  CLEAVE_CUDA_LAUNCHED("castF32ToI64");
}

void castI64ToF32(const int64_t *in, float *out, int64_t n,
                  cudaStream_t stream) {
  if (n == 0)
    return;
  i64ToF32<<<blocksFor(n), 256, 0, stream>>>(in, out, n);
  CLEAVE_CUDA_LAUNCHED("castI64ToF32");
}

} // namespace cleave::cuda
