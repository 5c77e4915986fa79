//===- Bfloat16.h - The bf16 storage type on the host -----------*- C++ -*-===//
//
// bfloat16 is fp32's upper half: 8 exponent bits, 7 mantissa bits. Plans of
// bf16 precision store activations, their gradients and the collectives
// that carry them in it; arithmetic stays fp32 (kernels widen their
// operands and round their results, collectives sum pairs in fp32). The
// rounding is to nearest, ties to even, as PyTorch's and CUDA's
// __float2bfloat16 round; NaN stays NaN.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_COMM_BFLOAT16_H
#define CLEAVE_RUNTIME_COMM_BFLOAT16_H

#include <cstdint>
#include <cstring>

namespace cleave::comm {

inline uint16_t floatToBf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) // NaN: keep it one (quiet)
    return static_cast<uint16_t>((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

inline float bf16ToFloat(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

inline void floatsToBf16(const float *in, uint16_t *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = floatToBf16(in[i]);
}

inline void bf16ToFloats(const uint16_t *in, float *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = bf16ToFloat(in[i]);
}

} // namespace cleave::comm

#endif // CLEAVE_RUNTIME_COMM_BFLOAT16_H
