//===- ActivationEstimate.h - What a training step keeps for backward -*- C++ -*-===//
//
// The bytes of forward values that the backward pass reads: what one
// microbatch's forward leaves in memory until its backward (the stash).
// Found by building the training step on a copy of the module, as the
// lowering will, rather than by a per-op rule: which operand a gradient
// reads (a convolution its input, a ReLU its output) is each op's autodiff
// rule's business.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_LOWERING_ACTIVATIONESTIMATE_H
#define CLEAVE_LOWERING_ACTIVATIONESTIMATE_H

#include "cleave/Transforms/Optimizer.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace cleave::lowering {

/// Bytes of @forward's values read by the backward of `module`'s training
/// step (the module is not changed). An inference graph (first result not a
/// scalar) gets the cross-entropy loss the lowering appends.
mlir::FailureOr<double> stashedActivationBytes(mlir::ModuleOp module,
                                               Optimizer optimizer);

/// The same bytes by where their producers sit among the graph's residual
/// blocks (numberResidualBlocks): [0] before the first block, [1 + k] block
/// k, the last entry after the last block. Pipeline stages of a graph
/// without transformer layers keep what their blocks stash. With
/// `recompute`, the step is first rewritten as the lowering rewrites it
/// under full recomputation (cleave-recompute over residual blocks): the
/// blocks then stash their inputs and outputs only.
mlir::FailureOr<std::vector<double>>
stashedActivationBytesByBlock(mlir::ModuleOp module, Optimizer optimizer,
                              bool recompute = false);

} // namespace cleave::lowering

#endif // CLEAVE_LOWERING_ACTIVATIONESTIMATE_H
