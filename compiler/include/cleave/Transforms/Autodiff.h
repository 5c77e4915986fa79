//===- Autodiff.h - Reverse-mode derivative rules of graph ops --*- C++ -*-===//

#ifndef CLEAVE_TRANSFORMS_AUTODIFF_H
#define CLEAVE_TRANSFORMS_AUTODIFF_H

#include "mlir/IR/DialectRegistry.h"

namespace cleave {

/// Attaches AutodiffOpInterface to every differentiable graph op.
void registerAutodiffExternalModels(mlir::DialectRegistry &registry);

} // namespace cleave

#endif // CLEAVE_TRANSFORMS_AUTODIFF_H
