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

#include <limits>
#include <optional>

namespace cleave::kernels {

/// graph.attention's additive mask as the kernels read it: flattened head
/// h (batch x heads) reads the plane ((h / div) % mod), row i of it at
/// i * rowStride (0: one row for every query), one value per key.
struct AttentionMask {
  const float *data = nullptr;
  int64_t div = 1, mod = 1, plane = 0, rowStride = 0;
  const float *head(int64_t h) const {
    return data + ((h / div) % mod) * plane;
  }
};

/// Mask values at or below this mask their key as -inf does. Exporters
/// write the lowest float (or -1e9, -1e4) for a masked key; against scores
/// of any ordinary size its probability is 0 either way, but a row whose
/// every key is so masked would keep a log-sum-exp of about -3.4e38, where
/// float has no room for the log of the row's sum, and the backward's
/// probabilities exp(score - lse) would come out 1 instead of 1 / keys.
/// Such a row gets output 0 and no gradient instead (what PyTorch's
/// exported guard where(p != p, 0, p) gives for -inf masks).
constexpr float kMaskedAtOrBelow = -1e4f;

/// The value a mask entry adds to its score.
inline float maskedScore(float mask) {
  return mask <= kMaskedAtOrBelow ? -std::numeric_limits<float>::infinity()
                                  : mask;
}

/// The layout of a mask [M..., Mq, Sk] against query [B..., Sq, D] (as
/// graph.attention's verifier admits: each M the B or 1, the kept ones one
/// contiguous run; Mq = Sq or 1). Throws std::invalid_argument otherwise.
AttentionMask attentionMask(const float *data, const Shape &mask,
                            const Shape &query, int64_t keys);

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
  /// Added to the scaled scores (none when its data is null).
  AttentionMask mask;
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
