//===- ElementwiseUnary.cpp - Unary activations and dropout ---------------===//

#include "cleave/runtime/kernels/Elementwise.h"

#include "FastMath.h"
#include "Parallel.h"
#include "Support.h"
#include "VectorClones.h"

#include <cmath>
#include <cstdint>
#include <cstring>

namespace cleave::kernels {
namespace {

constexpr float kTwoOverSqrtPi = 1.12837916709551257390f;
constexpr float kInvSqrt2 = 0.70710678118654752440f;
constexpr float kInvSqrt2Pi = 0.39894228040143267794f;
constexpr float kSqrt2OverPi = 0.79788456080286535588f;
constexpr float kGeluCubic = 0.044715f;

using detail::fastExp;

CLEAVE_CLONE_INLINE float sigmoid(float x) {
  return 1.0f / (1.0f + fastExp(-x));
}

template <typename F>
CLEAVE_CLONE_INLINE void map(const float *in, float *out, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = f(in[i]);
}

template <typename F>
CLEAVE_CLONE_INLINE void mapGrad(const float *in, const float *g, float *d,
                                 int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i)
    d[i] = g[i] * f(in[i]);
}

/// splitmix64's `index`-th output for `seed` (Steele et al., 2014): a
/// counter-based generator, so any element's draw is computed directly.
inline uint64_t splitmix64(uint64_t seed, uint64_t index) {
  uint64_t z = seed + (index + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// Dropout keeps an element when the top 53 bits of its draw, as a uniform
/// number u = bits * 2^-53, satisfy u >= ratio, i.e. bits >= ceil(ratio *
/// 2^53); ratio * 2^53 is exact, so the integer test is the same decision.
inline uint64_t keepThreshold(double ratio) {
  return static_cast<uint64_t>(std::ceil(ratio * 9007199254740992.0));
}

inline bool keeps(uint64_t seed, uint64_t index, uint64_t threshold) {
  return (splitmix64(seed, index) >> 11) >= threshold;
}

void checkRatio(double ratio, const char *kernel) {
  if (!(ratio >= 0.0 && ratio < 1.0))
    throwInvalid(std::string(kernel) + ": ratio must be in [0, 1), got " +
                 std::to_string(ratio));
}

/// Dropout of `n` contiguous elements whose whole-tensor indices start at
/// `first`.
void dropoutRun(const float *in, float *out, int64_t n, uint64_t seed,
                uint64_t first, uint64_t threshold, float scale) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = keeps(seed, first + i, threshold) ? in[i] * scale : 0.0f;
}

} // namespace

namespace {

/// n elements of unary(): a thread's share (the vector clones' loops).
CLEAVE_VECTOR_CLONES void unaryElements(UnaryOp op, const float *x, float *y,
                                        int64_t n) {
  switch (op) {
  case UnaryOp::Neg:
    return map(x, y, n, [](float v) { return -v; });
  case UnaryOp::Exp:
    return map(x, y, n, [](float v) { return std::exp(v); });
  case UnaryOp::Log:
    return map(x, y, n, [](float v) { return std::log(v); });
  case UnaryOp::Sqrt:
    return map(x, y, n, [](float v) { return std::sqrt(v); });
  case UnaryOp::Rsqrt:
    return map(x, y, n, [](float v) { return 1.0f / std::sqrt(v); });
  case UnaryOp::Relu:
    return map(x, y, n, [](float v) { return v > 0.0f ? v : 0.0f; });
  case UnaryOp::Tanh:
    return map(x, y, n, [](float v) { return std::tanh(v); });
  case UnaryOp::Erf:
    return map(x, y, n, [](float v) { return std::erf(v); });
  case UnaryOp::Sigmoid:
    return map(x, y, n, [](float v) { return sigmoid(v); });
  case UnaryOp::Silu:
    return map(x, y, n, [](float v) { return v * sigmoid(v); });
  case UnaryOp::Gelu:
    return map(x, y, n, [](float v) {
      return 0.5f * v * (1.0f + std::erf(v * kInvSqrt2));
    });
  case UnaryOp::GeluTanh:
    return map(x, y, n, [](float v) {
      // 0.5 v (1 + tanh u) = v sigmoid(2u), without the cancellation of
      // 1 + tanh u near -1.
      float u = kSqrt2OverPi * (v + kGeluCubic * v * v * v);
      return v / (1.0f + fastExp(-2.0f * u));
    });
  case UnaryOp::Sin:
    return map(x, y, n, [](float v) { return std::sin(v); });
  case UnaryOp::Cos:
    return map(x, y, n, [](float v) { return std::cos(v); });
  case UnaryOp::Atan:
    return map(x, y, n, [](float v) { return std::atan(v); });
  case UnaryOp::Floor:
    return map(x, y, n, [](float v) { return std::floor(v); });
  }
}

/// n elements of unaryBackward().
CLEAVE_VECTOR_CLONES void unaryGradElements(UnaryOp op, const float *x,
                                            const float *g, float *d,
                                            int64_t n) {
  switch (op) {
  case UnaryOp::Neg:
    return mapGrad(x, g, d, n, [](float) { return -1.0f; });
  case UnaryOp::Exp:
    return mapGrad(x, g, d, n, [](float v) { return std::exp(v); });
  case UnaryOp::Log:
    return mapGrad(x, g, d, n, [](float v) { return 1.0f / v; });
  case UnaryOp::Sqrt:
    return mapGrad(x, g, d, n, [](float v) { return 0.5f / std::sqrt(v); });
  case UnaryOp::Rsqrt:
    return mapGrad(x, g, d, n, [](float v) {
      float r = 1.0f / std::sqrt(v);
      return -0.5f * r * r * r;
    });
  case UnaryOp::Relu:
    return mapGrad(x, g, d, n, [](float v) { return v > 0.0f ? 1.0f : 0.0f; });
  case UnaryOp::Tanh:
    return mapGrad(x, g, d, n, [](float v) {
      float t = std::tanh(v);
      return 1.0f - t * t;
    });
  case UnaryOp::Erf:
    return mapGrad(x, g, d, n,
                   [](float v) { return kTwoOverSqrtPi * std::exp(-v * v); });
  case UnaryOp::Sigmoid:
    return mapGrad(x, g, d, n, [](float v) {
      float s = sigmoid(v);
      return s * (1.0f - s);
    });
  case UnaryOp::Silu:
    return mapGrad(x, g, d, n, [](float v) {
      float s = sigmoid(v);
      return s * (1.0f + v * (1.0f - s));
    });
  case UnaryOp::Gelu:
    return mapGrad(x, g, d, n, [](float v) {
      float cdf = 0.5f * (1.0f + std::erf(v * kInvSqrt2));
      return cdf + v * kInvSqrt2Pi * std::exp(-0.5f * v * v);
    });
  case UnaryOp::GeluTanh:
    return mapGrad(x, g, d, n, [](float v) {
      // With s = sigmoid(2u): 1 + tanh u = 2s and 1 - tanh^2 u = 4s(1 - s).
      float u = kSqrt2OverPi * (v + kGeluCubic * v * v * v);
      float s = 1.0f / (1.0f + fastExp(-2.0f * u));
      float du = kSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * v * v);
      return s + 2.0f * v * s * (1.0f - s) * du;
    });
  case UnaryOp::Sin:
    return mapGrad(x, g, d, n, [](float v) { return std::cos(v); });
  case UnaryOp::Cos:
    return mapGrad(x, g, d, n, [](float v) { return -std::sin(v); });
  case UnaryOp::Atan:
    return mapGrad(x, g, d, n, [](float v) { return 1.0f / (1.0f + v * v); });
  case UnaryOp::Floor:
    return mapGrad(x, g, d, n, [](float) { return 0.0f; });
  }
}

} // namespace

// Element-wise, so any split over the threads gives the same bits.
void unary(UnaryOp op, ConstTensorRef in, TensorRef out) {
  detail::checkShape(out, in.shape, "unary", "result");
  int64_t n = in.numElements();
  detail::parallelFor(n, n, [&](int64_t b, int64_t e) {
    unaryElements(op, in.data + b, out.data + b, e - b);
  });
}

void unaryBackward(UnaryOp op, ConstTensorRef in, ConstTensorRef dOut,
                   TensorRef dIn) {
  detail::checkShape(dOut, in.shape, "unaryBackward", "dOut");
  detail::checkShape(dIn, in.shape, "unaryBackward", "dIn");
  int64_t n = in.numElements();
  detail::parallelFor(n, n, [&](int64_t b, int64_t e) {
    unaryGradElements(op, in.data + b, dOut.data + b, dIn.data + b, e - b);
  });
}

bool dropoutKeeps(int64_t seed, int64_t index, double ratio) {
  return keeps(static_cast<uint64_t>(seed), static_cast<uint64_t>(index),
               keepThreshold(ratio));
}

void dropout(ConstTensorRef in, double ratio, int64_t seed, TensorRef out) {
  checkRatio(ratio, "dropout");
  detail::checkShape(out, in.shape, "dropout", "result");
  dropoutRun(in.data, out.data, in.numElements(), static_cast<uint64_t>(seed),
             0, keepThreshold(ratio), static_cast<float>(1.0 / (1.0 - ratio)));
}

void dropoutBlock(ConstTensorRef in, double ratio, int64_t seed,
                  const Shape &globalShape, const Shape &offsets,
                  TensorRef out) {
  checkRatio(ratio, "dropoutBlock");
  detail::checkShape(out, in.shape, "dropoutBlock", "result");
  size_t rank = in.shape.size();
  CLEAVE_CHECK(globalShape.size() == rank && offsets.size() == rank,
               "the block, its offsets and the whole shape differ in rank");
  for (size_t d = 0; d < rank; ++d)
    CLEAVE_CHECK(offsets[d] >= 0 && offsets[d] + in.shape[d] <= globalShape[d],
                 "block " + shapeString(in.shape) + " at " +
                     shapeString(offsets) + " exceeds " +
                     shapeString(globalShape));
  if (in.numElements() == 0)
    return;
  uint64_t threshold = keepThreshold(ratio);
  float scale = static_cast<float>(1.0 / (1.0 - ratio));
  if (rank == 0)
    return dropoutRun(in.data, out.data, 1, seed, 0, threshold, scale);

  // Walk the block row by row; each row is contiguous in the whole tensor.
  Shape globalStrides = rowMajorStrides(globalShape);
  int64_t rowLength = in.shape.back();
  int64_t rows = in.numElements() / rowLength;
  Shape index(rank, 0);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t first = 0;
    for (size_t d = 0; d < rank; ++d)
      first += (offsets[d] + index[d]) * globalStrides[d];
    dropoutRun(in.data + r * rowLength, out.data + r * rowLength, rowLength,
               static_cast<uint64_t>(seed), static_cast<uint64_t>(first),
               threshold, scale);
    for (size_t d = rank - 1; d-- > 0;) {
      if (++index[d] < in.shape[d])
        break;
      index[d] = 0;
    }
  }
}

} // namespace cleave::kernels
