//===- OnnxConstantFolding.h - Host-side evaluation of ONNX ops -*- C++ -*-===//
//
// Evaluates ONNX operators on HostTensors. The converters call these when
// every input of a node is known at import time: that turns the exporters'
// run-time shape arithmetic (Shape -> Gather -> Unsqueeze -> Concat) into
// static Reshape, Expand and Slice targets, and causal masks (Slice of a
// bool buffer -> Not -> Where) into constants.
//
// Each function follows the ONNX semantics of the operator it is named for
// and fails with a message (no prefix) when the inputs are invalid.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_IMPORTERS_ONNX_ONNXCONSTANTFOLDING_H
#define CLEAVE_IMPORTERS_ONNX_ONNXCONSTANTFOLDING_H

#include "OnnxShapeRules.h"
#include "OnnxTensors.h"

namespace cleave::onnx_import {

/// Whether a result of `shape` is small enough to compute on the host.
inline bool fitsOnHost(llvm::ArrayRef<int64_t> shape) {
  return product(shape) <= kMaxHostElements;
}

enum class HostBinaryOp {
  Add,
  Sub,
  Mul,
  Div,
  /// ONNX Mod: integers take the divisor's sign (Python's %), floats
  /// the dividend's (C's fmod, which ONNX requires of them: fmod = 1).
  Mod,
  /// ONNX Mod with fmod = 1: the dividend's sign for integers too (C's %).
  FMod,
  Pow,
  Max,
  Min,
  Equal,
  Less,
  Greater,
  LessOrEqual,
  GreaterOrEqual,
  And,
  Or,
  Xor,
};

enum class HostUnaryOp {
  Neg,
  Not,
  Abs,
  Relu,
  Sqrt,
  Exp,
  Log,
  Erf,
  Sigmoid,
  Tanh,
  Reciprocal,
  Floor,
  Ceil,
};

/// Broadcasting binary arithmetic, comparison (bool result) or logic.
llvm::Expected<HostTensor> foldBinary(HostBinaryOp op, const HostTensor &lhs,
                                      const HostTensor &rhs);
llvm::Expected<HostTensor> foldUnary(HostUnaryOp op, const HostTensor &input);
/// cond ? lhs : rhs, broadcasting all three.
llvm::Expected<HostTensor>
foldWhere(const HostTensor &cond, const HostTensor &lhs, const HostTensor &rhs);
/// Cast to ONNX data type `to` (floats truncate towards zero into ints).
/// A float that no integer of `to` holds (NaN, an infinity, out of range)
/// becomes what ONNX Runtime computes on x86-64: the "integer indefinite"
/// INT64_MIN (64-bit) or INT32_MIN (narrower, truncated to the type); the
/// count of such elements goes to `*unrepresentable` when given (the
/// caller warns: T5's relative-position buckets cast log(0) = -inf, and a
/// later Where discards it).
llvm::Expected<HostTensor> foldCast(const HostTensor &input, int32_t to,
                                    int64_t *unrepresentable = nullptr);
/// Gather along a normalized `axis`; negative indices count from the end.
llvm::Expected<HostTensor> foldGather(const HostTensor &data,
                                      const HostTensor &indices, int64_t axis);
/// Transpose by a valid permutation.
HostTensor foldTranspose(const HostTensor &input,
                         llvm::ArrayRef<int64_t> permutation);
/// Concatenation along a normalized `axis`.
llvm::Expected<HostTensor> foldConcat(llvm::ArrayRef<const HostTensor *> inputs,
                                      int64_t axis);
/// Slice by bounds from computeSlice (any step sign).
HostTensor foldSlice(const HostTensor &input, const SliceSpec &spec);
/// Expand: numpy broadcast of `input` against `shape`.
llvm::Expected<HostTensor> foldExpand(const HostTensor &input,
                                      llvm::ArrayRef<int64_t> shape);
/// Range(start, limit, delta) of scalars.
llvm::Expected<HostTensor> foldRange(const HostTensor &start,
                                     const HostTensor &limit,
                                     const HostTensor &delta);

} // namespace cleave::onnx_import

#endif // CLEAVE_IMPORTERS_ONNX_ONNXCONSTANTFOLDING_H
