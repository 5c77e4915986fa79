//===- Window.h - Output sizes of sliding-window ops ------------*- C++ -*-===//
//
// The rule of ShapeInference.cpp's windowOutput, shared by convolution and
// pooling. Internal to the kernel library.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_KERNELS_WINDOW_H
#define CLEAVE_RUNTIME_KERNELS_WINDOW_H

#include <cstdint>

namespace cleave::kernels::detail {

inline int64_t windowOutput(int64_t in, int64_t kernel, int64_t stride,
                            int64_t padLo, int64_t padHi, int64_t dilation) {
  int64_t effective = dilation * (kernel - 1) + 1;
  int64_t span = in + padLo + padHi - effective;
  return span < 0 ? 0 : span / stride + 1;
}

/// The range [lo, hi) of outputs o whose input coordinate o * stride +
/// offset lies in [0, size).
inline void validRange(int64_t outputs, int64_t stride, int64_t offset,
                       int64_t size, int64_t &lo, int64_t &hi) {
  lo = 0;
  while (lo < outputs && lo * stride + offset < 0)
    ++lo;
  hi = outputs;
  while (hi > lo && (hi - 1) * stride + offset >= size)
    --hi;
}

} // namespace cleave::kernels::detail

#endif // CLEAVE_RUNTIME_KERNELS_WINDOW_H
