//===- Reduction.h - Sums and maxima over axes on the GPU -------*- C++ -*-===//
//
// Every reduction the host glue (ReductionOps.cpp) runs is one or more
// passes of the same shape: the input viewed as [outer, length, inner],
// reduced over the middle dimension into [outer, inner]. inner == 1 is a
// row reduction (the last axes; groups of lanes or a whole block per row),
// inner > 1 a column reduction (leading or middle axes; threads along the
// contiguous inner dimension, so reads coalesce). When that leaves the GPU
// short of work (a bias gradient [B*S, H] -> [H], a loss mean to a
// scalar) the length is split into chunks whose partial results a second
// pass reduces, deterministically (no atomics).
//
// Accumulation is fp32, as on the CPU (which sums sequentially; the order
// here differs, so sums agree to fp32 rounding, and maxima exactly).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_CUDA_SRC_KERNELS_REDUCTION_H
#define CLEAVE_RUNTIME_CUDA_SRC_KERNELS_REDUCTION_H

#include <cuda_runtime.h>

#include <cstdint>

namespace cleave::cuda {

enum class ReduceCombine { Sum, Max };

/// Floats of workspace `reduceMiddle` needs for this view on a GPU with
/// `smCount` multiprocessors (0 when it runs in one pass).
int64_t reduceMiddleWorkspace(int64_t outer, int64_t length, int64_t inner,
                              int smCount);

/// out[o, i] = combine over r of in[o, r, i], for o < outer, i < inner,
/// r < length (length >= 1), multiplied by `scale` for a sum (a mean's
/// 1 / count, applied as the CPU does after summing). A max skips NaNs as
/// the CPU's `x > m ? x : m` does. `workspace` holds
/// reduceMiddleWorkspace(...) floats.
void reduceMiddle(ReduceCombine op, const float *in, float *out, int64_t outer,
                  int64_t length, int64_t inner, float scale, float *workspace,
                  int smCount, cudaStream_t stream);

/// out[i] = value for i < n (an empty reduction's result).
void reductionFill(float *out, int64_t n, float value, cudaStream_t stream);

/// The most merged dimensions of reduce_max_grad's group map.
constexpr int kReductionMaxRank = 8;

/// Maps an input element to its reduction group (its index in the row-
/// major result): the input's merged dimensions and, per dimension, its
/// stride in the result (0 for reduced dimensions).
struct ReductionGroups {
  int rank = 0;
  int64_t dims[kReductionMaxRank] = {};
  int64_t groupStrides[kReductionMaxRank] = {};
};

/// reduce_max_grad, first half: zeroes dIn and leaves in first[g] the
/// smallest row-major index i of group g with in[i] == maxima[g]. `first`
/// must hold ~0 (no index) for every group beforehand.
void reduceMaxGradMark(const float *in, const float *maxima,
                       const ReductionGroups &groups, int64_t n, float *dIn,
                       unsigned long long *first, cudaStream_t stream);

/// Second half: dIn[first[g]] = dOut[g] for every group that has one.
void reduceMaxGradScatter(const unsigned long long *first, const float *dOut,
                          int64_t numGroups, float *dIn, cudaStream_t stream);

} // namespace cleave::cuda

#endif // CLEAVE_RUNTIME_CUDA_SRC_KERNELS_REDUCTION_H
