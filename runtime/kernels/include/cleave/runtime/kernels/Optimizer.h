//===- Optimizer.h - In-place SGD and AdamW steps ---------------*- C++ -*-===//
//
// One optimizer step over one parameter tensor, updating the parameter and
// its state in place. Elementwise, so a sharded parameter is stepped shard
// by shard with the same result.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_KERNELS_OPTIMIZER_H
#define CLEAVE_RUNTIME_KERNELS_OPTIMIZER_H

#include "cleave/runtime/kernels/Tensor.h"

namespace cleave::kernels {

struct SgdOptions {
  float learningRate = 0.01f;
  float momentum = 0.0f;
  /// L2 penalty added to the gradient (PyTorch's SGD weight_decay).
  float weightDecay = 0.0f;
};

/// PyTorch's SGD without dampening or Nesterov:
///   g = grad + weightDecay * param
///   buf = momentum * buf + g          (buf starts at zero)
///   param -= learningRate * buf
/// `momentumBuffer` may be null when momentum is 0; when given it is always
/// updated, so with momentum 0 it holds this step's g (graph.sgd_update's
/// new_momentum).
void sgdStep(TensorRef param, ConstTensorRef grad, TensorRef momentumBuffer,
             const SgdOptions &options);

struct AdamWOptions {
  float learningRate = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float epsilon = 1e-8f;
  /// Decoupled weight decay (Loshchilov & Hutter).
  float weightDecay = 1e-2f;
};

/// PyTorch's AdamW (amsgrad off). `step` is this step's 1-based count:
///   param *= 1 - learningRate * weightDecay
///   m = beta1 m + (1 - beta1) grad;  v = beta2 v + (1 - beta2) grad^2
///   param -= learningRate * (m / (1 - beta1^step))
///            / (sqrt(v / (1 - beta2^step)) + epsilon)
/// m and v start at zero.
void adamwStep(TensorRef param, ConstTensorRef grad, TensorRef m, TensorRef v,
               int64_t step, const AdamWOptions &options);

/// Dynamic loss scaling's check of a gradient (Megatron's and PyTorch's
/// unscale): grad[i] *= 1 / scale, in place, computed in float as
/// PyTorch's GradScaler multiplies by its float reciprocal. Returns
/// whether any element was infinite or NaN before the scaling (the step's
/// updates are then skipped and the scale lowered).
bool unscaleGradient(TensorRef grad, float scale);

} // namespace cleave::kernels

#endif // CLEAVE_RUNTIME_KERNELS_OPTIMIZER_H
