//===- FastMath.h - Branch-free exp and row reductions ----------*- C++ -*-===//
//
// Internal to the kernel library: what the element-wise, softmax and loss
// kernels share so that their loops vectorise (and run in the AVX2 and
// AVX-512 clones of VectorClones.h).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_KERNELS_FASTMATH_H
#define CLEAVE_RUNTIME_KERNELS_FASTMATH_H

#include "VectorClones.h"

#include <cstdint>
#include <cstring>
#include <limits>

namespace cleave::kernels::detail {

/// e^x without branches or calls, so that the loops using it vectorise
/// (libm's expf and tanhf do not, and made GELU a fifth of a GPT step on
/// the CPU): x = n ln2 + r with |r| <= ln2 / 2, e^r from its degree-6
/// Taylor polynomial (relative error below 2e-7 there), 2^n built in the
/// exponent bits. The rounding adds and subtracts 1.5 * 2^23, which IEEE
/// arithmetic (no -ffast-math here) keeps. x is clamped to [-87, 88]: below
/// e^-87 the result stays 1.6e-38 (see expOrZero), above e^88 finite.
CLEAVE_CLONE_INLINE float fastExp(float x) {
  x = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);
  float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  float r = x - n * 0.693145751953125f;  // ln 2, high part
  r = r - n * 1.428606765330187045e-06f; // ln 2, low part
  float p = 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof(scale));
  return p * scale;
}

/// fastExp, but 0 below e^-87 (where fp32 is about to turn subnormal): a
/// probability of a masked (-inf) logit is exactly 0, as with libm's expf.
CLEAVE_CLONE_INLINE float expOrZero(float x) {
  float e = fastExp(x);
  return x < -87.0f ? 0.0f : e;
}

/// Lanes of the row reductions: independent partial results the vectoriser
/// keeps in one register each, combined in a fixed order, so a row's
/// result does not depend on the instruction set.
constexpr int kReduceLanes = 16;

/// The lanes' sum, added pairwise (lane j + lane j + 8, then + 4, ...).
CLEAVE_CLONE_INLINE float addLanes(float (&lane)[kReduceLanes]) {
  for (int width = kReduceLanes / 2; width > 0; width /= 2)
    for (int j = 0; j < width; ++j)
      lane[j] += lane[j + width];
  return lane[0];
}

/// The largest of x[0..n) (-inf for n = 0; NaNs are skipped, as by a
/// sequential std::max). Exact, so the lanes change nothing.
CLEAVE_CLONE_INLINE float rowMax(const float *x, int64_t n) {
  float lane[kReduceLanes];
  for (float &l : lane)
    l = -std::numeric_limits<float>::infinity();
  int64_t full = n - n % kReduceLanes;
  for (int64_t i = 0; i < full; i += kReduceLanes)
    for (int j = 0; j < kReduceLanes; ++j)
      lane[j] = x[i + j] > lane[j] ? x[i + j] : lane[j];
  float max = -std::numeric_limits<float>::infinity();
  for (int64_t i = full; i < n; ++i)
    max = x[i] > max ? x[i] : max;
  for (float l : lane)
    max = l > max ? l : max;
  return max;
}

/// The sum of x[0..n) in kReduceLanes interleaved partial sums, added
/// pairwise at the end: a fixed order on every instruction set, and a
/// rounding error that grows with n / kReduceLanes instead of n.
CLEAVE_CLONE_INLINE float rowSum(const float *x, int64_t n) {
  float lane[kReduceLanes] = {};
  int64_t full = n - n % kReduceLanes;
  for (int64_t i = 0; i < full; i += kReduceLanes)
    for (int j = 0; j < kReduceLanes; ++j)
      lane[j] += x[i + j];
  for (int64_t i = full; i < n; ++i)
    lane[i - full] += x[i];
  return addLanes(lane);
}

/// The sum of x[i] * y[i] over [0..n), in the lanes of rowSum.
CLEAVE_CLONE_INLINE float rowDot(const float *x, const float *y, int64_t n) {
  float lane[kReduceLanes] = {};
  int64_t full = n - n % kReduceLanes;
  for (int64_t i = 0; i < full; i += kReduceLanes)
    for (int j = 0; j < kReduceLanes; ++j)
      lane[j] += x[i + j] * y[i + j];
  for (int64_t i = full; i < n; ++i)
    lane[i - full] += x[i] * y[i];
  return addLanes(lane);
}

/// The sum of expOrZero(x[i] - shift) over [0..n), in the lanes of rowSum.
CLEAVE_CLONE_INLINE float rowSumExp(const float *x, float shift, int64_t n) {
  float lane[kReduceLanes] = {};
  int64_t full = n - n % kReduceLanes;
  for (int64_t i = 0; i < full; i += kReduceLanes)
    for (int j = 0; j < kReduceLanes; ++j)
      lane[j] += expOrZero(x[i + j] - shift);
  for (int64_t i = full; i < n; ++i)
    lane[i - full] += expOrZero(x[i] - shift);
  return addLanes(lane);
}

} // namespace cleave::kernels::detail

#endif // CLEAVE_RUNTIME_KERNELS_FASTMATH_H
