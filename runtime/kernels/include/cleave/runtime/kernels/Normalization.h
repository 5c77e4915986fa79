//===- Normalization.h - Layer, RMS and batch normalisation -----*- C++ -*-===//
//
// graph.layer_norm, graph.rms_norm and graph.batch_norm with their
// gradients. Statistics are accumulated in double; variances are the biased
// (population) ones the normalisations divide by. Backward kernels
// recompute the statistics from the input rather than taking saved ones, so
// the caller keeps only the input.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_KERNELS_NORMALIZATION_H
#define CLEAVE_RUNTIME_KERNELS_NORMALIZATION_H

#include "cleave/runtime/kernels/Tensor.h"

namespace cleave::kernels {

/// y = (x - mean) / sqrt(var + epsilon) * scale + bias over the dimensions
/// input.shape[axis:]; scale and bias have exactly those dimensions and are
/// optional (null).
void layerNorm(ConstTensorRef in, ConstTensorRef scale, ConstTensorRef bias,
               int64_t axis, double epsilon, TensorRef out);

/// Gradients of `layerNorm` w.r.t. the input, scale and bias (each may be
/// null; dScale and dBias only make sense when the forward had them).
void layerNormBackward(ConstTensorRef in, ConstTensorRef scale, int64_t axis,
                       double epsilon, ConstTensorRef dOut, TensorRef dIn,
                       TensorRef dScale, TensorRef dBias);

/// y = x / sqrt(mean(x^2) + epsilon) * scale over input.shape[axis:]; scale
/// is optional.
void rmsNorm(ConstTensorRef in, ConstTensorRef scale, int64_t axis,
             double epsilon, TensorRef out);

void rmsNormBackward(ConstTensorRef in, ConstTensorRef scale, int64_t axis,
                     double epsilon, ConstTensorRef dOut, TensorRef dIn,
                     TensorRef dScale);

/// Batch normalisation of [N, C, ...] over every dimension but the channel
/// axis 1; scale, bias, mean and variance are [C]. With `training` the
/// batch's statistics are used and `mean`/`variance` are ignored (they are
/// the running statistics the caller updates; the batch statistics are
/// written to batchMean/batchVariance when those are given, the variance
/// biased, so the caller applies any unbiasing it wants).
void batchNorm(ConstTensorRef in, ConstTensorRef scale, ConstTensorRef bias,
               ConstTensorRef mean, ConstTensorRef variance, double epsilon,
               bool training, TensorRef out, TensorRef batchMean = {},
               TensorRef batchVariance = {});

/// Gradients of `batchNorm` w.r.t. every float operand (each may be null).
/// In training mode the output does not depend on `mean`/`variance`, so
/// dMean and dVariance are zero, and the gradient flows through the batch
/// statistics into dIn.
void batchNormBackward(ConstTensorRef in, ConstTensorRef scale,
                       ConstTensorRef mean, ConstTensorRef variance,
                       double epsilon, bool training, ConstTensorRef dOut,
                       TensorRef dIn, TensorRef dScale, TensorRef dBias,
                       TensorRef dMean, TensorRef dVariance);

} // namespace cleave::kernels

#endif // CLEAVE_RUNTIME_KERNELS_NORMALIZATION_H
