//===- FlashAttention.h - Fused attention on the GPU ------------*- C++ -*-===//
//
// Launchers for graph.attention and graph.attention_grad (the host glue,
// AttentionOps.cpp, flattens the batch dimensions and checks shapes).
// Layouts as the CPU kernel's (runtime/kernels FlashAttention.h) with batch
// 1: q, out and dOut [heads, queries, dim]; k, v [kvHeads, keys, dim];
// lse [heads, queries]. Pointers are device memory; the launchers only
// enqueue on `stream`. Head sizes up to 256.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_CUDA_SRC_KERNELS_FLASHATTENTION_H
#define CLEAVE_RUNTIME_CUDA_SRC_KERNELS_FLASHATTENTION_H

#include <cuda_runtime.h>

#include "cleave/runtime/kernels/SequenceBlocks.h"

#include <cstddef>
#include <cstdint>

namespace cleave::cuda {

/// The largest head size the kernels hold in registers.
constexpr int64_t kFlashAttentionMaxDim = 256;

struct FlashAttentionShape {
  int64_t heads = 0, kvHeads = 0, queries = 0, keys = 0, dim = 0;
  float scale = 1.0f;
  /// Key j masked for query i when j > shift(i) (a contiguous or zig-zag
  /// block of queries, kernels::RowOffsets).
  bool causal = false;
  kernels::RowOffsets shift;
  /// graph.attention's additive mask (device memory; null: none), laid
  /// out as kernels::AttentionMask says.
  const float *mask = nullptr;
  int64_t maskDiv = 1, maskMod = 1, maskPlane = 0, maskRowStride = 0;
};

/// out = softmax(scale q k^T, masked) v and each row's log-sum-exp (-inf
/// and a zero row where every key is masked).
void launchFlashAttention(const float *q, const float *k, const float *v,
                          float *out, float *lse,
                          const FlashAttentionShape &shape,
                          cudaStream_t stream);

/// Bytes of device workspace the backward needs (each row's
/// rowsum(dOut * out)).
size_t flashAttentionBackwardWorkspaceBytes(const FlashAttentionShape &shape);

/// dq, dk, dv (each may be null: not computed) from the forward's inputs,
/// output and log-sum-exp.
void launchFlashAttentionBackward(const float *q, const float *k,
                                  const float *v, const float *out,
                                  const float *lse, const float *dOut,
                                  float *dq, float *dk, float *dv,
                                  const FlashAttentionShape &shape,
                                  void *workspace, cudaStream_t stream);

} // namespace cleave::cuda

#endif // CLEAVE_RUNTIME_CUDA_SRC_KERNELS_FLASHATTENTION_H
