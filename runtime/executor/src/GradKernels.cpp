//===- GradKernels.cpp - Backward graph ops and optimizer updates ---------===//
//
// The grad ops of GraphGradOps.td on the CPU kernels, as the reference
// evaluator runs them. Gradient outputs are overwritten (accumulation over
// microbatches is an explicit runtime.accumulate in the plan).
//
//===----------------------------------------------------------------------===//

#include "Registry.h"

#include "cleave/runtime/kernels/Attention.h"
#include "cleave/runtime/kernels/Conv.h"
#include "cleave/runtime/kernels/DataMovement.h"
#include "cleave/runtime/kernels/Elementwise.h"
#include "cleave/runtime/kernels/Loss.h"
#include "cleave/runtime/kernels/Moe.h"
#include "cleave/runtime/kernels/Normalization.h"
#include "cleave/runtime/kernels/Optimizer.h"
#include "cleave/runtime/kernels/Reduction.h"

#include <cmath>
#include <cstring>
#include <stdexcept>

namespace cleave::executor {

namespace k = cleave::kernels;

namespace {


/// The optimizer's output `o` starts as a copy of its input `i` unless the
/// plan updates in place (the same tensor id, hence the same view).
k::TensorRef updated(OpContext &c, size_t o, size_t i) {
  k::TensorRef out = c.out(o);
  k::ConstTensorRef in = c.in(i);
  if (out.shape != in.shape)
    throw std::invalid_argument("output " + std::to_string(o) +
                                " does not have the shape of input " +
                                std::to_string(i));
  if (out.data != in.data)
    std::memmove(out.data, in.data, out.numElements() * sizeof(float));
  return out;
}

void sgdKernel(OpContext &c) {
  c.expectArity(3, 2);
  k::ConstTensorRef grad = c.in(1);
  k::TensorRef param = updated(c, 0, 0);
  k::TensorRef momentum = updated(c, 1, 2);
  k::SgdOptions o;
  o.learningRate = static_cast<float>(c.attrFloat("lr"));
  o.momentum = static_cast<float>(c.attrFloat("mu", 0.0));
  o.weightDecay = static_cast<float>(c.attrFloat("weight_decay", 0.0));
  k::sgdStep(param, grad, momentum, o);
}

void adamwKernel(OpContext &c) {
  c.expectArity(5, 3);
  k::ConstTensorRef grad = c.in(1);
  k::ConstTensorRef step = c.in(4);
  if (step.numElements() != 1)
    throw std::invalid_argument("the step operand is not a scalar");
  int64_t stepNumber = std::lround(step.data[0]);
  k::TensorRef param = updated(c, 0, 0);
  k::TensorRef m = updated(c, 1, 2);
  k::TensorRef v = updated(c, 2, 3);
  k::AdamWOptions o;
  o.learningRate = static_cast<float>(c.attrFloat("lr"));
  o.beta1 = static_cast<float>(c.attrFloat("beta1"));
  o.beta2 = static_cast<float>(c.attrFloat("beta2"));
  o.epsilon = static_cast<float>(c.attrFloat("eps"));
  o.weightDecay = static_cast<float>(c.attrFloat("weight_decay"));
  k::adamwStep(param, grad, m, v, stepNumber, o);
}

/// runtime.unscale: operands the loss scale (an f32 scalar) and the
/// gradients; results the overflow flag (an f32 scalar: 1 when any
/// gradient held an infinity or NaN, else 0) and the gradients, unscaled
/// in place (each result is its operand's tensor).
void unscaleKernel(OpContext &c) {
  checkUnscaleOperands(c);
  k::ConstTensorRef scale = c.in(0);
  bool nonFinite = false;
  for (size_t i = 1; i < c.inputs.size(); ++i)
    nonFinite |= k::unscaleGradient(c.out(i), scale.data[0]);
  c.out(0).data[0] = nonFinite ? 1.0f : 0.0f;
}

} // namespace

void checkUnscaleOperands(const OpContext &c) {
  if (c.inputs.size() < 1 || c.outputs.size() != c.inputs.size())
    throw std::invalid_argument(
        "runtime.unscale takes the scale and N gradients and returns the "
        "flag and the N gradients");
  if (c.inputs[0].numElements() != 1 || c.outputs[0].numElements() != 1 ||
      c.inputs[0].dtype != plan::F32 || c.outputs[0].dtype != plan::F32)
    throw std::invalid_argument("the scale and the flag are f32 scalars");
  for (size_t i = 1; i < c.inputs.size(); ++i) {
    if (c.inputs[i].data != c.outputs[i].data)
      throw std::invalid_argument("gradient " + std::to_string(i - 1) +
                                  " is not unscaled in place");
    if (c.inputs[i].dtype != plan::F32)
      throw std::invalid_argument("gradient " + std::to_string(i - 1) +
                                  " is not f32");
  }
}

kernels::FlashAttentionOptions
attentionOptions(const OpContext &c, const kernels::AttentionShapes &shapes,
                 size_t maskOperand) {
  kernels::FlashAttentionOptions o;
  o.scale = static_cast<float>(c.attrFloat("scale"));
  o.causal = c.attrBool("causal");
  if (o.causal)
    o.causalShift = c.causalShift(shapes.query[2], shapes.key[2]);
  if (c.inputs.size() > maskOperand) {
    kernels::ConstTensorRef mask = c.in(maskOperand);
    o.mask = kernels::attentionMask(mask.data, mask.shape, c.in(0).shape,
                                    shapes.key[2]);
  }
  return o;
}

void registerGradKernels(Registry &r) {
  r["graph.attention_grad"] = [](OpContext &c) {
    c.expectArity(6, 7, 3);
    k::ConstTensorRef q = c.in(0), key = c.in(1), v = c.in(2);
    k::AttentionShapes shapes = k::attentionShapes(q.shape, key.shape);
    k::FlashAttentionOptions o = attentionOptions(c, shapes, 6);
    auto view = [](k::TensorRef t, const k::Shape &shape) {
      return k::TensorRef(t.data, t.data ? shape : k::Shape());
    };
    k::flashAttentionBackward(
        {q.data, shapes.query}, {key.data, shapes.key}, {v.data, shapes.key},
        {c.in(3).data, shapes.query}, {c.in(4).data, shapes.lse},
        {c.in(5).data, shapes.query}, o, view(c.outOpt(0), shapes.query),
        view(c.outOpt(1), shapes.key), view(c.outOpt(2), shapes.key));
  };
  r["graph.activation_grad"] = [](OpContext &c) {
    c.expectArity(2, 1);
    k::unaryBackward(activationKind(c.attrString("kind")), c.in(0), c.in(1),
                     c.out(0));
  };
  r["graph.softmax_grad"] = [](OpContext &c) {
    c.expectArity(2, 1);
    k::softmaxBackward(c.in(0), c.in(1), c.attrAxis("axis", c.in(0).rank()),
                       c.out(0));
  };
  // Operands: input, grad, scale (optional).
  r["graph.layer_norm_grad"] = [](OpContext &c) {
    c.expectArity(2, 3, 3);
    k::layerNormBackward(c.in(0), c.inOpt(2),
                         c.attrAxis("axis", c.in(0).rank()),
                         c.attrFloat("epsilon"), c.in(1), c.outOpt(0),
                         c.outOpt(1), c.outOpt(2));
  };
  r["graph.rms_norm_grad"] = [](OpContext &c) {
    c.expectArity(2, 3, 2);
    k::rmsNormBackward(c.in(0), c.inOpt(2),
                       c.attrAxis("axis", c.in(0).rank()),
                       c.attrFloat("epsilon"), c.in(1), c.outOpt(0),
                       c.outOpt(1));
  };
  // Operands: input, grad, scale, mean, variance.
  r["graph.batch_norm_grad"] = [](OpContext &c) {
    c.expectArity(5, 3);
    k::batchNormBackward(c.in(0), c.in(2), c.in(3), c.in(4),
                         c.attrFloat("epsilon"), c.attrBool("training"),
                         c.in(1), c.outOpt(0), c.outOpt(1), c.outOpt(2), {},
                         {});
  };
  // Operands: grad, indices.
  r["graph.gather_grad"] = [](OpContext &c) {
    c.expectArity(2, 1);
    k::gatherBackward(c.index(1), c.attrAxis("axis", c.out(0).rank()),
                      c.in(0), c.out(0));
  };
  r["graph.slice_grad"] = [](OpContext &c) {
    c.expectArity(1, 1);
    k::sliceBackward(c.in(0), c.attrInts("starts"), c.attrInts("strides"),
                     c.out(0));
  };
  r["graph.reduce_max_grad"] = [](OpContext &c) {
    c.expectArity(2, 1);
    k::reduceBackward(k::ReduceOp::Max, c.in(0), c.attrInts("axes"),
                      c.attrBool("keepdims"), c.in(1), c.out(0));
  };
  // Operands: grad, filter.
  r["graph.conv2d_input_grad"] = [](OpContext &c) {
    c.expectArity(2, 1);
    k::conv2dInputGrad(c.in(0), c.in(1), convOptions(c), c.out(0));
  };
  // Operands: input, grad.
  r["graph.conv2d_filter_grad"] = [](OpContext &c) {
    c.expectArity(2, 1);
    k::conv2dFilterGrad(c.in(0), c.in(1), convOptions(c), c.out(0));
  };
  // Operands: input, grad.
  r["graph.pool2d_grad"] = [](OpContext &c) {
    c.expectArity(2, 1);
    k::Pool2dOptions o = poolOptions(c);
    std::string kind = c.attrString("kind");
    if (kind == "max")
      k::maxPool2dBackward(c.in(0), o, c.in(1), c.out(0));
    else if (kind == "avg")
      k::avgPool2dBackward(c.in(1), o, c.out(0));
    else
      throw std::invalid_argument("unknown pool kind '" + kind + "'");
  };
  // Operands: logits, labels, grad.
  r["graph.cross_entropy_grad"] = [](OpContext &c) {
    c.expectArity(3, 1);
    k::crossEntropyBackward(c.in(0), c.index(1),
                            c.attrInt("ignore_index", -100), c.in(2),
                            c.out(0));
  };
  // Operands: logits, grad. The kernel recomputes the chosen experts.
  r["graph.moe_gate_grad"] = [](OpContext &c) {
    c.expectArity(2, 1);
    k::moeGateBackward(c.in(0), c.attrInt("top_k"), c.attrBool("renormalize"),
                       c.in(1), c.out(0));
  };
  // Operands: input, weights, indices, grad.
  r["graph.moe_combine_grad"] = [](OpContext &c) {
    c.expectArity(4, 2);
    k::moeCombineBackward(c.in(0), c.in(1), c.index(2), c.in(3), c.outOpt(0),
                          c.outOpt(1));
  };
  r["graph.sgd_update"] = sgdKernel;
  r["graph.adamw_update"] = adamwKernel;
  r["runtime.unscale"] = unscaleKernel;
}

} // namespace cleave::executor
