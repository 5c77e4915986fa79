//===- OnnxShapeRules.h - Shape rules of ONNX operators ---------*- C++ -*-===//
//
// ONNX's own rules for axes, Reshape targets (0 and -1), Squeeze, Unsqueeze,
// Flatten and Slice bounds (negative and clamped starts and ends). The host
// folding and the graph-dialect conversion of these operators share them,
// so a constant and a run-time tensor get the same shape.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_IMPORTERS_ONNX_ONNXSHAPERULES_H
#define CLEAVE_IMPORTERS_ONNX_ONNXSHAPERULES_H

#include "OnnxTensors.h"

#include "llvm/Support/Error.h"

namespace cleave::onnx_import {

/// Maps `axis` in [-rank, rank) to [0, rank).
llvm::Expected<int64_t> normalizeAxis(int64_t axis, int64_t rank);
/// Normalizes every axis and rejects repeated ones.
llvm::Expected<Shape> normalizeAxes(llvm::ArrayRef<int64_t> axes, int64_t rank);

/// Reshape's target: 0 copies the input dimension (unless `allowZero`), one
/// -1 takes what is left.
llvm::Expected<Shape> computeReshape(llvm::ArrayRef<int64_t> input,
                                     llvm::ArrayRef<int64_t> target,
                                     bool allowZero);
/// Squeeze: removes `axes` (all size-1 dimensions when `axes` is null).
llvm::Expected<Shape> computeSqueeze(llvm::ArrayRef<int64_t> input,
                                     const Shape *axes);
/// Unsqueeze: inserts size-1 dimensions at `axes` of the result.
llvm::Expected<Shape> computeUnsqueeze(llvm::ArrayRef<int64_t> input,
                                       llvm::ArrayRef<int64_t> axes);
/// Flatten: [prod(input[:axis]), prod(input[axis:])].
llvm::Expected<Shape> computeFlatten(llvm::ArrayRef<int64_t> input,
                                     int64_t axis);
/// numpy broadcasting; an error names both shapes.
llvm::Expected<Shape> broadcast(llvm::ArrayRef<int64_t> a,
                                llvm::ArrayRef<int64_t> b);

/// Per input dimension: first element, step and result size of a Slice.
struct SliceSpec {
  Shape starts, steps, sizes;
};

/// Slice bounds after ONNX's rules: negative starts and ends count from
/// the end, then clamp to the dimension; `axes` and `steps` may be empty
/// (all leading axes, step 1).
llvm::Expected<SliceSpec> computeSlice(llvm::ArrayRef<int64_t> input,
                                       llvm::ArrayRef<int64_t> starts,
                                       llvm::ArrayRef<int64_t> ends,
                                       llvm::ArrayRef<int64_t> axes,
                                       llvm::ArrayRef<int64_t> steps);

} // namespace cleave::onnx_import

#endif // CLEAVE_IMPORTERS_ONNX_ONNXSHAPERULES_H
