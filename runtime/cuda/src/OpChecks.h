//===- OpChecks.h - Operand checks of the CUDA kernels' glue ----*- C++ -*-===//
//
// Shape and argument errors found before anything is enqueued, thrown as
// std::invalid_argument (the executor adds the rank and instruction), worded
// the same way in every op family.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_CUDA_SRC_OPCHECKS_H
#define CLEAVE_RUNTIME_CUDA_SRC_OPCHECKS_H

#include "cleave/runtime/kernels/Tensor.h"

#include <stdexcept>
#include <string>

namespace cleave::cuda {

/// Throws "op: message".
[[noreturn]] inline void fail(const char *op, const std::string &message) {
  throw std::invalid_argument(std::string(op) + ": " + message);
}

/// "op: what must be [..], got [..]" unless the shapes are equal.
inline void checkShape(const char *op, const char *what,
                       const kernels::Shape &shape,
                       const kernels::Shape &expected) {
  if (shape != expected)
    fail(op, std::string(what) + " must be " + kernels::shapeString(expected) +
                 ", got " + kernels::shapeString(shape));
}

template <typename View>
void checkShape(const char *op, const char *what, const View &view,
                const kernels::Shape &expected) {
  checkShape(op, what, view.shape, expected);
}

/// Like checkShape, but an absent (null) view passes.
template <typename View>
void checkOptionalShape(const char *op, const char *what, const View &view,
                        const kernels::Shape &expected) {
  if (view.data)
    checkShape(op, what, view.shape, expected);
}

/// "what has shape [..], expected [..]" unless the shapes are equal (the
/// executor already names the op).
inline void expectShape(const kernels::Shape &actual,
                        const kernels::Shape &expected, const char *what) {
  if (actual != expected)
    throw std::invalid_argument(std::string(what) + " has shape " +
                                kernels::shapeString(actual) + ", expected " +
                                kernels::shapeString(expected));
}

/// "what must be [..], got [..]" unless the shapes are equal (the executor
/// already names the op).
inline void requireShape(const kernels::Shape &actual,
                         const kernels::Shape &expected,
                         const std::string &what) {
  if (actual != expected)
    throw std::invalid_argument(what + " must be " +
                                kernels::shapeString(expected) + ", got " +
                                kernels::shapeString(actual));
}

} // namespace cleave::cuda

#endif // CLEAVE_RUNTIME_CUDA_SRC_OPCHECKS_H
