//===- PagedAttention.h - Attention over a paged key/value cache -*- C++ -*-===//
//
// The kernels of graph.cache_write and graph.paged_attention
// (dialects/graph/.../GraphCacheOps.td): a layer's keys (or values) live in
// a pool of blocks [blocks, block_size, kv_heads, dim], and each sequence's
// block table names the blocks holding its positions (vLLM's PagedAttention,
// Kwon et al. 2023). Generation appends one token a step and attends to all
// before it: cacheWrite puts the new rows in place, pagedAttention reads the
// sequence's keys block by block with an online softmax (FlashAttention's
// running maximum and sum), so no score row is stored and nothing is copied
// out of the pool.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_KERNELS_PAGEDATTENTION_H
#define CLEAVE_RUNTIME_KERNELS_PAGEDATTENTION_H

#include "cleave/runtime/kernels/Tensor.h"

namespace cleave::kernels {

/// cache[slot / block_size, slot % block_size] = rows[n] for every row n
/// with a slot >= 0. cache [blocks, block_size, kv_heads, dim], rows [N,
/// kv_heads, dim], slots [N]. Throws std::invalid_argument for a slot
/// beyond the pool or mismatched shapes.
void cacheWrite(ConstTensorRef rows, IndexRef slots, TensorRef cache);

/// out[b, h, t] = softmax over the keys p <= lengths[b] - T + t of
/// scale * q[b, h, t] . k(b, p), times v(b, p), where k(b, p) is
/// keyCache[blockTable[b, p / block_size], p % block_size, h / group] and
/// group = heads / kv_heads. q and out [B, H, T, dim]; caches [blocks,
/// block_size, kv_heads, dim]; blockTable [B, max_blocks]; lengths [B]. A
/// query with no key to see (length 0, or a position below 0) gets 0.
/// Throws std::invalid_argument for a length beyond the block table, a
/// block beyond the pool or mismatched shapes.
void pagedAttention(ConstTensorRef q, ConstTensorRef keyCache,
                    ConstTensorRef valueCache, IndexRef blockTable,
                    IndexRef lengths, float scale, TensorRef out);

} // namespace cleave::kernels

#endif // CLEAVE_RUNTIME_KERNELS_PAGEDATTENTION_H
