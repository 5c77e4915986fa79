//===- Attention.h - Softmax and rotary embedding on the GPU ----*- C++ -*-===//
//
// Launchers for graph.softmax, graph.softmax_grad and graph.rope; the host
// glue (AttentionOps.cpp) checks shapes and attributes first. Pointers are
// device memory, every launcher only enqueues on `stream`, and the results
// are the CPU kernels' (runtime/kernels/src/Attention.cpp) to fp32
// rounding.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_CUDA_SRC_KERNELS_ATTENTION_H
#define CLEAVE_RUNTIME_CUDA_SRC_KERNELS_ATTENTION_H

#include "cleave/runtime/kernels/SequenceBlocks.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace cleave::cuda {

/// Softmax of `rows` contiguous rows of `n` elements (the last axis). With
/// `causal`, row r is query r % queries and keeps its first
/// clamp(shift(r % queries) + 1, 0, n) elements; the others are 0, and so
/// is a row that keeps none. `out` may alias `in`.
void launchSoftmaxRows(const float *in, float *out, int64_t rows, int64_t n,
                       bool causal, int64_t queries,
                       kernels::RowOffsets shift, cudaStream_t stream);

/// Softmax along the middle axis of an [outer, n, inner] tensor (inner > 1).
void launchSoftmaxStrided(const float *in, float *out, int64_t outer, int64_t n,
                          int64_t inner, cudaStream_t stream);

/// dIn = out * (dOut - sum(dOut * out)) over rows of `n` contiguous
/// elements.
void launchSoftmaxGradRows(const float *out, const float *dOut, float *dIn,
                           int64_t rows, int64_t n, cudaStream_t stream);

/// The same along the middle axis of [outer, n, inner] (inner > 1).
void launchSoftmaxGradStrided(const float *out, const float *dOut, float *dIn,
                              int64_t outer, int64_t n, int64_t inner,
                              cudaStream_t stream);

/// Bytes of workspace launchRope needs: its cos/sin table.
size_t ropeWorkspaceBytes(int64_t seq, int64_t headDim);

/// Rotary embedding of [batch, seq, heads, headDim] (headDim even): the
/// pair (x[i], x[i + d/2]) at sequence index s is rotated by the angle
/// positions(s) * theta^(-2i/d), or by its negative with `inverse` (the
/// gradient). `out` may alias `in`; `workspace` holds
/// ropeWorkspaceBytes(seq, headDim) bytes.
void launchRope(const float *in, float *out, int64_t batch, int64_t seq,
                int64_t heads, int64_t headDim, double theta,
                kernels::RowOffsets positions, bool inverse, void *workspace,
                cudaStream_t stream);

} // namespace cleave::cuda

#endif // CLEAVE_RUNTIME_CUDA_SRC_KERNELS_ATTENTION_H
