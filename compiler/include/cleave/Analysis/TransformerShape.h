//===- TransformerShape.h - A module's transformer dimensions ---*- C++ -*-===//
//
// The knob-level cost model prices transformers from their dimensions. This
// reads them off a module built by the model zoo (its recorded family and
// settings). Graphs of other origins are priced op by op by the search.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_ANALYSIS_TRANSFORMERSHAPE_H
#define CLEAVE_ANALYSIS_TRANSFORMERSHAPE_H

#include "cleave/cost_model/TransformerPlan.h"
#include "mlir/IR/BuiltinOps.h"

namespace cleave {

/// The transformer dimensions of `module`, or a diagnostic at the module
/// explaining why there are none (not a zoo transformer).
mlir::FailureOr<cost::TransformerModel> getTransformerModel(mlir::ModuleOp module);

} // namespace cleave

#endif // CLEAVE_ANALYSIS_TRANSFORMERSHAPE_H
