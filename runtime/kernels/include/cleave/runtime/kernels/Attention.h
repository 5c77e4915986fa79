//===- Attention.h - Softmax and rotary embeddings --------------*- C++ -*-===//
//
// graph.softmax (optionally causal) and graph.rope, with their gradients.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_KERNELS_ATTENTION_H
#define CLEAVE_RUNTIME_KERNELS_ATTENTION_H

#include "cleave/runtime/kernels/SequenceBlocks.h"
#include "cleave/runtime/kernels/Tensor.h"

#include <optional>

namespace cleave::kernels {

/// Softmax along `axis`. With `causal` the axis must be the last of an input
/// of rank >= 2, read as [..., query, key]: key j is masked for query i when
/// j > i + (keys - queries), and masked entries are 0. A query with every
/// key masked (only possible with more queries than keys) gets all zeros
/// rather than 0/0. `causalShift`, when given, places the queries instead
/// (key j masked for query i when j > causalShift(i)): a block of a longer
/// sequence, contiguous or zig-zag (context parallelism).
void softmax(ConstTensorRef in, int64_t axis, bool causal, TensorRef out,
             std::optional<RowOffsets> causalShift = std::nullopt);

/// dIn = out * (dOut - sum_axis(dOut * out)), from the softmax's result;
/// masked entries have out = 0 and so get no gradient, causal or not.
void softmaxBackward(ConstTensorRef out, ConstTensorRef dOut, int64_t axis,
                     TensorRef dIn);

/// Rotary position embedding of [batch, seq, heads, head_dim] (LLaMA's
/// rotate-half convention): the pair (x[i], x[i + d/2]) at sequence index
/// s is rotated by the angle positions(s) * theta^(-2i/d) (s + offset for a
/// plain offset). Angles are computed in double, so long positions keep
/// float accuracy.
void rope(ConstTensorRef in, double theta, RowOffsets positions,
          TensorRef out);

/// The gradient of `rope`: the inverse rotation of dOut.
void ropeBackward(ConstTensorRef dOut, double theta, RowOffsets positions,
                  TensorRef dIn);

/// `rope` with each token's own position, positions [batch, seq]
/// (generation: a batch of sequences at different lengths, one new token
/// each); `inverse` rotates back (the gradient).
void ropeAt(ConstTensorRef in, double theta, IndexRef positions, bool inverse,
            TensorRef out);

} // namespace cleave::kernels

#endif // CLEAVE_RUNTIME_KERNELS_ATTENTION_H
