//===- Loss.h - Softmax cross-entropy (graph.cross_entropy) -----*- C++ -*-===//

#ifndef CLEAVE_RUNTIME_KERNELS_LOSS_H
#define CLEAVE_RUNTIME_KERNELS_LOSS_H

#include "cleave/runtime/kernels/Tensor.h"

namespace cleave::kernels {

/// loss (a 0-d tensor) = the mean over labels != ignoreIndex of
/// logsumexp(logits[n, :]) - logits[n, label[n]], logits being [N..., C]
/// and labels [N...]. With every label ignored the loss is 0 rather than
/// 0/0. Labels outside [0, C) other than ignoreIndex throw.
void crossEntropy(ConstTensorRef logits, IndexRef labels, int64_t ignoreIndex,
                  TensorRef loss);

/// dLogits = dLoss / count * (softmax(logits) - onehot(label)) on counted
/// rows, 0 on ignored ones; dLoss is a 0-d tensor.
void crossEntropyBackward(ConstTensorRef logits, IndexRef labels,
                          int64_t ignoreIndex, ConstTensorRef dLoss,
                          TensorRef dLogits);

} // namespace cleave::kernels

#endif // CLEAVE_RUNTIME_KERNELS_LOSS_H
