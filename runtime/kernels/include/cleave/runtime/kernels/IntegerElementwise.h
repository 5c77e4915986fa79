//===- IntegerElementwise.h - Integer arithmetic of imported models -*- C++ -*-===//
//
// ONNX models compute on integers at run time: position ids from an
// attention mask, index arithmetic, the clamps and remainders of quantised
// pre-processing. These kernels compute graph.add, sub, mul, div, max, min,
// mod, compare and where on the integer element types the plan stores
// (int8 to int64, uint8 to uint64) at their own width, broadcasting like
// numpy. Arithmetic wraps around in the type, as numpy's and ONNX
// Runtime's do; division truncates towards zero; a zero divisor is an
// error, not a crash.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_KERNELS_INTEGERELEMENTWISE_H
#define CLEAVE_RUNTIME_KERNELS_INTEGERELEMENTWISE_H

#include "cleave/runtime/kernels/Elementwise.h"

#include <cstdint>
#include <optional>

namespace cleave::kernels {

/// The integer operations. Mod takes the divisor's sign (Python's %, ONNX's
/// Mod with fmod = 0); FMod the dividend's (C's %, fmod = 1). The shifts
/// give 0 for a shift by the type's width or more (or a negative one).
enum class IntegerOp {
  Add,
  Sub,
  Mul,
  Div,
  Max,
  Min,
  Mod,
  FMod,
  ShiftLeft,
  ShiftRight
};

/// The integer counterpart of a float binary op (graph.add ... graph.min
/// on integer operands); none for pow.
std::optional<IntegerOp> integerOpOf(BinaryOp op);

/// out = op(lhs, rhs), broadcasting. Throws std::invalid_argument on a zero
/// divisor (Div, Mod, FMod) or mismatched shapes.
template <typename T>
void integerBinary(IntegerOp op, View<const T> lhs, View<const T> rhs,
                   View<T> out);

/// out = predicate(lhs, rhs) as 0/1 bytes, broadcasting.
/// Instantiated for float and the integer types; compare() is the float one.
template <typename T>
void compareValues(ComparePredicate predicate, View<const T> lhs,
                   View<const T> rhs, View<uint8_t> out);

/// out = condition ? lhs : rhs, broadcasting all three. Instantiated for
/// float, bool bytes and the integer types; where() is the float one.
template <typename T>
void whereValues(MaskRef condition, View<const T> lhs, View<const T> rhs,
                 View<T> out);

} // namespace cleave::kernels

#endif // CLEAVE_RUNTIME_KERNELS_INTEGERELEMENTWISE_H
