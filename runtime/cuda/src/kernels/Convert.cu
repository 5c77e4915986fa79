//===- Convert.cu - fp32 to and from bf16/fp16 copies ---------------------===//

#include "kernels/Convert.h"

#include "Context.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace cleave::cuda {

namespace {

template <typename T> __device__ T fromFloat(float v);
template <> __device__ __nv_bfloat16 fromFloat(float v) {
  return __float2bfloat16_rn(v);
}
template <> __device__ __half fromFloat(float v) { return __float2half_rn(v); }

template <typename T>
__global__ void widenKernel(const T *__restrict__ in, float *__restrict__ out,
                            int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = static_cast<float>(in[i]);
}

template <typename T>
__global__ void convertKernel(const float *__restrict__ in,
                              T *__restrict__ out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = fromFloat<T>(in[i]);
}

} // namespace

void convertToHalf(const float *in, void *out, int64_t n, bool bf16,
                   cudaStream_t stream) {
  if (n == 0)
    return;
  if (bf16)
    convertKernel<<<blocksFor(n), 256, 0, stream>>>(
        in, static_cast<__nv_bfloat16 *>(out), n);
  else
    convertKernel<<<blocksFor(n), 256, 0, stream>>>(
        in, static_cast<__half *>(out), n);
  CLEAVE_CUDA_LAUNCHED("convertToHalf");
}

void convertFromHalf(const void *in, float *out, int64_t n, bool bf16,
                     cudaStream_t stream) {
  if (n == 0)
    return;
  if (bf16)
    widenKernel<<<blocksFor(n), 256, 0, stream>>>(
        static_cast<const __nv_bfloat16 *>(in), out, n);
  else
    widenKernel<<<blocksFor(n), 256, 0, stream>>>(
        static_cast<const __half *>(in), out, n);
  CLEAVE_CUDA_LAUNCHED("convertFromHalf");
}

} // namespace cleave::cuda
