//===- Float16.h - The fp16 storage type on the host ------------*- C++ -*-===//
//
// IEEE binary16: 5 exponent bits, 10 mantissa bits, largest finite 65504.
// Plans of fp16 precision store activations, their gradients and the
// collectives that carry them in it, as bf16 plans do (Bfloat16.h), with
// dynamic loss scaling keeping the gradients inside its range. The
// conversions are the compiler's (_Float16, GCC 12 and Clang on x86-64 and
// AArch64): round to nearest even, overflow to infinity, subnormals kept,
// NaN stays NaN; the same results as CUDA's __float2half_rn.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_COMM_FLOAT16_H
#define CLEAVE_RUNTIME_COMM_FLOAT16_H

#include <cstdint>
#include <cstring>

namespace cleave::comm {

static_assert(sizeof(_Float16) == 2, "_Float16 is IEEE binary16");

inline uint16_t floatToF16(float x) {
  _Float16 h = static_cast<_Float16>(x);
  uint16_t u;
  std::memcpy(&u, &h, sizeof u);
  return u;
}

inline float f16ToFloat(uint16_t u) {
  _Float16 h;
  std::memcpy(&h, &u, sizeof h);
  return static_cast<float>(h);
}

/// The same over arrays; on x86-64 processors with F16C (every one since
/// 2012) eight at a time with the same rounding, which the scalar
/// conversions (library calls there) are ten times too slow for: the
/// executor widens and narrows every fp16 operand of every kernel.
void floatsToF16(const float *in, uint16_t *out, int64_t n);
void f16ToFloats(const uint16_t *in, float *out, int64_t n);

} // namespace cleave::comm

#endif // CLEAVE_RUNTIME_COMM_FLOAT16_H
