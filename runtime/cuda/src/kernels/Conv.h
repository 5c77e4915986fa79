//===- Conv.h - im2col, col2im and bias for GPU convolutions ----*- C++ -*-===//

#ifndef CLEAVE_RUNTIME_CUDA_SRC_KERNELS_CONV_H
#define CLEAVE_RUNTIME_CUDA_SRC_KERNELS_CONV_H

#include <cuda_runtime.h>

#include <cstdint>

// The header is read by host-only C++ too.
#ifdef __CUDACC__
#define CLEAVE_HOST_DEVICE __host__ __device__
#else
#define CLEAVE_HOST_DEVICE
#endif

namespace cleave::cuda {

/// One convolution's sizes (NCHW input, OIHW filter).
struct ConvGeometry {
  int64_t batch, channels, height, width;
  int64_t outChannels, kh, kw, outHeight, outWidth;
  int64_t groups, groupIn, groupOut;
  int64_t sh, sw, padTop, padLeft, dh, dw;
  CLEAVE_HOST_DEVICE int64_t colRows() const { return groupIn * kh * kw; }
  CLEAVE_HOST_DEVICE int64_t colCols() const { return outHeight * outWidth; }
};

/// Unrolls group `group` of images [first, first + count) of `x` into
/// col[count][Cg*KH*KW][OH*OW] (zeros where a window reaches the padding).
void im2col(const ConvGeometry &g, const float *x, int64_t first,
            int64_t count, int64_t group, float *col, cudaStream_t stream);

/// The adjoint: writes group `group`'s channels of images
/// [first, first + count) of dx with the sum of the columns that read each
/// element (a gather per element: deterministic, no atomics).
void col2im(const ConvGeometry &g, const float *col, int64_t first,
            int64_t count, int64_t group, float *dx, cudaStream_t stream);

/// out[n, o, p] += bias[o] for out [N, O, P].
void addChannelBias(float *out, const float *bias, int64_t n, int64_t o,
                    int64_t p, cudaStream_t stream);

} // namespace cleave::cuda

#endif // CLEAVE_RUNTIME_CUDA_SRC_KERNELS_CONV_H
