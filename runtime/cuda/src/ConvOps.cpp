//===- ConvOps.cpp - graph.conv2d and its gradients on the GPU ------------===//
//
// As on the CPU (runtime/kernels/src/Conv2d.cpp): per group, the input
// patches are unrolled into columns [Cg*KH*KW, OH*OW] per image (im2col),
// so that the convolution and its two gradients are GEMMs with the group's
// filter [Og, Cg*KH*KW]; the input gradient's columns fold back onto the
// image (col2im). Images are unrolled in chunks of at most 256 MiB of
// columns, each chunk's products one strided-batched GEMM. A 1x1 stride-1
// convolution without padding needs no columns: each image already is its
// column matrix. (ViT's patch embedding is a convolution whose stride is
// its kernel.)
//
//===----------------------------------------------------------------------===//

#include "OpChecks.h"
#include "Ops.h"

#include "Context.h"
#include "Gemm.h"
#include "kernels/Conv.h"

#include "cleave/runtime/executor/OpAttributes.h"
#include "cleave/runtime/kernels/Conv.h"

#include <algorithm>
#include <stdexcept>

namespace cleave::cuda {

namespace k = cleave::kernels;
using executor::convOptions;
using executor::OpContext;

namespace {

/// The geometry of input x filter; k::conv2dShape checks them as the CPU
/// does.
ConvGeometry geometry(const k::Shape &input, const k::Shape &filter,
                      const k::Conv2dOptions &o) {
  k::Shape out = k::conv2dShape(input, filter, o);
  ConvGeometry g{};
  g.batch = input[0];
  g.channels = input[1];
  g.height = input[2];
  g.width = input[3];
  g.outChannels = filter[0];
  g.kh = filter[2];
  g.kw = filter[3];
  g.outHeight = out[2];
  g.outWidth = out[3];
  g.groups = o.groups;
  g.groupIn = g.channels / g.groups;
  g.groupOut = g.outChannels / g.groups;
  g.sh = o.strides[0];
  g.sw = o.strides[1];
  g.padTop = o.padding[0];
  g.padLeft = o.padding[1];
  g.dh = o.dilations[0];
  g.dw = o.dilations[1];
  return g;
}

bool direct(const ConvGeometry &g) {
  return g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.padTop == 0 &&
         g.padLeft == 0 && g.outHeight == g.height && g.outWidth == g.width;
}

/// Images per chunk of columns.
int64_t chunkImages(const ConvGeometry &g) {
  int64_t perImage = std::max<int64_t>(1, g.colRows() * g.colCols() * 4);
  return std::clamp<int64_t>((int64_t(256) << 20) / perImage, 1,
                             std::max<int64_t>(1, g.batch));
}

void conv2dKernel(OpContext &c) {
  c.expectArity(2, 3, 1);
  k::ConstTensorRef x = c.in(0), w = c.in(1), bias = c.inOpt(2);
  k::TensorRef out = c.out(0);
  k::Conv2dOptions o = convOptions(c);
  ConvGeometry g = geometry(x.shape, w.shape, o);
  expectShape(out.shape, k::conv2dShape(x.shape, w.shape, o), "the result");
  int64_t rows = g.colRows(), p = g.colCols();
  int64_t outImage = g.outChannels * p,
          inImage = g.channels * g.height * g.width;
  cudaStream_t s = context().compute;
  for (int64_t grp = 0; grp < g.groups; ++grp) {
    const float *wg = w.data + grp * g.groupOut * rows;
    float *og = out.data + grp * g.groupOut * p;
    if (direct(g)) {
      gemm(false, false, g.groupOut, p, rows, wg, x.data + grp * g.groupIn * p,
           0.0f, og, g.batch, 0, inImage, outImage);
      continue;
    }
    int64_t chunk = chunkImages(g);
    Scratch col(static_cast<size_t>(chunk * rows * p) * sizeof(float));
    for (int64_t first = 0; first < g.batch; first += chunk) {
      int64_t count = std::min(chunk, g.batch - first);
      im2col(g, x.data, first, count, grp, col.as<float>(), s);
      gemm(false, false, g.groupOut, p, rows, wg, col.as<float>(), 0.0f,
           og + first * outImage, count, 0, rows * p, outImage);
    }
  }
  if (bias) {
    expectShape(bias.shape, {g.outChannels}, "the bias");
    addChannelBias(out.data, bias.data, g.batch, g.outChannels, p, s);
  }
}

/// Operands: dOut, filter; dInput carries the input's shape.
void conv2dInputGradKernel(OpContext &c) {
  c.expectArity(2, 1);
  k::ConstTensorRef dOut = c.in(0), w = c.in(1);
  k::TensorRef dx = c.out(0);
  k::Conv2dOptions o = convOptions(c);
  ConvGeometry g = geometry(dx.shape, w.shape, o);
  expectShape(dOut.shape, k::conv2dShape(dx.shape, w.shape, o), "dOut");
  int64_t rows = g.colRows(), p = g.colCols();
  int64_t outImage = g.outChannels * p,
          inImage = g.channels * g.height * g.width;
  cudaStream_t s = context().compute;
  for (int64_t grp = 0; grp < g.groups; ++grp) {
    const float *wg = w.data + grp * g.groupOut * rows;
    const float *dg = dOut.data + grp * g.groupOut * p;
    if (direct(g)) {
      gemm(true, false, rows, p, g.groupOut, wg, dg, 0.0f,
           dx.data + grp * g.groupIn * p, g.batch, 0, outImage, inImage);
      continue;
    }
    int64_t chunk = chunkImages(g);
    Scratch col(static_cast<size_t>(chunk * rows * p) * sizeof(float));
    for (int64_t first = 0; first < g.batch; first += chunk) {
      int64_t count = std::min(chunk, g.batch - first);
      gemm(true, false, rows, p, g.groupOut, wg, dg + first * outImage, 0.0f,
           col.as<float>(), count, 0, outImage, rows * p);
      col2im(g, col.as<float>(), first, count, grp, dx.data, s);
    }
  }
}

/// Operands: input, dOut; dFilter carries the filter's shape.
void conv2dFilterGradKernel(OpContext &c) {
  c.expectArity(2, 1);
  k::ConstTensorRef x = c.in(0), dOut = c.in(1);
  k::TensorRef dw = c.out(0);
  k::Conv2dOptions o = convOptions(c);
  ConvGeometry g = geometry(x.shape, dw.shape, o);
  expectShape(dOut.shape, k::conv2dShape(x.shape, dw.shape, o), "dOut");
  int64_t rows = g.colRows(), p = g.colCols();
  int64_t outImage = g.outChannels * p,
          inImage = g.channels * g.height * g.width;
  cudaStream_t s = context().compute;
  if (g.batch == 0) {
    CLEAVE_CUDA_CHECK(cudaMemsetAsync(dw.data, 0, dw.numElements() * 4, s));
    return;
  }
  for (int64_t grp = 0; grp < g.groups; ++grp) {
    float *dwg = dw.data + grp * g.groupOut * rows;
    const float *dg = dOut.data + grp * g.groupOut * p;
    // dW_g = sum over images of dOut_n (Og x P) cols_n^T (P x K): one GEMM
    // per image, accumulating after the first.
    if (direct(g)) {
      for (int64_t n = 0; n < g.batch; ++n)
        gemm(false, true, g.groupOut, rows, p, dg + n * outImage,
             x.data + n * inImage + grp * g.groupIn * p, n == 0 ? 0.0f : 1.0f,
             dwg);
      continue;
    }
    int64_t chunk = chunkImages(g);
    Scratch col(static_cast<size_t>(chunk * rows * p) * sizeof(float));
    for (int64_t first = 0; first < g.batch; first += chunk) {
      int64_t count = std::min(chunk, g.batch - first);
      im2col(g, x.data, first, count, grp, col.as<float>(), s);
      for (int64_t n = 0; n < count; ++n)
        gemm(false, true, g.groupOut, rows, p, dg + (first + n) * outImage,
             col.as<float>() + n * rows * p, first + n == 0 ? 0.0f : 1.0f, dwg);
    }
  }
}

} // namespace

void registerConvOps(Registry &r) {
  r["graph.conv2d"] = conv2dKernel;
  r["graph.conv2d_input_grad"] = conv2dInputGradKernel;
  r["graph.conv2d_filter_grad"] = conv2dFilterGradKernel;
}

} // namespace cleave::cuda
