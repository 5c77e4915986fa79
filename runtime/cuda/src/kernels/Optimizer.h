//===- Optimizer.h - SGD and AdamW steps on the GPU -------------*- C++ -*-===//
//
// One optimizer step over one parameter tensor, in one pass: each element
// reads the parameter and its state from the inputs and writes the
// updated values to the outputs, which may be the same buffers (an
// in-place update) or others (no copy needed first). The arithmetic is
// the CPU's (runtime/kernels/src/Optimizer.cpp) operation for operation,
// with every product rounded on its own as the CPU's no-FMA build rounds
// it, so both backends step a parameter to the same bits.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_CUDA_SRC_KERNELS_OPTIMIZER_H
#define CLEAVE_RUNTIME_CUDA_SRC_KERNELS_OPTIMIZER_H

#include <cuda_runtime.h>

#include <cstdint>

namespace cleave::cuda {

struct SgdHyperparameters {
  float learningRate = 0.0f;
  float momentum = 0.0f;
  float weightDecay = 0.0f;
};

/// PyTorch's SGD (no dampening, no Nesterov), as kernels::sgdStep with a
/// momentum buffer:
///   b = momentum * buffer + (grad + weightDecay * param)
///   newBuffer = b;  newParam = param - learningRate * b
/// Each output may be its input's buffer.
void sgdUpdate(const float *param, const float *grad, const float *buffer,
               float *newParam, float *newBuffer, int64_t n,
               const SgdHyperparameters &h, cudaStream_t stream);

struct AdamWHyperparameters {
  float learningRate = 0.0f;
  float beta1 = 0.0f;
  float beta2 = 0.0f;
  float epsilon = 0.0f;
  /// 1 - learningRate * weightDecay, computed in float on the host as the
  /// CPU computes it.
  float decay = 1.0f;
};

/// PyTorch's AdamW (amsgrad off), as kernels::adamwStep. `step` is one
/// float in device memory holding this step's 1-based count (rounded with
/// lround, as the CPU glue does); the bias corrections are computed from
/// it on the GPU, in double as on the CPU. A count below 1 (which the CPU
/// rejects) writes NaN to all three outputs. Each output may be its
/// input's buffer.
void adamwUpdate(const float *param, const float *grad, const float *m,
                 const float *v, const float *step, float *newParam,
                 float *newM, float *newV, int64_t n,
                 const AdamWHyperparameters &h, cudaStream_t stream);

/// Dynamic loss scaling's unscale of one gradient, as
/// kernels::unscaleGradient: grad[i] *= 1 / *scale (the reciprocal in
/// float, from the scale in device memory) and, when any element is
/// infinite or NaN, *flag = 1 (the caller zeroes it first; every writer
/// writes the same value, so no atomics are needed).
void unscaleGradient(float *grad, int64_t n, const float *scale, float *flag,
                     cudaStream_t stream);

} // namespace cleave::cuda

#endif // CLEAVE_RUNTIME_CUDA_SRC_KERNELS_OPTIMIZER_H
