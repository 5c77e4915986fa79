//===- Elementwise.h - Elementwise kernels and their gradients --*- C++ -*-===//
//
// graph.add, sub, mul, div, pow, max, min and where broadcast like numpy; the
// gradient of a broadcast operand sums the output gradient over the
// dimensions it was broadcast along. The unary ops and dropout keep shapes.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_KERNELS_ELEMENTWISE_H
#define CLEAVE_RUNTIME_KERNELS_ELEMENTWISE_H

#include "cleave/runtime/kernels/Tensor.h"

namespace cleave::kernels {

enum class BinaryOp { Add, Sub, Mul, Div, Pow, Max, Min };

/// out = op(lhs, rhs); out has the broadcast shape of the operands.
void binary(BinaryOp op, ConstTensorRef lhs, ConstTensorRef rhs, TensorRef out);

/// Gradients of `binary` given dOut (the broadcast shape). dLhs and dRhs
/// have their operand's shape; either may be null.
///
/// At ties max and min split the gradient evenly between the operands: the
/// ops are commutative, so their gradient must not depend on operand order
/// (PyTorch and JAX do the same). pow's gradient w.r.t. the exponent is 0
/// where the base is not positive, and w.r.t. the base is 0 where the
/// exponent is 0, as in PyTorch.
void binaryBackward(BinaryOp op, ConstTensorRef lhs, ConstTensorRef rhs,
                    ConstTensorRef dOut, TensorRef dLhs, TensorRef dRhs);

/// The predicates of graph.compare.
enum class ComparePredicate { Eq, Ne, Lt, Le, Gt, Ge };

/// `name` ("eq", "ne", "lt", "le", "gt", "ge") as a predicate; throws
/// std::invalid_argument for anything else.
ComparePredicate comparePredicate(const std::string &name);

/// out = predicate(lhs, rhs), one byte per element of the operands'
/// broadcast shape (IEEE comparisons: an infinity equals itself, NaN
/// nothing).
void compare(ComparePredicate predicate, ConstTensorRef lhs,
             ConstTensorRef rhs, View<uint8_t> out);

/// out = condition ? lhs : rhs, broadcasting all three.
void where(MaskRef condition, ConstTensorRef lhs, ConstTensorRef rhs,
           TensorRef out);

/// Gradients of `where` w.r.t. lhs and rhs (either may be null).
void whereBackward(MaskRef condition, ConstTensorRef dOut, TensorRef dLhs,
                   TensorRef dRhs);

enum class UnaryOp {
  Neg,
  Exp,
  Log,
  Sqrt,
  Rsqrt,
  Relu,
  Tanh,
  Erf,
  Sigmoid,
  Silu,
  /// x * Phi(x) with the exact normal CDF (erf form).
  Gelu,
  /// The tanh approximation 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
  GeluTanh,
  Sin,
  Cos,
  Atan,
  /// The largest integer not above x; its derivative is 0.
  Floor,
};

/// out = op(in); out may alias in.
void unary(UnaryOp op, ConstTensorRef in, TensorRef out);

/// dIn = dOut * op'(in). The derivative is recomputed from the input, so
/// only the input needs to be kept; relu's derivative at 0 is 0.
void unaryBackward(UnaryOp op, ConstTensorRef in, ConstTensorRef dOut,
                   TensorRef dIn);

/// Whether dropout keeps the element with row-major index `index` of the
/// whole (unpartitioned) tensor: the index-th output of the splitmix64
/// stream started at `seed`, as a uniform number in [0, 1), is at least
/// `ratio`. Being a pure function of (seed, index), any partition of the
/// tensor draws the same mask as the whole.
bool dropoutKeeps(int64_t seed, int64_t index, double ratio);

/// out = keep ? in / (1 - ratio) : 0, with the mask of `dropoutKeeps` taken
/// at the element's row-major index. out may alias in. The gradient is the
/// same function of dOut with the same seed.
void dropout(ConstTensorRef in, double ratio, int64_t seed, TensorRef out);

/// Dropout of the block of a larger tensor of shape `globalShape` that
/// starts at `offsets`: element i of the block draws the mask of its index
/// in the whole tensor, so a sharded run matches the unsharded one.
void dropoutBlock(ConstTensorRef in, double ratio, int64_t seed,
                  const Shape &globalShape, const Shape &offsets,
                  TensorRef out);

} // namespace cleave::kernels

#endif // CLEAVE_RUNTIME_KERNELS_ELEMENTWISE_H
