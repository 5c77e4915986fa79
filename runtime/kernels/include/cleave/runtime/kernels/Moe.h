//===- Moe.h - Mixture-of-experts routing, dispatch and combine -*- C++ -*-===//
//
// graph.moe_gate, moe_dispatch and moe_combine with their gradients.
// Dispatch and combine agree on where each token went through one slot
// assignment, assignExpertSlots, which the runtime can also call to size
// or route all-to-all exchanges.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_KERNELS_MOE_H
#define CLEAVE_RUNTIME_KERNELS_MOE_H

#include "cleave/runtime/kernels/Tensor.h"

namespace cleave::kernels {

/// Routing of router logits [T, E]: the softmax over experts, then per token
/// the top_k probabilities in descending order (ties to the lower expert
/// index) as weights [T, k] and their experts as indices [T, k]. With
/// `renormalize` the chosen weights are divided by their sum.
void moeGate(ConstTensorRef logits, int64_t topK, bool renormalize,
             TensorRef weights, MutableIndexRef indices);

/// The gradient w.r.t. the logits given the gradient of the weights (the
/// indices are piecewise constant and carry none).
void moeGateBackward(ConstTensorRef logits, IndexRef indices, bool renormalize,
                     ConstTensorRef dWeights, TensorRef dLogits);

/// graph.moe_gate_grad: the same gradient, the chosen experts being
/// recomputed from the logits as moeGate chooses them.
void moeGateBackward(ConstTensorRef logits, int64_t topK, bool renormalize,
                     ConstTensorRef dWeights, TensorRef dLogits);

/// Fills slots[t * k + j] (T * k entries) with the capacity slot that token
/// t's j-th choice takes in expert indices[t, j]: each expert hands out its
/// slots in (t, j) order, and choices past `capacity` get -1 (dropped).
/// Expert indices outside [0, numExperts) throw.
void assignExpertSlots(IndexRef indices, int64_t numExperts, int64_t capacity,
                       int64_t *slots);

/// out [E, C, H]: out[e, slot(t, j)] = input[t] for every kept choice, and
/// zeros in the slots left free. input is [T, H], indices [T, k].
void moeDispatch(ConstTensorRef input, IndexRef indices, int64_t numExperts,
                 int64_t capacity, TensorRef out);

/// dInput[t] = sum over t's kept choices of dOut[e, slot(t, j)]; E and C
/// come from dOut's shape.
void moeDispatchBackward(ConstTensorRef dOut, IndexRef indices,
                         TensorRef dInput);

/// out [T, H] = sum_j weights[t, j] * input[indices[t, j], slot(t, j)] over
/// kept choices (dropped ones contribute 0); input is [E, C, H].
void moeCombine(ConstTensorRef input, ConstTensorRef weights, IndexRef indices,
                TensorRef out);

/// Gradients w.r.t. the expert outputs (zero in free slots) and the weights
/// (zero for dropped choices); either may be null.
void moeCombineBackward(ConstTensorRef input, ConstTensorRef weights,
                        IndexRef indices, ConstTensorRef dOut, TensorRef dInput,
                        TensorRef dWeights);

} // namespace cleave::kernels

#endif // CLEAVE_RUNTIME_KERNELS_MOE_H
