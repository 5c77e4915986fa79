//===- NormalizationOps.cpp - layer_norm, rms_norm and grads on the GPU ---===//
//
// The host half of the normalisation family: operands, attributes and
// shape checks as runtime/executor/src/ComputeKernels.cpp and
// GradKernels.cpp have them (and the CPU kernels check), then a launch on
// the compute stream. A norm over input.shape[axis:] runs as rows of that
// many contiguous elements. batch_norm is not here (no GPT uses it).
//
//===----------------------------------------------------------------------===//

#include "Context.h"
#include "OpChecks.h"
#include "Ops.h"
#include "kernels/Normalization.h"

#include <stdexcept>
#include <string>

namespace cleave::cuda {
namespace {

using executor::OpContext;
using kernels::Shape;

/// [rows, n] with n the product of input.shape[axis:], and that shape (the
/// parameters').
struct NormDims {
  int64_t rows = 1, n = 1;
  Shape paramShape;
};

NormDims normDims(const char *op, const Shape &shape, int64_t axis) {
  int64_t rank = static_cast<int64_t>(shape.size());
  if (axis < 0 || axis >= rank)
    fail(op, "axis " + std::to_string(axis) + " is out of range for rank " +
                 std::to_string(rank));
  NormDims d;
  for (int64_t i = 0; i < axis; ++i)
    d.rows *= shape[i];
  for (int64_t i = axis; i < rank; ++i)
    d.n *= shape[i];
  d.paramShape.assign(shape.begin() + axis, shape.end());
  return d;
}

void layerNormKernel(OpContext &c) {
  c.expectArity(1, 3, 1);
  const char *op = "layer_norm";
  kernels::ConstTensorRef in = c.in(0), scale = c.inOpt(1), bias = c.inOpt(2);
  kernels::TensorRef out = c.out(0);
  NormDims d = normDims(op, in.shape, c.attrAxis("axis", in.rank()));
  checkShape(op, "result", out, in.shape);
  checkOptionalShape(op, "scale", scale, d.paramShape);
  checkOptionalShape(op, "bias", bias, d.paramShape);
  launchLayerNorm(in.data, scale.data, bias.data, out.data, d.rows, d.n,
                  c.attrFloat("epsilon"), context().compute);
}

void rmsNormKernel(OpContext &c) {
  c.expectArity(1, 2, 1);
  const char *op = "rms_norm";
  kernels::ConstTensorRef in = c.in(0), scale = c.inOpt(1);
  kernels::TensorRef out = c.out(0);
  NormDims d = normDims(op, in.shape, c.attrAxis("axis", in.rank()));
  checkShape(op, "result", out, in.shape);
  checkOptionalShape(op, "scale", scale, d.paramShape);
  launchRmsNorm(in.data, scale.data, out.data, d.rows, d.n,
                c.attrFloat("epsilon"), context().compute);
}

// Operands: input, grad, scale (optional); results dIn, dScale, dBias, each
// optional.
void layerNormGradKernel(OpContext &c) {
  c.expectArity(2, 3, 3);
  const char *op = "layer_norm_grad";
  kernels::ConstTensorRef in = c.in(0), dOut = c.in(1), scale = c.inOpt(2);
  kernels::TensorRef dIn = c.outOpt(0), dScale = c.outOpt(1),
                     dBias = c.outOpt(2);
  NormDims d = normDims(op, in.shape, c.attrAxis("axis", in.rank()));
  checkShape(op, "dOut", dOut, in.shape);
  checkOptionalShape(op, "dIn", dIn, in.shape);
  checkOptionalShape(op, "scale", scale, d.paramShape);
  checkOptionalShape(op, "dScale", dScale, d.paramShape);
  checkOptionalShape(op, "dBias", dBias, d.paramShape);
  Scratch workspace(dScale || dBias ? normGradWorkspaceBytes(d.rows, d.n) : 0);
  launchLayerNormGrad(in.data, scale.data, dOut.data, dIn.data, dScale.data,
                      dBias.data, d.rows, d.n, c.attrFloat("epsilon"),
                      workspace.data(), context().compute);
}

// Operands: input, grad, scale (optional); results dIn, dScale, each
// optional.
void rmsNormGradKernel(OpContext &c) {
  c.expectArity(2, 3, 2);
  const char *op = "rms_norm_grad";
  kernels::ConstTensorRef in = c.in(0), dOut = c.in(1), scale = c.inOpt(2);
  kernels::TensorRef dIn = c.outOpt(0), dScale = c.outOpt(1);
  NormDims d = normDims(op, in.shape, c.attrAxis("axis", in.rank()));
  checkShape(op, "dOut", dOut, in.shape);
  checkOptionalShape(op, "dIn", dIn, in.shape);
  checkOptionalShape(op, "scale", scale, d.paramShape);
  checkOptionalShape(op, "dScale", dScale, d.paramShape);
  Scratch workspace(dScale ? normGradWorkspaceBytes(d.rows, d.n) : 0);
  launchRmsNormGrad(in.data, scale.data, dOut.data, dIn.data, dScale.data,
                    d.rows, d.n, c.attrFloat("epsilon"), workspace.data(),
                    context().compute);
}

} // namespace

void registerNormalizationOps(Registry &r) {
  r["graph.layer_norm"] = layerNormKernel;
  r["graph.rms_norm"] = rmsNormKernel;
  r["graph.layer_norm_grad"] = layerNormGradKernel;
  r["graph.rms_norm_grad"] = rmsNormGradKernel;
}

} // namespace cleave::cuda
