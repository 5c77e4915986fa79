//===- FlashAttention.h - Fused attention, forward and backward -*- C++ -*-===//
//
// Attention as one kernel, FlashAttention-2's algorithm (Dao, 2023): the
// scores are never stored whole. Each block of queries walks the blocks of
// keys keeping a running row maximum, sum and output (online softmax), and
// keeps only each row's log-sum-exp for the backward pass, which recomputes
// every block's probabilities from it. Under a causal mask the blocks wholly
// above the diagonal are skipped: half the work at long sequences.
//
// Layouts: q [batch, heads, queries, dim]; k, v [batch, kvHeads, keys, dim]
// with kvHeads dividing heads (grouped-query attention: query head h reads
// key/value head h / (heads / kvHeads)); out like q; lse [batch, heads,
// queries] in natural log.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_KERNELS_FLASHATTENTION_H
#define CLEAVE_RUNTIME_KERNELS_FLASHATTENTION_H

#include "cleave/runtime/kernels/SequenceBlocks.h"
#include "cleave/runtime/kernels/Tensor.h"

#include <optional>

namespace cleave::kernels {

struct FlashAttentionOptions {
  /// Multiplies q k^T before the softmax (usually 1 / sqrt(dim)).
  float scale = 1.0f;
  /// Key j is masked for query i when j > causalShift(i), or else
  /// j > i + keys - queries (as graph.softmax's causal mask; a block of a
  /// longer sequence under context parallelism, contiguous or zig-zag,
  /// passes its own places). A row with every key masked gets output 0 and
  /// lse -inf.
  bool causal = false;
  std::optional<RowOffsets> causalShift;
  /// Rows of queries and keys a block holds (tests vary them; results do
  /// not depend on them beyond rounding).
  int64_t blockQueries = 64;
  int64_t blockKeys = 64;
};

/// The kernels' four-dimensional shapes for graph.attention's operands,
/// query [B..., Sq, D] and key/value [B'..., Sk, D] with B' equal to B but
/// for a trailing run of 1s: batch 1, the query's batch dimensions as its
/// heads and the key's as its key/value heads (head h then reads key head
/// h / (heads / kvHeads), which is the broadcast). Throws
/// std::invalid_argument for other shapes.
struct AttentionShapes {
  Shape query, key, lse;
};
AttentionShapes attentionShapes(const Shape &query, const Shape &key);

/// out = softmax(scale q k^T, masked) v, and each row's log-sum-exp.
void flashAttention(ConstTensorRef q, ConstTensorRef k, ConstTensorRef v,
                    const FlashAttentionOptions &options, TensorRef out,
                    TensorRef lse);

/// The gradients of q, k and v (null views are not computed) from the
/// forward's inputs, its output and log-sum-exp, and dOut.
void flashAttentionBackward(ConstTensorRef q, ConstTensorRef k,
                            ConstTensorRef v, ConstTensorRef out,
                            ConstTensorRef lse, ConstTensorRef dOut,
                            const FlashAttentionOptions &options, TensorRef dq,
                            TensorRef dk, TensorRef dv);

} // namespace cleave::kernels

#endif // CLEAVE_RUNTIME_KERNELS_FLASHATTENTION_H
