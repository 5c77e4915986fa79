//===- Support.h - Checks and loops shared by the kernels -------*- C++ -*-===//
//
// Internal to the kernel library.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_KERNELS_SUPPORT_H
#define CLEAVE_RUNTIME_KERNELS_SUPPORT_H

#include "cleave/runtime/kernels/Tensor.h"

#include <algorithm>
#include <cstring>
#include <string>

/// Throws std::invalid_argument naming the kernel when `cond` fails. The
/// message is only built on failure, so checks cost a branch.
#define CLEAVE_CHECK(cond, message)                                            \
  do {                                                                         \
    if (!(cond))                                                               \
      ::cleave::kernels::throwInvalid(std::string(__func__) + ": " +           \
                                      (message));                              \
  } while (false)

/// CLEAVE_CHECK for helpers that know the name of the kernel they serve.
#define CLEAVE_CHECK_IN(kernel, cond, message)                                 \
  do {                                                                         \
    if (!(cond))                                                               \
      ::cleave::kernels::throwInvalid(std::string(kernel) + ": " + (message)); \
  } while (false)

namespace cleave::kernels::detail {

template <typename T>
inline void checkShape(const View<T> &v, const Shape &expected,
                       const char *kernel, const char *name) {
  if (v.shape != expected)
    throwInvalid(std::string(kernel) + ": " + name + " must be " +
                 shapeString(expected) + ", got " + shapeString(v.shape));
}

/// Like checkShape, but an absent (null) view passes.
template <typename T>
inline void checkOptionalShape(const View<T> &v, const Shape &expected,
                               const char *kernel, const char *name) {
  if (v.data)
    checkShape(v, expected, kernel, name);
}

inline void checkAxis(int64_t axis, int64_t rank, const char *kernel) {
  if (axis < 0 || axis >= rank)
    throwInvalid(std::string(kernel) + ": axis " + std::to_string(axis) +
                 " is out of range for rank " + std::to_string(rank));
}

inline int64_t product(const Shape &shape, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i)
    p *= shape[i];
  return p;
}

inline void zero(float *data, int64_t n) {
  if (n > 0)
    std::memset(data, 0, sizeof(float) * n);
}

inline void zero(const TensorRef &t) {
  if (t.data)
    zero(t.data, t.numElements());
}

} // namespace cleave::kernels::detail

#endif // CLEAVE_RUNTIME_KERNELS_SUPPORT_H
