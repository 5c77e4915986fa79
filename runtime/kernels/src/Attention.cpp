//===- Attention.cpp - Softmax and rotary embeddings ----------------------===//

#include "cleave/runtime/kernels/Attention.h"

#include "FastMath.h"
#include "Parallel.h"
#include "Support.h"
#include "VectorClones.h"

#include <cmath>
#include <limits>

namespace cleave::kernels {
namespace {

/// Softmax of the first `valid` of `n` elements spaced `stride` apart; the
/// rest are masked to 0. Rows along the last axis (the common case) are
/// compiled with a constant unit stride and reduce in lanes (FastMath.h),
/// so that their loops vectorise.
template <bool UnitStride>
CLEAVE_CLONE_INLINE void softmaxRow(const float *x, float *y, int64_t n,
                                    int64_t valid, int64_t rowStride) {
  int64_t stride = UnitStride ? 1 : rowStride;
  if (valid <= 0) {
    for (int64_t j = 0; j < n; ++j)
      y[j * stride] = 0.0f;
    return;
  }
  float max = -std::numeric_limits<float>::infinity();
  if (UnitStride)
    max = detail::rowMax(x, valid);
  else
    for (int64_t j = 0; j < valid; ++j)
      max = std::max(max, x[j * stride]);
  for (int64_t j = 0; j < valid; ++j)
    y[j * stride] = detail::expOrZero(x[j * stride] - max);
  float sum = 0.0f;
  if (UnitStride)
    sum = detail::rowSum(y, valid);
  else
    for (int64_t j = 0; j < valid; ++j)
      sum += y[j * stride];
  float inv = 1.0f / sum;
  for (int64_t j = 0; j < valid; ++j)
    y[j * stride] *= inv;
  for (int64_t j = valid; j < n; ++j)
    y[j * stride] = 0.0f;
}

template <bool UnitStride>
CLEAVE_CLONE_INLINE void softmaxBackwardRow(const float *y, const float *g,
                                            float *d, int64_t n,
                                            int64_t rowStride) {
  int64_t stride = UnitStride ? 1 : rowStride;
  float dot = 0.0f;
  if (UnitStride)
    dot = detail::rowDot(y, g, n);
  else
    for (int64_t j = 0; j < n; ++j)
      dot += y[j * stride] * g[j * stride];
  for (int64_t j = 0; j < n; ++j)
    d[j * stride] = y[j * stride] * (g[j * stride] - dot);
}

/// [outer, axis, inner] view of a tensor around `axis`.
struct AxisSplit {
  int64_t outer, length, inner;
};

AxisSplit splitAt(const Shape &shape, int64_t axis) {
  return {detail::product(shape, 0, axis), shape[axis],
          detail::product(shape, axis + 1, shape.size())};
}

/// Rotates each (x[i], x[i + d/2]) pair by +angle (forward) or -angle.
void rotate(ConstTensorRef in, double theta, RowOffsets positions,
            TensorRef out, bool inverse, const char *kernel) {
  CLEAVE_CHECK_IN(kernel, in.rank() == 4,
                  "expects [batch, seq, heads, head_dim], got " +
                      shapeString(in.shape));
  CLEAVE_CHECK_IN(kernel, in.shape[3] % 2 == 0, "head_dim must be even");
  CLEAVE_CHECK_IN(kernel, theta > 0, "theta must be positive");
  detail::checkShape(out, in.shape, kernel, "result");
  int64_t batch = in.shape[0], seq = in.shape[1], heads = in.shape[2];
  int64_t dim = in.shape[3], half = dim / 2;
  std::vector<float> cosines(half), sines(half);
  for (int64_t s = 0; s < seq; ++s) {
    double pos = static_cast<double>(positions(s));
    for (int64_t i = 0; i < half; ++i) {
      double angle = pos * std::pow(theta, -2.0 * static_cast<double>(i) / dim);
      cosines[i] = static_cast<float>(std::cos(angle));
      sines[i] =
          static_cast<float>(inverse ? -std::sin(angle) : std::sin(angle));
    }
    const float *c = cosines.data(), *sn = sines.data();
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t h = 0; h < heads; ++h) {
        int64_t base = ((b * seq + s) * heads + h) * dim;
        const float *x = in.data + base;
        float *y = out.data + base;
        // Two passes so that out may alias in.
        for (int64_t i = 0; i < half; ++i) {
          float lo = x[i], hi = x[i + half];
          y[i] = lo * c[i] - hi * sn[i];
          y[i + half] = hi * c[i] + lo * sn[i];
        }
      }
    }
  }
}

} // namespace

namespace {

/// Softmax rows [r0, r1): row r holds elements o * length * inner + i +
/// k * inner (o = r / inner, i = r % inner); causal rows (inner 1, along
/// the last axis of [..., queries, keys]) mask the keys after `place` of
/// their query.
CLEAVE_VECTOR_CLONES void softmaxRows(const float *in, float *out,
                                      AxisSplit s, bool causal,
                                      int64_t queries, RowOffsets place,
                                      int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    int64_t o = r / s.inner, i = r % s.inner;
    int64_t base = o * s.length * s.inner + i;
    if (causal) {
      int64_t valid = std::max<int64_t>(
          0, std::min(s.length, place(r % queries) + 1));
      softmaxRow<true>(in + base, out + base, s.length, valid, 1);
    } else if (s.inner == 1) {
      softmaxRow<true>(in + base, out + base, s.length, s.length, 1);
    } else {
      softmaxRow<false>(in + base, out + base, s.length, s.length, s.inner);
    }
  }
}

/// softmaxBackward's rows [r0, r1), numbered as softmaxRows'.
CLEAVE_VECTOR_CLONES void softmaxBackwardRows(const float *y, const float *g,
                                              float *d, AxisSplit s,
                                              int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    int64_t o = r / s.inner, i = r % s.inner;
    int64_t base = o * s.length * s.inner + i;
    if (s.inner == 1)
      softmaxBackwardRow<true>(y + base, g + base, d + base, s.length, 1);
    else
      softmaxBackwardRow<false>(y + base, g + base, d + base, s.length,
                                s.inner);
  }
}

} // namespace

// Each row on one thread, so any split gives the same bits.
void softmax(ConstTensorRef in, int64_t axis, bool causal, TensorRef out,
             std::optional<RowOffsets> causalShift) {
  detail::checkAxis(axis, in.rank(), "softmax");
  detail::checkShape(out, in.shape, "softmax", "result");
  CLEAVE_CHECK(!causal || (in.rank() >= 2 && axis == in.rank() - 1),
               "causal softmax must run along the last axis of a [..., query, "
               "key] tensor");
  AxisSplit s = splitAt(in.shape, axis);
  int64_t queries = causal ? in.shape[in.rank() - 2] : 1;
  RowOffsets place = causalShift.value_or(RowOffsets(s.length - queries));
  int64_t rows = s.outer * s.inner;
  detail::parallelFor(rows, rows * s.length, [&](int64_t r0, int64_t r1) {
    softmaxRows(in.data, out.data, s, causal, queries, place, r0, r1);
  });
}

void softmaxBackward(ConstTensorRef out, ConstTensorRef dOut, int64_t axis,
                     TensorRef dIn) {
  detail::checkAxis(axis, out.rank(), "softmaxBackward");
  detail::checkShape(dOut, out.shape, "softmaxBackward", "dOut");
  detail::checkShape(dIn, out.shape, "softmaxBackward", "dIn");
  AxisSplit s = splitAt(out.shape, axis);
  int64_t rows = s.outer * s.inner;
  detail::parallelFor(rows, rows * s.length, [&](int64_t r0, int64_t r1) {
    softmaxBackwardRows(out.data, dOut.data, dIn.data, s, r0, r1);
  });
}

void ropeAt(ConstTensorRef in, double theta, IndexRef positions, bool inverse,
            TensorRef out) {
  CLEAVE_CHECK_IN("ropeAt", in.rank() == 4 && in.shape[3] % 2 == 0,
                  "expects [batch, seq, heads, even head_dim], got " +
                      shapeString(in.shape));
  CLEAVE_CHECK_IN("ropeAt",
                  positions.rank() == 2 && positions.shape[0] == in.shape[0] &&
                      positions.shape[1] == in.shape[1],
                  "positions " + shapeString(positions.shape) +
                      " are not [batch, seq] of " + shapeString(in.shape));
  detail::checkShape(out, in.shape, "ropeAt", "result");
  int64_t rows = in.shape[0] * in.shape[1], heads = in.shape[2];
  // Each token rotated by its own angles: a slice [1, 1, heads, dim] of
  // the plain kernel at that position.
  for (int64_t r = 0; r < rows; ++r) {
    int64_t base = r * heads * in.shape[3];
    Shape one{1, 1, heads, in.shape[3]};
    rotate({in.data + base, one}, theta, RowOffsets(positions.data[r]),
           {out.data + base, one}, inverse, "ropeAt");
  }
}

void rope(ConstTensorRef in, double theta, RowOffsets positions,
          TensorRef out) {
  rotate(in, theta, positions, out, /*inverse=*/false, "rope");
}

void ropeBackward(ConstTensorRef dOut, double theta, RowOffsets positions,
                  TensorRef dIn) {
  rotate(dOut, theta, positions, dIn, /*inverse=*/true, "ropeBackward");
}

} // namespace cleave::kernels
