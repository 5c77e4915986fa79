//===- IntegerValues.h - The evaluator's integer arithmetic -----*- C++ -*-===//
//
// The evaluator holds every integer tensor as int64 values (the exact value;
// a uint64 above 2^63 as its bit pattern). Arithmetic on an integer type
// narrower than that runs the runtime's kernel in the type itself, so the
// evaluator wraps around, divides and compares exactly as the runtime does.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_EVALUATOR_INTEGERVALUES_H
#define CLEAVE_EVALUATOR_INTEGERVALUES_H

#include "cleave/Evaluator/GraphEvaluator.h"
#include "cleave/runtime/kernels/IntegerElementwise.h"
#include "cleave/runtime/kernels/Tensor.h"

#include "mlir/IR/BuiltinTypes.h"

namespace cleave::evaluator {

/// op(lhs, rhs) in integer type `type`, broadcasting. Throws
/// std::invalid_argument on a zero divisor.
kernels::IndexTensor integerBinary(kernels::IntegerOp op,
                                   mlir::IntegerType type,
                                   const kernels::IndexTensor &lhs,
                                   const kernels::IndexTensor &rhs);

/// predicate(lhs, rhs) on values of integer type `type` (unsigned types
/// compare as unsigned).
kernels::MaskTensor integerCompare(kernels::ComparePredicate predicate,
                                   mlir::IntegerType type,
                                   const kernels::IndexTensor &lhs,
                                   const kernels::IndexTensor &rhs);

/// Each value converted to integer type `type` (wrapping, as a C cast).
kernels::IndexTensor wrapTo(mlir::IntegerType type,
                            const kernels::IndexTensor &values);

/// A held value of element type `from` converted to `to`, as the runtime's
/// cast does: every float type is computed in fp32 here, so a float-to-float
/// cast copies; floats to integers truncate towards zero and wrap into the
/// type; anything to bool is "not zero"; bool is 0 or 1.
EvalTensor castHeld(const EvalTensor &in, mlir::Type from, mlir::Type to);

/// The int64 the evaluator holds for an attribute's element of `type`.
int64_t heldValue(mlir::IntegerType type, const llvm::APInt &value);

} // namespace cleave::evaluator

#endif // CLEAVE_EVALUATOR_INTEGERVALUES_H
