//===- PagedAttention.h - Paged key/value cache kernels -------*- C++ -*-===//
//
// CUDA launchers of graph.cache_write, graph.paged_attention and graph.rope
// at per-token positions (the CPU's runtime/kernels PagedAttention.h and
// ropeAt): a generation step's kernels.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_CUDA_SRC_KERNELS_PAGEDATTENTION_H
#define CLEAVE_RUNTIME_CUDA_SRC_KERNELS_PAGEDATTENTION_H

#include <cuda_runtime.h>

#include <cstdint>

namespace cleave::cuda {

/// cache[slots[n]] = rows[n] (rows of `rowElements` floats); slots below 0
/// or at `capacity` and beyond write nothing (the host checked them).
void launchCacheWrite(const float *rows, const int64_t *slots, int64_t n,
                      int64_t rowElements, int64_t capacity, float *cache,
                      cudaStream_t stream);

/// One warp a query: q and out [batch, heads, tokens, dim], caches [blocks,
/// blockSize, kvHeads, dim], table [batch, maxBlocks], lengths [batch]; the
/// CPU kernel's online softmax over the keys each query sees.
void launchPagedAttention(const float *q, const float *keyCache,
                          const float *valueCache, const int64_t *table,
                          const int64_t *lengths, int64_t batch,
                          int64_t heads, int64_t tokens, int64_t dim,
                          int64_t kvHeads, int64_t blockSize,
                          int64_t maxBlocks, float scale, float *out,
                          cudaStream_t stream);

/// Rotary embedding of [batch, seq, heads, headDim] with each token at
/// positions[b * seq + s].
void launchRopeAt(const float *in, float *out, const int64_t *positions,
                  int64_t batch, int64_t seq, int64_t heads, int64_t headDim,
                  double theta, bool inverse, cudaStream_t stream);

} // namespace cleave::cuda

#endif // CLEAVE_RUNTIME_CUDA_SRC_KERNELS_PAGEDATTENTION_H
