//===- OpAttributes.h - Kernel options from an instruction's attributes -*- C++
//-*-===//
//
// Every backend's kernels read the same attributes the same way: the
// options of a convolution or pooling window and the kind of an
// activation's gradient. One reading, so that the backends cannot disagree
// on what an instruction asks for.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_EXECUTOR_OPATTRIBUTES_H
#define CLEAVE_RUNTIME_EXECUTOR_OPATTRIBUTES_H

#include "cleave/runtime/executor/OpContext.h"
#include "cleave/runtime/kernels/Conv.h"
#include "cleave/runtime/kernels/Elementwise.h"

#include <string>

namespace cleave::executor {

/// strides (2), padding (4: top, left, bottom, right), dilations (2) and
/// groups of a conv2d or its gradients; throws std::invalid_argument.
kernels::Conv2dOptions convOptions(const OpContext &c);
/// kernel (2), strides (2) and padding (4) of a pooling op.
kernels::Pool2dOptions poolOptions(const OpContext &c);
/// graph.activation_grad's `kind`: relu, gelu, gelu_tanh, silu, sigmoid,
/// tanh or erf.
kernels::UnaryOp activationKind(const std::string &kind);

} // namespace cleave::executor

#endif // CLEAVE_RUNTIME_EXECUTOR_OPATTRIBUTES_H
