//===- OptimizerOps.cpp - sgd_update and adamw_update on the GPU ----------===//
//
// The CPU glue's operands, attributes and checks (GradKernels.cpp
// sgdKernel, adamwKernel): each updated output has its input's shape and
// is either that input's tensor (in place) or a separate one. The CPU
// copies the input into a separate output and updates it in place; the
// GPU kernel reads the inputs and writes the outputs in the same pass,
// which is the same result without the copy.
//
//===----------------------------------------------------------------------===//

#include "Context.h"
#include "Ops.h"
#include "OpChecks.h"
#include "kernels/Optimizer.h"

#include "cleave/runtime/kernels/Tensor.h"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace cleave::cuda {

namespace k = cleave::kernels;
using executor::OpContext;

namespace {

cudaStream_t stream() { return context().compute; }

/// Output `o`, which replaces input `i`: it must have that input's shape.
float *updated(OpContext &c, size_t o, size_t i) {
  k::TensorRef out = c.out(o);
  k::ConstTensorRef in = c.in(i);
  if (out.shape != in.shape)
    throw std::invalid_argument("output " + std::to_string(o) +
                                " does not have the shape of input " +
                                std::to_string(i));
  return out.data;
}

/// The one-pass kernels read element i of every input before writing
/// element i of every output, which is right when an output is exactly an
/// input's buffer or apart from it, not when the two overlap shifted.
void requireNoShiftedOverlap(const OpContext &c) {
  auto range = [](const executor::TensorView &t) {
    const char *begin = static_cast<const char *>(t.data);
    return std::make_pair(begin, begin + t.numBytes());
  };
  for (const executor::TensorView &out : c.outputs) {
    auto [ob, oe] = range(out);
    auto check = [&](const executor::TensorView &other) {
      if (&other == &out || !other || other.data == out.data)
        return;
      auto [b, e] = range(other);
      if (ob < e && b < oe)
        throw std::invalid_argument(
            "an output overlaps another operand at a different offset");
    };
    for (const executor::TensorView &t : c.inputs)
      check(t);
    for (const executor::TensorView &t : c.outputs)
      check(t);
  }
}

/// Operands: param, grad, momentum buffer; results: param, buffer.
void sgdKernel(OpContext &c) {
  c.expectArity(3, 2);
  k::ConstTensorRef param = c.in(0), grad = c.in(1), buffer = c.in(2);
  float *newParam = updated(c, 0, 0);
  float *newBuffer = updated(c, 1, 2);
  requireShape(grad.shape, param.shape, "grad");
  requireShape(buffer.shape, param.shape, "the momentum buffer");
  requireNoShiftedOverlap(c);
  SgdHyperparameters h;
  h.learningRate = static_cast<float>(c.attrFloat("lr"));
  h.momentum = static_cast<float>(c.attrFloat("mu", 0.0));
  h.weightDecay = static_cast<float>(c.attrFloat("weight_decay", 0.0));
  sgdUpdate(param.data, grad.data, buffer.data, newParam, newBuffer,
            param.numElements(), h, stream());
}

/// Operands: param, grad, m, v, step (a one-element f32 tensor on the
/// device); results: param, m, v.
void adamwKernel(OpContext &c) {
  c.expectArity(5, 3);
  k::ConstTensorRef param = c.in(0), grad = c.in(1), m = c.in(2), v = c.in(3),
                    step = c.in(4);
  if (step.numElements() != 1)
    throw std::invalid_argument("the step operand is not a scalar");
  float *newParam = updated(c, 0, 0);
  float *newM = updated(c, 1, 2);
  float *newV = updated(c, 2, 3);
  requireShape(grad.shape, param.shape, "grad");
  requireShape(m.shape, param.shape, "m");
  requireShape(v.shape, param.shape, "v");
  requireNoShiftedOverlap(c);
  float lr = static_cast<float>(c.attrFloat("lr"));
  float weightDecay = static_cast<float>(c.attrFloat("weight_decay"));
  AdamWHyperparameters h;
  h.learningRate = lr;
  h.beta1 = static_cast<float>(c.attrFloat("beta1"));
  h.beta2 = static_cast<float>(c.attrFloat("beta2"));
  h.epsilon = static_cast<float>(c.attrFloat("eps"));
  h.decay = 1.0f - lr * weightDecay;
  adamwUpdate(param.data, grad.data, m.data, v.data, step.data, newParam, newM,
              newV, param.numElements(), h, stream());
}

/// runtime.unscale (GradKernels.cpp unscaleKernel): the scale and the
/// gradients in, the overflow flag and the gradients (in place) out.
void unscaleKernel(OpContext &c) {
  executor::checkUnscaleOperands(c);
  k::ConstTensorRef scale = c.in(0);
  k::TensorRef flag = c.out(0);
  CLEAVE_CUDA_CHECK(cudaMemsetAsync(flag.data, 0, sizeof(float), stream()));
  for (size_t i = 1; i < c.inputs.size(); ++i) {
    k::TensorRef grad = c.out(i);
    unscaleGradient(grad.data, grad.numElements(), scale.data, flag.data,
                    stream());
  }
}

} // namespace

void registerOptimizerOps(Registry &r) {
  r["graph.sgd_update"] = sgdKernel;
  r["graph.adamw_update"] = adamwKernel;
  r["runtime.unscale"] = unscaleKernel;
}

} // namespace cleave::cuda
