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

#include <optional>

namespace cleave {

/// The transformer dimensions of `module`; none (no diagnostic) when it is
/// not a transformer (no attention layers, or a zoo family without them),
/// which the search then plans op by op; failure, with a diagnostic at the
/// module, when it is one whose dimensions cannot be read consistently.
mlir::FailureOr<std::optional<cost::TransformerModel>>
getTransformerModel(mlir::ModuleOp module);

/// The dimensions of an imported decoder whose attention is fused
/// (cleave-fuse-attention) and causal, for the serving planner: layers,
/// heads and key/value heads from the graph.attention ops, the width and
/// vocabulary from the token embedding's table, the MLP's width from its
/// projections (three of them a layer: gated), learned positions where a
/// second table is read by row. Failure, with a diagnostic, when it has no
/// causal fused attention or no embedding table.
mlir::FailureOr<cost::TransformerModel>
readDecoderModel(mlir::ModuleOp module);

} // namespace cleave

#endif // CLEAVE_ANALYSIS_TRANSFORMERSHAPE_H
