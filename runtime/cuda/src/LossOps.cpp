//===- LossOps.cpp - cross_entropy and its grad on the GPU ----------------===//
//
// The host half of the loss family: operands, attributes and shape checks
// as runtime/executor/src/ComputeKernels.cpp and GradKernels.cpp have them
// (and the CPU kernels check), then a launch on the compute stream. The
// labels stay in device memory, so their range is not checked here; see
// kernels/Loss.h for what an out-of-range label gives.
//
//===----------------------------------------------------------------------===//

#include "Context.h"
#include "OpChecks.h"
#include "Ops.h"
#include "kernels/Loss.h"

#include <stdexcept>
#include <string>

namespace cleave::cuda {
namespace {

using executor::OpContext;
using kernels::Shape;

/// [rows, classes] of logits [N..., C] with labels [N...].
struct LossDims {
  int64_t rows, classes;
};

LossDims lossDims(const char *op, const Shape &logits, const Shape &labels) {
  if (logits.empty() || Shape(logits.begin(), logits.end() - 1) != labels)
    fail(op, "labels " + kernels::shapeString(labels) +
                 " must have the shape of the logits " +
                 kernels::shapeString(logits) + " without the class dimension");
  return {kernels::numElements(labels), logits.back()};
}

void checkScalar(const char *op, const char *what, const Shape &shape) {
  if (!shape.empty())
    fail(op,
         std::string(what) + " must be [], got " + kernels::shapeString(shape));
}

void crossEntropyKernel(OpContext &c) {
  c.expectArity(2, 1);
  const char *op = "cross_entropy";
  kernels::ConstTensorRef logits = c.in(0);
  kernels::IndexRef labels = c.index(1);
  kernels::TensorRef loss = c.out(0);
  LossDims d = lossDims(op, logits.shape, labels.shape);
  checkScalar(op, "loss", loss.shape);
  Scratch workspace(crossEntropyWorkspaceBytes(d.rows));
  launchCrossEntropy(logits.data, labels.data, loss.data, d.rows, d.classes,
                     c.attrInt("ignore_index", -100), workspace.data(),
                     context().compute);
}

// Operands: logits, labels, grad.
void crossEntropyGradKernel(OpContext &c) {
  c.expectArity(3, 1);
  const char *op = "cross_entropy_grad";
  kernels::ConstTensorRef logits = c.in(0), dLoss = c.in(2);
  kernels::IndexRef labels = c.index(1);
  kernels::TensorRef dLogits = c.out(0);
  LossDims d = lossDims(op, logits.shape, labels.shape);
  checkScalar(op, "dLoss", dLoss.shape);
  if (dLogits.shape != logits.shape)
    fail(op, "dLogits must be " + kernels::shapeString(logits.shape) +
                 ", got " + kernels::shapeString(dLogits.shape));
  Scratch workspace(crossEntropyGradWorkspaceBytes());
  launchCrossEntropyGrad(logits.data, labels.data, dLoss.data, dLogits.data,
                         d.rows, d.classes, c.attrInt("ignore_index", -100),
                         workspace.data(), context().compute);
}

} // namespace

void registerLossOps(Registry &r) {
  r["graph.cross_entropy"] = crossEntropyKernel;
  r["graph.cross_entropy_grad"] = crossEntropyGradKernel;
}

} // namespace cleave::cuda
