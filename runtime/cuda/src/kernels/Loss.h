//===- Loss.h - Softmax cross-entropy on the GPU ----------------*- C++ -*-===//
//
// Launchers for graph.cross_entropy and graph.cross_entropy_grad over
// logits [rows, classes] and int64 labels [rows]; LossOps.cpp checks shapes
// and attributes first. Pointers are device memory and every launcher only
// enqueues on `stream`. The semantics are the CPU kernels'
// (runtime/kernels/src/Loss.cpp) but for one case a kernel cannot report:
// a label outside [0, classes) other than ignoreIndex, which the CPU
// rejects, makes the loss NaN and its row of the gradient NaN.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_CUDA_SRC_KERNELS_LOSS_H
#define CLEAVE_RUNTIME_CUDA_SRC_KERNELS_LOSS_H

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace cleave::cuda {

/// Bytes of workspace launchCrossEntropy needs (a double per row).
size_t crossEntropyWorkspaceBytes(int64_t rows);

/// loss[0] = the mean over rows whose label is not ignoreIndex of
/// logsumexp(logits[r, :]) - logits[r, label[r]]; 0 when every label is
/// ignored. Rows are reduced in a fixed order (deterministic).
void launchCrossEntropy(const float *logits, const int64_t *labels, float *loss,
                        int64_t rows, int64_t classes, int64_t ignoreIndex,
                        void *workspace, cudaStream_t stream);

/// Bytes of workspace launchCrossEntropyGrad needs.
size_t crossEntropyGradWorkspaceBytes();

/// dLogits = dLoss[0] / count * (softmax(logits) - onehot(label)) on the
/// counted rows and 0 on ignored ones (count: the rows not ignored).
void launchCrossEntropyGrad(const float *logits, const int64_t *labels,
                            const float *dLoss, float *dLogits, int64_t rows,
                            int64_t classes, int64_t ignoreIndex,
                            void *workspace, cudaStream_t stream);

} // namespace cleave::cuda

#endif // CLEAVE_RUNTIME_CUDA_SRC_KERNELS_LOSS_H
