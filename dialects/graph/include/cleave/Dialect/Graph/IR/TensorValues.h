//===- TensorValues.h - Reading the elements of tensor constants -*- C++ -*-===//
//
// The one way cleave reads the contents of a tensor constant (a
// `graph.constant`'s value, a `graph.param`'s initial value), whatever
// holds them: a dense attribute (splat or not) or a `dense_resource` blob,
// which the ONNX importer uses for every weight over 1 MiB. MLIR's own
// `ElementsAttr::getValues<APFloat>()` does not iterate resources (it ends
// in llvm_unreachable), so the evaluator, the program emitter and the
// passes read through these functions, which report what they cannot read
// through `emitError` instead of aborting.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_DIALECT_GRAPH_IR_TENSORVALUES_H
#define CLEAVE_DIALECT_GRAPH_IR_TENSORVALUES_H

#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <cstdint>
#include <string>
#include <vector>

namespace cleave::graph {

using EmitErrorFn = llvm::function_ref<mlir::InFlightDiagnostic()>;

/// Every element converted to fp32 (integers by value, booleans as 0 / 1).
mlir::FailureOr<std::vector<float>> readFloatElements(mlir::ElementsAttr attr,
                                                      EmitErrorFn emitError);

/// Every element of an integer or boolean constant as int64 (signed types
/// sign-extended, unsigned and i1 zero-extended).
mlir::FailureOr<std::vector<int64_t>>
readIntegerElements(mlir::ElementsAttr attr, EmitErrorFn emitError);

/// How a tensor's elements are stored in memory, little-endian.
enum class ElementStorage { F32, BF16, F16, Bool, Int8, Int16, Int32, Int64 };

/// The elements converted to `storage` as little-endian bytes (bools one
/// byte each; integers truncated to the width, as the attribute holds them
/// at the type's width already). A float stored as an integer or the other
/// way round is refused.
mlir::FailureOr<std::string> readElementBytes(mlir::ElementsAttr attr,
                                              ElementStorage storage,
                                              EmitErrorFn emitError);

} // namespace cleave::graph

#endif // CLEAVE_DIALECT_GRAPH_IR_TENSORVALUES_H
