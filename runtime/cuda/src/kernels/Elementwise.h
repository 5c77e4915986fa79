//===- Elementwise.h - Pointwise and broadcasting kernels -------*- C++ -*-===//
//
// The launchers behind graph.add ... min, the unary activations and their
// gradients, dropout, where, compare, broadcast_to, runtime.accumulate and
// runtime.scale. Every result is a dense row-major tensor; operands that
// broadcast to it are described by a BroadcastLayout, which the host glue
// (ElementwiseOps.cpp) builds with the dimensions merged the way the CPU's
// planBroadcast merges them, so the common cases run as rank-1 or rank-2
// index maps.
//
// Device code rounds like the CPU kernels: every product that feeds a sum
// is rounded on its own (no fused multiply-add), so the ops built from
// arithmetic and the CPU's fastExp (sigmoid, silu, the tanh GELU) give the
// CPU's bits; exp, log, tanh, erf and pow differ only by the ulps between
// CUDA's and glibc's libm.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_CUDA_SRC_KERNELS_ELEMENTWISE_H
#define CLEAVE_RUNTIME_CUDA_SRC_KERNELS_ELEMENTWISE_H

#include "cleave/runtime/kernels/Elementwise.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace cleave::cuda {

/// The most (merged) dimensions a broadcasting kernel walks.
constexpr int kBroadcastMaxRank = 8;

/// How `N` operands broadcast to a dense row-major result of `dims`:
/// operand k has strides[k][d] elements between neighbours along dimension
/// d (0 where it is broadcast). Passed to the kernels by value.
template <int N> struct BroadcastLayout {
  int rank = 0;
  int64_t dims[kBroadcastMaxRank] = {};
  int64_t strides[N][kBroadcastMaxRank] = {};
};

enum class ComparePredicate { Eq, Ne, Lt, Le, Gt, Ge };

/// out = op(lhs, rhs) over the n elements of the result.
void elementwiseBinary(kernels::BinaryOp op, const float *lhs, const float *rhs,
                       float *out, int64_t n, const BroadcastLayout<2> &layout,
                       cudaStream_t stream);

/// out = predicate(lhs, rhs) as one byte per element (IEEE comparisons:
/// infinities compare equal to themselves, NaN to nothing).
void elementwiseCompare(ComparePredicate predicate, const float *lhs,
                        const float *rhs, uint8_t *out, int64_t n,
                        const BroadcastLayout<2> &layout, cudaStream_t stream);

/// out = condition ? lhs : rhs; layout operands are condition, lhs, rhs.
void elementwiseWhere(const uint8_t *condition, const float *lhs,
                      const float *rhs, float *out, int64_t n,
                      const BroadcastLayout<3> &layout, cudaStream_t stream);

/// out = in + 0 with `in` broadcast to the result (graph.broadcast_to,
/// which the CPU computes as an add of zeros).
void elementwiseBroadcast(const float *in, float *out, int64_t n,
                          const BroadcastLayout<1> &layout,
                          cudaStream_t stream);

/// out = op(in) over n elements; out may alias in.
void elementwiseUnary(kernels::UnaryOp op, const float *in, float *out,
                      int64_t n, cudaStream_t stream);

/// dIn = dOut * op'(in) over n elements (graph.activation_grad).
void elementwiseActivationGrad(kernels::UnaryOp op, const float *in,
                               const float *dOut, float *dIn, int64_t n,
                               cudaStream_t stream);

/// out[i] = keeps(i) ? in[i] * scale : 0, where element i is kept when the
/// top 53 bits of the i-th splitmix64 output of `seed` are >= `threshold`
/// (kernels::dropoutKeeps). out may alias in.
void elementwiseDropout(const float *in, float *out, int64_t n, uint64_t seed,
                        uint64_t threshold, float scale, cudaStream_t stream);

/// out[i] += in[i] over n elements.
void elementwiseAccumulate(const float *in, float *out, int64_t n,
                           cudaStream_t stream);

/// out[i] = in[i] * factor over n elements; out may alias in.
void elementwiseScale(const float *in, float *out, int64_t n, float factor,
                      cudaStream_t stream);

} // namespace cleave::cuda

#endif // CLEAVE_RUNTIME_CUDA_SRC_KERNELS_ELEMENTWISE_H
