//===- Pooling.cpp - Max, average and global average pooling (NCHW) -------===//

#include "cleave/runtime/kernels/Conv.h"

#include "Support.h"
#include "Window.h"

#include <limits>

namespace cleave::kernels {
namespace {

struct PoolGeometry {
  int64_t planes, height, width, outHeight, outWidth;
  int64_t kh, kw, sh, sw, padTop, padLeft;
};

PoolGeometry poolGeometry(const Shape &in, const Pool2dOptions &o,
                          const char *kernel) {
  CLEAVE_CHECK_IN(kernel, in.size() == 4,
                  "expects an NCHW input, got " + shapeString(in));
  CLEAVE_CHECK_IN(kernel, o.kernel[0] > 0 && o.kernel[1] > 0,
                  "kernel sizes must be positive");
  CLEAVE_CHECK_IN(kernel, o.strides[0] > 0 && o.strides[1] > 0,
                  "strides must be positive");
  for (int64_t p : o.padding)
    CLEAVE_CHECK_IN(kernel, p >= 0, "padding must not be negative");
  PoolGeometry g;
  g.planes = in[0] * in[1];
  g.height = in[2];
  g.width = in[3];
  g.kh = o.kernel[0];
  g.kw = o.kernel[1];
  g.sh = o.strides[0];
  g.sw = o.strides[1];
  g.padTop = o.padding[0];
  g.padLeft = o.padding[1];
  g.outHeight =
      detail::windowOutput(g.height, g.kh, g.sh, o.padding[0], o.padding[2], 1);
  g.outWidth =
      detail::windowOutput(g.width, g.kw, g.sw, o.padding[1], o.padding[3], 1);
  CLEAVE_CHECK_IN(kernel, g.outHeight > 0 && g.outWidth > 0,
                  "the window is larger than the padded input");
  return g;
}

/// The part of output (y, x)'s window inside the input: rows [r0, r1),
/// columns [c0, c1).
struct Window {
  int64_t r0, r1, c0, c1;
  int64_t count() const { return (r1 - r0) * (c1 - c0); }
};

Window window(const PoolGeometry &g, int64_t y, int64_t x) {
  int64_t top = y * g.sh - g.padTop, left = x * g.sw - g.padLeft;
  Window w{std::max<int64_t>(top, 0), std::min(top + g.kh, g.height),
           std::max<int64_t>(left, 0), std::min(left + g.kw, g.width)};
  w.r1 = std::max(w.r1, w.r0);
  w.c1 = std::max(w.c1, w.c0);
  return w;
}

/// Offset in the plane of the first maximum of the window, or -1 when the
/// window is wholly padding.
int64_t argmax(const PoolGeometry &g, const float *plane, const Window &w) {
  int64_t best = -1;
  float max = -std::numeric_limits<float>::infinity();
  for (int64_t r = w.r0; r < w.r1; ++r)
    for (int64_t c = w.c0; c < w.c1; ++c) {
      float v = plane[r * g.width + c];
      if (best < 0 || v > max) {
        max = v;
        best = r * g.width + c;
      }
    }
  return best;
}

} // namespace

Shape pool2dShape(const Shape &input, const Pool2dOptions &options) {
  PoolGeometry g = poolGeometry(input, options, "pool2d");
  return {input[0], input[1], g.outHeight, g.outWidth};
}

void maxPool2d(ConstTensorRef in, const Pool2dOptions &options, TensorRef out) {
  PoolGeometry g = poolGeometry(in.shape, options, "maxPool2d");
  detail::checkShape(out, pool2dShape(in.shape, options), "maxPool2d",
                     "result");
  int64_t planeIn = g.height * g.width, planeOut = g.outHeight * g.outWidth;
  for (int64_t p = 0; p < g.planes; ++p) {
    const float *x = in.data + p * planeIn;
    float *y = out.data + p * planeOut;
    for (int64_t oy = 0; oy < g.outHeight; ++oy)
      for (int64_t ox = 0; ox < g.outWidth; ++ox) {
        int64_t at = argmax(g, x, window(g, oy, ox));
        y[oy * g.outWidth + ox] = at < 0 ? 0.0f : x[at];
      }
  }
}

void maxPool2dBackward(ConstTensorRef in, const Pool2dOptions &options,
                       ConstTensorRef dOut, TensorRef dIn) {
  PoolGeometry g = poolGeometry(in.shape, options, "maxPool2dBackward");
  detail::checkShape(dOut, pool2dShape(in.shape, options), "maxPool2dBackward",
                     "dOut");
  detail::checkShape(dIn, in.shape, "maxPool2dBackward", "dIn");
  detail::zero(dIn);
  int64_t planeIn = g.height * g.width, planeOut = g.outHeight * g.outWidth;
  for (int64_t p = 0; p < g.planes; ++p) {
    const float *x = in.data + p * planeIn;
    const float *dy = dOut.data + p * planeOut;
    float *dx = dIn.data + p * planeIn;
    for (int64_t oy = 0; oy < g.outHeight; ++oy)
      for (int64_t ox = 0; ox < g.outWidth; ++ox) {
        int64_t at = argmax(g, x, window(g, oy, ox));
        if (at >= 0)
          dx[at] += dy[oy * g.outWidth + ox];
      }
  }
}

void avgPool2d(ConstTensorRef in, const Pool2dOptions &options, TensorRef out) {
  PoolGeometry g = poolGeometry(in.shape, options, "avgPool2d");
  detail::checkShape(out, pool2dShape(in.shape, options), "avgPool2d",
                     "result");
  int64_t planeIn = g.height * g.width, planeOut = g.outHeight * g.outWidth;
  for (int64_t p = 0; p < g.planes; ++p) {
    const float *x = in.data + p * planeIn;
    float *y = out.data + p * planeOut;
    for (int64_t oy = 0; oy < g.outHeight; ++oy)
      for (int64_t ox = 0; ox < g.outWidth; ++ox) {
        Window w = window(g, oy, ox);
        float sum = 0.0f;
        for (int64_t r = w.r0; r < w.r1; ++r)
          for (int64_t c = w.c0; c < w.c1; ++c)
            sum += x[r * g.width + c];
        y[oy * g.outWidth + ox] = w.count() ? sum / w.count() : 0.0f;
      }
  }
}

void avgPool2dBackward(ConstTensorRef dOut, const Pool2dOptions &options,
                       TensorRef dIn) {
  PoolGeometry g = poolGeometry(dIn.shape, options, "avgPool2dBackward");
  detail::checkShape(dOut, pool2dShape(dIn.shape, options), "avgPool2dBackward",
                     "dOut");
  detail::zero(dIn);
  int64_t planeIn = g.height * g.width, planeOut = g.outHeight * g.outWidth;
  for (int64_t p = 0; p < g.planes; ++p) {
    const float *dy = dOut.data + p * planeOut;
    float *dx = dIn.data + p * planeIn;
    for (int64_t oy = 0; oy < g.outHeight; ++oy)
      for (int64_t ox = 0; ox < g.outWidth; ++ox) {
        Window w = window(g, oy, ox);
        if (!w.count())
          continue;
        float share = dy[oy * g.outWidth + ox] / w.count();
        for (int64_t r = w.r0; r < w.r1; ++r)
          for (int64_t c = w.c0; c < w.c1; ++c)
            dx[r * g.width + c] += share;
      }
  }
}

void globalAvgPool(ConstTensorRef in, TensorRef out) {
  CLEAVE_CHECK(in.rank() == 4,
               "expects an NCHW input, got " + shapeString(in.shape));
  detail::checkShape(out, {in.shape[0], in.shape[1], 1, 1}, "globalAvgPool",
                     "result");
  int64_t planes = in.shape[0] * in.shape[1];
  int64_t plane = in.shape[2] * in.shape[3];
  for (int64_t p = 0; p < planes; ++p) {
    const float *x = in.data + p * plane;
    double sum = 0.0;
    for (int64_t i = 0; i < plane; ++i)
      sum += x[i];
    out.data[p] = plane ? static_cast<float>(sum / plane) : 0.0f;
  }
}

void globalAvgPoolBackward(ConstTensorRef dOut, TensorRef dIn) {
  CLEAVE_CHECK(dIn.rank() == 4,
               "expects an NCHW input, got " + shapeString(dIn.shape));
  detail::checkShape(dOut, {dIn.shape[0], dIn.shape[1], 1, 1},
                     "globalAvgPoolBackward", "dOut");
  int64_t planes = dIn.shape[0] * dIn.shape[1];
  int64_t plane = dIn.shape[2] * dIn.shape[3];
  for (int64_t p = 0; p < planes; ++p) {
    float share = plane ? dOut.data[p] / plane : 0.0f;
    float *dx = dIn.data + p * plane;
    for (int64_t i = 0; i < plane; ++i)
      dx[i] = share;
  }
}

} // namespace cleave::kernels
