//===- Conv2d.cpp - 2-D convolution through im2col and sgemm --------------===//
//
// Per image and group, the input patches are unrolled into a column matrix
// [Cg * KH * KW, OH * OW] (im2col) so that the convolution is one sgemm with
// the group's filter [Og, Cg * KH * KW]. The gradients are the two other
// products of the same matrices; the input gradient's columns are folded
// back onto the image (col2im). A 1x1 convolution with stride 1 and no
// padding needs no unrolling: the image already is its column matrix.
//
//===----------------------------------------------------------------------===//

#include "cleave/runtime/kernels/Conv.h"

#include "Gemm.h"
#include "Window.h"

namespace cleave::kernels {
namespace {

struct ConvGeometry {
  int64_t batch, channels, height, width;
  int64_t outChannels, kh, kw;
  int64_t outHeight, outWidth;
  int64_t groups, groupIn, groupOut;
  int64_t sh, sw, padTop, padLeft, dh, dw;
  bool direct;

  int64_t colRows() const { return groupIn * kh * kw; }
  int64_t colCols() const { return outHeight * outWidth; }
  int64_t filterGroupSize() const { return groupOut * colRows(); }
};

ConvGeometry geometry(const Shape &input, const Shape &filter,
                      const Conv2dOptions &o, const char *kernel) {
  CLEAVE_CHECK_IN(kernel, input.size() == 4 && filter.size() == 4,
                  "expects an NCHW input and an OIHW filter, got " +
                      shapeString(input) + " and " + shapeString(filter));
  CLEAVE_CHECK_IN(kernel,
                  o.strides[0] > 0 && o.strides[1] > 0 && o.dilations[0] > 0 &&
                      o.dilations[1] > 0,
                  "strides and dilations must be positive");
  for (int64_t p : o.padding)
    CLEAVE_CHECK_IN(kernel, p >= 0, "padding must not be negative");
  ConvGeometry g;
  g.batch = input[0];
  g.channels = input[1];
  g.height = input[2];
  g.width = input[3];
  g.outChannels = filter[0];
  g.kh = filter[2];
  g.kw = filter[3];
  g.groups = o.groups;
  CLEAVE_CHECK_IN(kernel,
                  g.groups > 0 && g.channels % g.groups == 0 &&
                      g.outChannels % g.groups == 0,
                  "groups = " + std::to_string(g.groups) +
                      " must divide the input and output channels");
  g.groupIn = g.channels / g.groups;
  g.groupOut = g.outChannels / g.groups;
  CLEAVE_CHECK_IN(kernel, filter[1] == g.groupIn,
                  "filter " + shapeString(filter) + " expects " +
                      std::to_string(filter[1]) +
                      " input channels per group, the input has " +
                      std::to_string(g.groupIn));
  g.sh = o.strides[0];
  g.sw = o.strides[1];
  g.padTop = o.padding[0];
  g.padLeft = o.padding[1];
  g.dh = o.dilations[0];
  g.dw = o.dilations[1];
  g.outHeight = detail::windowOutput(g.height, g.kh, g.sh, o.padding[0],
                                     o.padding[2], g.dh);
  g.outWidth = detail::windowOutput(g.width, g.kw, g.sw, o.padding[1],
                                    o.padding[3], g.dw);
  CLEAVE_CHECK_IN(kernel, g.outHeight > 0 && g.outWidth > 0,
                  "the window is larger than the padded input");
  g.direct = g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 &&
             o.padding == std::array<int64_t, 4>{0, 0, 0, 0};
  return g;
}

/// Unrolls one group of one image, x [Cg, H, W], into col [Cg*KH*KW, OH*OW].
void im2col(const ConvGeometry &g, const float *x, float *col) {
  int64_t oh = g.outHeight, ow = g.outWidth;
  for (int64_t c = 0; c < g.groupIn; ++c)
    for (int64_t ki = 0; ki < g.kh; ++ki)
      for (int64_t kj = 0; kj < g.kw; ++kj) {
        float *row = col + ((c * g.kh + ki) * g.kw + kj) * oh * ow;
        int64_t colOffset = kj * g.dw - g.padLeft, lo, hi;
        detail::validRange(ow, g.sw, colOffset, g.width, lo, hi);
        for (int64_t y = 0; y < oh; ++y) {
          float *r = row + y * ow;
          int64_t ih = y * g.sh - g.padTop + ki * g.dh;
          if (ih < 0 || ih >= g.height) {
            detail::zero(r, ow);
            continue;
          }
          const float *src = x + (c * g.height + ih) * g.width;
          detail::zero(r, lo);
          if (g.sw == 1)
            std::memcpy(r + lo, src + lo + colOffset,
                        sizeof(float) * (hi - lo));
          else
            for (int64_t xo = lo; xo < hi; ++xo)
              r[xo] = src[xo * g.sw + colOffset];
          detail::zero(r + hi, ow - hi);
        }
      }
}

/// Adds the columns back onto the image: the adjoint of im2col.
void col2im(const ConvGeometry &g, const float *col, float *x) {
  int64_t oh = g.outHeight, ow = g.outWidth;
  for (int64_t c = 0; c < g.groupIn; ++c)
    for (int64_t ki = 0; ki < g.kh; ++ki)
      for (int64_t kj = 0; kj < g.kw; ++kj) {
        const float *row = col + ((c * g.kh + ki) * g.kw + kj) * oh * ow;
        int64_t colOffset = kj * g.dw - g.padLeft, lo, hi;
        detail::validRange(ow, g.sw, colOffset, g.width, lo, hi);
        for (int64_t y = 0; y < oh; ++y) {
          int64_t ih = y * g.sh - g.padTop + ki * g.dh;
          if (ih < 0 || ih >= g.height)
            continue;
          const float *r = row + y * ow;
          float *dst = x + (c * g.height + ih) * g.width;
          for (int64_t xo = lo; xo < hi; ++xo)
            dst[xo * g.sw + colOffset] += r[xo];
        }
      }
}

/// The caller's workspace, or one owned here.
class Workspace {
public:
  Workspace(float *given, int64_t size) : data_(given) {
    if (!data_ && size > 0) {
      owned_.resize(size);
      data_ = owned_.data();
    }
  }
  float *get() const { return data_; }

private:
  float *data_;
  std::vector<float> owned_;
};

} // namespace

Shape conv2dShape(const Shape &input, const Shape &filter,
                  const Conv2dOptions &options) {
  ConvGeometry g = geometry(input, filter, options, "conv2d");
  return {g.batch, g.outChannels, g.outHeight, g.outWidth};
}

int64_t conv2dWorkspaceSize(const Shape &input, const Shape &filter,
                            const Conv2dOptions &options) {
  ConvGeometry g = geometry(input, filter, options, "conv2d");
  return g.direct ? 0 : g.colRows() * g.colCols();
}

void conv2d(ConstTensorRef input, ConstTensorRef filter, ConstTensorRef bias,
            const Conv2dOptions &options, TensorRef out, float *workspace) {
  ConvGeometry g = geometry(input.shape, filter.shape, options, "conv2d");
  detail::checkShape(out, conv2dShape(input.shape, filter.shape, options),
                     "conv2d", "result");
  detail::checkOptionalShape(bias, {g.outChannels}, "conv2d", "bias");
  Workspace ws(workspace, g.direct ? 0 : g.colRows() * g.colCols());
  int64_t imageIn = g.channels * g.height * g.width;
  int64_t planeOut = g.colCols();
  for (int64_t b = 0; b < g.batch; ++b)
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      const float *x =
          input.data + b * imageIn + grp * g.groupIn * g.height * g.width;
      const float *col = x;
      if (!g.direct) {
        im2col(g, x, ws.get());
        col = ws.get();
      }
      float *y = out.data + (b * g.outChannels + grp * g.groupOut) * planeOut;
      detail::gemm(false, false, g.groupOut, planeOut, g.colRows(),
                   filter.data + grp * g.filterGroupSize(), col, 0.0f, y);
    }
  if (!bias)
    return;
  for (int64_t b = 0; b < g.batch; ++b)
    for (int64_t oc = 0; oc < g.outChannels; ++oc) {
      float *y = out.data + (b * g.outChannels + oc) * planeOut;
      float v = bias.data[oc];
      for (int64_t i = 0; i < planeOut; ++i)
        y[i] += v;
    }
}

void conv2dBackward(ConstTensorRef input, ConstTensorRef filter,
                    const Conv2dOptions &options, ConstTensorRef dOut,
                    TensorRef dInput, TensorRef dFilter, TensorRef dBias,
                    float *workspace) {
  ConvGeometry g =
      geometry(input.shape, filter.shape, options, "conv2dBackward");
  detail::checkShape(dOut, conv2dShape(input.shape, filter.shape, options),
                     "conv2dBackward", "dOut");
  detail::checkOptionalShape(dInput, input.shape, "conv2dBackward", "dInput");
  detail::checkOptionalShape(dFilter, filter.shape, "conv2dBackward",
                             "dFilter");
  detail::checkOptionalShape(dBias, {g.outChannels}, "conv2dBackward", "dBias");
  bool unroll = !g.direct && (dInput || dFilter);
  Workspace ws(workspace, unroll ? g.colRows() * g.colCols() : 0);
  int64_t planeIn = g.height * g.width, planeOut = g.colCols();
  int64_t imageIn = g.channels * planeIn;
  detail::zero(dFilter);
  // col2im accumulates; the direct case writes each group's slice whole.
  if (!g.direct)
    detail::zero(dInput);
  for (int64_t b = 0; b < g.batch; ++b)
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      int64_t inOffset = b * imageIn + grp * g.groupIn * planeIn;
      const float *dy =
          dOut.data + (b * g.outChannels + grp * g.groupOut) * planeOut;
      if (dFilter) {
        const float *col = input.data + inOffset;
        if (!g.direct) {
          im2col(g, col, ws.get());
          col = ws.get();
        }
        // dW [Og, CgKK] += dY [Og, OHW] * col^T.
        detail::gemm(false, true, g.groupOut, g.colRows(), planeOut, dy, col,
                     1.0f, dFilter.data + grp * g.filterGroupSize());
      }
      if (dInput) {
        const float *w = filter.data + grp * g.filterGroupSize();
        // dcol [CgKK, OHW] = W^T [CgKK, Og] * dY.
        if (g.direct) {
          detail::gemm(true, false, g.colRows(), planeOut, g.groupOut, w, dy,
                       0.0f, dInput.data + inOffset);
        } else {
          detail::gemm(true, false, g.colRows(), planeOut, g.groupOut, w, dy,
                       0.0f, ws.get());
          col2im(g, ws.get(), dInput.data + inOffset);
        }
      }
    }
  if (!dBias)
    return;
  detail::zero(dBias);
  for (int64_t b = 0; b < g.batch; ++b)
    for (int64_t oc = 0; oc < g.outChannels; ++oc) {
      const float *dy = dOut.data + (b * g.outChannels + oc) * planeOut;
      float sum = 0.0f;
      for (int64_t i = 0; i < planeOut; ++i)
        sum += dy[i];
      dBias.data[oc] += sum;
    }
}

void conv2dInputGrad(ConstTensorRef dOut, ConstTensorRef filter,
                     const Conv2dOptions &options, TensorRef dInput,
                     float *workspace) {
  // The input's values do not enter its own gradient, only its shape.
  conv2dBackward(ConstTensorRef(nullptr, dInput.shape), filter, options, dOut,
                 dInput, {}, {}, workspace);
}

void conv2dFilterGrad(ConstTensorRef input, ConstTensorRef dOut,
                      const Conv2dOptions &options, TensorRef dFilter,
                      float *workspace) {
  conv2dBackward(input, ConstTensorRef(nullptr, dFilter.shape), options, dOut,
                 {}, dFilter, {}, workspace);
}

} // namespace cleave::kernels
