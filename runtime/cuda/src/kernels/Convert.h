//===- Convert.h - fp32 to and from bf16/fp16 copies ------------*- C++ -*-===//

#ifndef CLEAVE_RUNTIME_CUDA_SRC_KERNELS_CONVERT_H
#define CLEAVE_RUNTIME_CUDA_SRC_KERNELS_CONVERT_H

#include <cuda_runtime.h>

#include <cstdint>

namespace cleave::cuda {

/// out[i] = in[i] rounded to nearest even, as bf16 (`bf16`) or fp16, for
/// n elements; out holds 2 bytes per element.
void convertToHalf(const float *in, void *out, int64_t n, bool bf16,
                   cudaStream_t stream);

/// out[i] = in[i] widened exactly to fp32, from bf16 (`bf16`) or fp16.
void convertFromHalf(const void *in, float *out, int64_t n, bool bf16,
                     cudaStream_t stream);

} // namespace cleave::cuda

#endif // CLEAVE_RUNTIME_CUDA_SRC_KERNELS_CONVERT_H
