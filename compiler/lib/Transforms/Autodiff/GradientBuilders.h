//===- GradientBuilders.h - Helpers shared by derivative rules --*- C++ -*-===//

#ifndef CLEAVE_TRANSFORMS_AUTODIFF_GRADIENTBUILDERS_H
#define CLEAVE_TRANSFORMS_AUTODIFF_GRADIENTBUILDERS_H

#include "cleave/Dialect/Graph/IR/GraphOps.h"
#include "mlir/IR/Builders.h"

namespace cleave::autodiff {

/// Sums a gradient over the dimensions that broadcasting expanded, so that
/// it gets the type of the operand that was broadcast.
mlir::Value reduceTo(mlir::OpBuilder &b, mlir::Location loc, mlir::Value grad,
                     mlir::Type target);

/// A constant tensor of `type` filled with `value`.
mlir::Value splat(mlir::OpBuilder &b, mlir::Location loc, mlir::Type type,
                  double value);

/// A rank-0 constant of `elementType`.
mlir::Value scalar(mlir::OpBuilder &b, mlir::Location loc,
                   mlir::Type elementType, double value);

mlir::Type elementTypeOf(mlir::Value v);

/// The derivative rule of an op as a free function; `Rule` adapts it to
/// the interface, so each rule reads as plain code.
template <typename OpT>
using RuleFn = llvm::LogicalResult (*)(OpT, mlir::OpBuilder &,
                                       mlir::ValueRange,
                                       llvm::SmallVectorImpl<mlir::Value> &);

template <typename OpT, RuleFn<OpT> Fn>
struct Rule
    : public graph::AutodiffOpInterface::ExternalModel<Rule<OpT, Fn>, OpT> {
  llvm::LogicalResult
  buildGradients(mlir::Operation *op, mlir::OpBuilder &b,
                 mlir::ValueRange resultGrads,
                 llvm::SmallVectorImpl<mlir::Value> &operandGrads) const {
    return Fn(llvm::cast<OpT>(op), b, resultGrads, operandGrads);
  }
};

template <typename OpT, RuleFn<OpT> Fn> void attach(mlir::MLIRContext *ctx) {
  OpT::template attachInterface<Rule<OpT, Fn>>(*ctx);
}

// Registration of each group of rules (one file each).
void attachElementwiseRules(mlir::MLIRContext *ctx);
void attachStructuredRules(mlir::MLIRContext *ctx);
void attachMovementRules(mlir::MLIRContext *ctx);
void attachCollectiveRules(mlir::MLIRContext *ctx);

} // namespace cleave::autodiff

#endif // CLEAVE_TRANSFORMS_AUTODIFF_GRADIENTBUILDERS_H
