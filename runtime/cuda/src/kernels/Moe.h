//===- Moe.h - Mixture-of-experts routing on the GPU ------------*- C++ -*-===//
//
// Launchers for graph.moe_gate, moe_dispatch, moe_combine, moe_gate_grad
// and moe_combine_grad; MoeOps.cpp checks shapes and attributes first.
// Pointers are device memory and every launcher only enqueues on `stream`.
// The semantics are the CPU kernels' (runtime/kernels/src/Moe.cpp),
// including the capacity slots: each expert hands out its slots to the
// choices routed to it in (token, j) order, and choices past the capacity
// are dropped. An expert index outside [0, experts), which the CPU
// rejects, is not reported by a kernel: that choice is dropped.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_CUDA_SRC_KERNELS_MOE_H
#define CLEAVE_RUNTIME_CUDA_SRC_KERNELS_MOE_H

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace cleave::cuda {

/// Routing of logits [tokens, experts]: per token the softmax over experts
/// (in double), then the topK largest probabilities in descending order
/// (ties to the lower expert) as weights [tokens, topK], divided by their
/// sum with `renormalize`, and their experts as indices [tokens, topK].
void launchMoeGate(const float *logits, float *weights, int64_t *indices,
                   int64_t tokens, int64_t experts, int64_t topK,
                   bool renormalize, cudaStream_t stream);

/// Bytes of workspace launchMoeGateGrad needs.
size_t moeGateGradWorkspaceBytes(int64_t tokens, int64_t topK);

/// dLogits [tokens, experts] from dWeights [tokens, topK], the experts
/// being chosen again as launchMoeGate chooses them.
void launchMoeGateGrad(const float *logits, const float *dWeights,
                       float *dLogits, int64_t tokens, int64_t experts,
                       int64_t topK, bool renormalize, void *workspace,
                       cudaStream_t stream);

/// Bytes of workspace the dispatch and combine launchers need for
/// `choices` (tokens * k) routing choices.
size_t moeSlotsWorkspaceBytes(int64_t choices, int64_t experts,
                              int64_t capacity);

/// out [experts, capacity, hidden]: each kept choice (t, j) copies input
/// row t into its expert's slot; free slots are zeros. input is
/// [tokens, hidden], indices [tokens, k].
void launchMoeDispatch(const float *input, const int64_t *indices, float *out,
                       int64_t tokens, int64_t k, int64_t hidden,
                       int64_t experts, int64_t capacity, void *workspace,
                       cudaStream_t stream);

/// out [tokens, hidden] = sum over token t's kept choices j, in order, of
/// weights[t, j] * input[expert, slot]; input is [experts, capacity,
/// hidden].
void launchMoeCombine(const float *input, const float *weights,
                      const int64_t *indices, float *out, int64_t tokens,
                      int64_t k, int64_t hidden, int64_t experts,
                      int64_t capacity, void *workspace, cudaStream_t stream);

/// Gradients of launchMoeCombine w.r.t. the expert outputs (dInput, zero in
/// free slots) and the weights (dWeights, zero for dropped choices); either
/// may be null.
void launchMoeCombineGrad(const float *input, const float *weights,
                          const int64_t *indices, const float *dOut,
                          float *dInput, float *dWeights, int64_t tokens,
                          int64_t k, int64_t hidden, int64_t experts,
                          int64_t capacity, void *workspace,
                          cudaStream_t stream);

} // namespace cleave::cuda

#endif // CLEAVE_RUNTIME_CUDA_SRC_KERNELS_MOE_H
