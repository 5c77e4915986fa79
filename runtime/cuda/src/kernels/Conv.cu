//===- Conv.cu - im2col, col2im and bias for GPU convolutions -------------===//

#include "kernels/Conv.h"

#include "Context.h"

namespace cleave::cuda {

namespace {

#define CLEAVE_GRID_STRIDE(i, n)                                               \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n);   \
       i += int64_t(gridDim.x) * blockDim.x)

__global__ void im2colKernel(ConvGeometry g, const float *__restrict__ x,
                             int64_t first, int64_t count, int64_t group,
                             float *__restrict__ col) {
  int64_t p = g.colCols(), rows = g.colRows();
  CLEAVE_GRID_STRIDE(i, count * rows * p) {
    int64_t pixel = i % p, row = (i / p) % rows, n = i / (p * rows);
    int64_t kj = row % g.kw, ki = (row / g.kw) % g.kh, c = row / (g.kw * g.kh);
    int64_t oy = pixel / g.outWidth, ox = pixel % g.outWidth;
    int64_t iy = oy * g.sh - g.padTop + ki * g.dh;
    int64_t ix = ox * g.sw - g.padLeft + kj * g.dw;
    float v = 0.0f;
    if (iy >= 0 && iy < g.height && ix >= 0 && ix < g.width)
      v = x[(((first + n) * g.channels + group * g.groupIn + c) * g.height +
             iy) *
                g.width +
            ix];
    col[i] = v;
  }
}

__global__ void col2imKernel(ConvGeometry g, const float *__restrict__ col,
                             int64_t first, int64_t count, int64_t group,
                             float *__restrict__ dx) {
  int64_t p = g.colCols(), rows = g.colRows();
  int64_t image = g.groupIn * g.height * g.width;
  CLEAVE_GRID_STRIDE(i, count * image) {
    int64_t ix = i % g.width, iy = (i / g.width) % g.height;
    int64_t c = (i / (g.width * g.height)) % g.groupIn, n = i / image;
    float sum = 0.0f;
    for (int64_t ki = 0; ki < g.kh; ++ki) {
      int64_t y = iy + g.padTop - ki * g.dh;
      if (y < 0 || y % g.sh != 0 || y / g.sh >= g.outHeight)
        continue;
      for (int64_t kj = 0; kj < g.kw; ++kj) {
        int64_t xx = ix + g.padLeft - kj * g.dw;
        if (xx < 0 || xx % g.sw != 0 || xx / g.sw >= g.outWidth)
          continue;
        int64_t row = (c * g.kh + ki) * g.kw + kj;
        sum += col[(n * rows + row) * p + (y / g.sh) * g.outWidth + xx / g.sw];
      }
    }
    dx[(((first + n) * g.channels + group * g.groupIn + c) * g.height + iy) *
           g.width +
       ix] = sum;
  }
}

__global__ void biasKernel(float *__restrict__ out,
                           const float *__restrict__ bias, int64_t n,
                           int64_t o, int64_t p) {
  CLEAVE_GRID_STRIDE(i, n * o * p) { out[i] += bias[(i / p) % o]; }
}

} // namespace

void im2col(const ConvGeometry &g, const float *x, int64_t first,
            int64_t count, int64_t group, float *col, cudaStream_t stream) {
  int64_t total = count * g.colRows() * g.colCols();
  if (total == 0)
    return;
  im2colKernel<<<blocksFor(total), 256, 0, stream>>>(g, x, first, count, group,
                                                     col);
  CLEAVE_CUDA_LAUNCHED("im2col");
}

void col2im(const ConvGeometry &g, const float *col, int64_t first,
            int64_t count, int64_t group, float *dx, cudaStream_t stream) {
  int64_t total = count * g.groupIn * g.height * g.width;
  if (total == 0)
    return;
  col2imKernel<<<blocksFor(total), 256, 0, stream>>>(g, col, first, count,
                                                     group, dx);
  CLEAVE_CUDA_LAUNCHED("col2im");
}

void addChannelBias(float *out, const float *bias, int64_t n, int64_t o,
                    int64_t p, cudaStream_t stream) {
  int64_t total = n * o * p;
  if (total == 0)
    return;
  biasKernel<<<blocksFor(total), 256, 0, stream>>>(out, bias, n, o, p);
  CLEAVE_CUDA_LAUNCHED("addChannelBias");
}

} // namespace cleave::cuda
