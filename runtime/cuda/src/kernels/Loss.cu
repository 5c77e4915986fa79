//===- Loss.cu - Softmax cross-entropy kernels ----------------------------===//
//
// One warp per row up to 1024 classes, one block per row beyond (a GPT's
// vocabulary). Each thread keeps a running max and sum of exp(x - max)
// over its elements, so the row's log-sum-exp takes one read of the
// logits; the threads' pairs are combined with warp shuffles and then
// across warps through shared memory, in a fixed order. The forward
// writes each row's loss (in double, as the CPU accumulates it) and one
// block adds them up in a fixed order: the mean is deterministic, without
// atomics.
//
//===----------------------------------------------------------------------===//

#include "kernels/Loss.h"

#include "Context.h"
#include "kernels/RowShape.cuh"
#include "kernels/WarpReduce.cuh"

#include <math_constants.h>

#include <algorithm>
#include <type_traits>

namespace cleave::cuda {
namespace {

/// Rows per block when one warp handles a row.
constexpr int kLossWarpRowsPerBlock = 8;
/// Threads per row (and block) for rows longer than kWarpRowMax.
constexpr int kBlockRowThreads = 512;
constexpr int64_t kWarpRowMax = 1024;
/// The single block that reduces over all rows.
constexpr int kReduceThreads = 1024;

/// The max of a set of logits and the sum of exp(x - max) over it (a
/// plain struct, so that it can live in shared memory).
struct MaxSum {
  float max, sum;
};

/// The empty set's.
__device__ MaxSum noLogits() { return {-INFINITY, 0.0f}; }

/// sum * exp(from - to), and 0 for an empty set (whose max is -inf).
__device__ float rescale(float sum, float from, float to) {
  return sum == 0.0f ? 0.0f : sum * expf(from - to);
}

__device__ void accumulate(MaxSum &s, float x) {
  if (x > s.max) {
    s.sum = rescale(s.sum, s.max, x) + 1.0f;
    s.max = x;
  } else if (x != -INFINITY) {
    // A NaN lands here and makes the sum NaN, as on the CPU.
    s.sum += expf(x - s.max);
  }
}

/// The union of two sets. Symmetric in a and b, so every lane of a
/// butterfly gets the same value.
struct Combine {
  __device__ MaxSum operator()(MaxSum a, MaxSum b) const {
    MaxSum r;
    r.max = fmaxf(a.max, b.max);
    r.sum = rescale(a.sum, a.max, r.max) + rescale(b.sum, b.max, r.max);
    return r;
  }
};

/// For warpReduce, which shuffles only the types __shfl_xor_sync takes.
__device__ MaxSum shuffleXor(MaxSum s, int offset, int width) {
  MaxSum other;
  other.max = __shfl_xor_sync(kAllLanes, s.max, offset, width);
  other.sum = __shfl_xor_sync(kAllLanes, s.sum, offset, width);
  return other;
}

template <int kThreads>
__device__ MaxSum rowMaxSum(const float *x, int64_t n, int tid,
                            MaxSum *shared) {
  MaxSum s = noLogits();
  for (int64_t i = tid; i < n; i += kThreads)
    accumulate(s, x[i]);
  return blockReduce<kThreads>(s, Combine(), shared);
}

__device__ bool isIgnored(int64_t label, int64_t ignoreIndex) {
  return label == ignoreIndex;
}

__device__ bool inRange(int64_t label, int64_t classes) {
  return label >= 0 && label < classes;
}

/// rowLoss[r] = (max + log(sum)) - x[label] in double, as the CPU adds it
/// to its total; 0 for an ignored row, NaN for a label out of range.
template <int kThreads>
__global__ void
__launch_bounds__(kThreads == kWarp ? kWarp * kLossWarpRowsPerBlock : kThreads)
    rowLossKernel(const float *logits, const int64_t *labels, double *rowLoss,
                  int64_t rows, int64_t classes, int64_t ignoreIndex) {
  __shared__ MaxSum shared[kThreads / kWarp];
  RowWalk<kThreads, kLossWarpRowsPerBlock> walk;
  for (int64_t row = walk.first; row < rows; row += walk.stride) {
    int64_t label = labels[row];
    if (isIgnored(label, ignoreIndex) || !inRange(label, classes)) {
      if (walk.tid == 0)
        rowLoss[row] = isIgnored(label, ignoreIndex) ? 0.0 : CUDART_NAN;
      continue;
    }
    const float *x = logits + row * classes;
    MaxSum s = rowMaxSum<kThreads>(x, classes, walk.tid, shared);
    if (walk.tid == 0)
      rowLoss[row] = double(s.max) + logf(s.sum) - x[label];
  }
}

/// loss = total / count over the rows not ignored, 0 when there are none.
__global__ void __launch_bounds__(kReduceThreads)
    lossMeanKernel(const double *rowLoss, const int64_t *labels, int64_t rows,
                   int64_t ignoreIndex, float *loss) {
  __shared__ double totals[kReduceThreads / kWarp];
  __shared__ long long counts[kReduceThreads / kWarp];
  double total = 0.0;
  long long count = 0;
  for (int64_t r = threadIdx.x; r < rows; r += kReduceThreads) {
    total += rowLoss[r];
    count += !isIgnored(labels[r], ignoreIndex);
  }
  total = blockReduce<kReduceThreads>(total, Sum(), totals);
  count = blockReduce<kReduceThreads>(count, Sum(), counts);
  if (threadIdx.x == 0)
    loss[0] = count ? static_cast<float>(total / count) : 0.0f;
}

/// scale = dLoss / count over the rows not ignored, 0 when there are none.
__global__ void __launch_bounds__(kReduceThreads)
    gradScaleKernel(const int64_t *labels, int64_t rows, int64_t ignoreIndex,
                    const float *dLoss, float *scale) {
  __shared__ long long counts[kReduceThreads / kWarp];
  long long count = 0;
  for (int64_t r = threadIdx.x; r < rows; r += kReduceThreads)
    count += !isIgnored(labels[r], ignoreIndex);
  count = blockReduce<kReduceThreads>(count, Sum(), counts);
  if (threadIdx.x == 0)
    scale[0] = count ? dLoss[0] / static_cast<float>(count) : 0.0f;
}

/// dx = exp(x - (max + log(sum))) * scale, less scale at the label; the
/// product is rounded before the subtraction as on the CPU (no FMA).
template <int kThreads>
__global__ void
__launch_bounds__(kThreads == kWarp ? kWarp * kLossWarpRowsPerBlock : kThreads)
    crossEntropyGradKernel(const float *logits, const int64_t *labels,
                           const float *scalePtr, float *dLogits, int64_t rows,
                           int64_t classes, int64_t ignoreIndex) {
  __shared__ MaxSum shared[kThreads / kWarp];
  float scale = *scalePtr;
  RowWalk<kThreads, kLossWarpRowsPerBlock> walk;
  for (int64_t row = walk.first; row < rows; row += walk.stride) {
    int64_t label = labels[row];
    const float *x = logits + row * classes;
    float *dx = dLogits + row * classes;
    if (isIgnored(label, ignoreIndex) || !inRange(label, classes)) {
      float fill = isIgnored(label, ignoreIndex) ? 0.0f : CUDART_NAN_F;
      for (int64_t i = walk.tid; i < classes; i += kThreads)
        dx[i] = fill;
      continue;
    }
    MaxSum s = rowMaxSum<kThreads>(x, classes, walk.tid, shared);
    float shift = s.max + logf(s.sum);
    for (int64_t i = walk.tid; i < classes; i += kThreads)
      dx[i] = __fmul_rn(expf(x[i] - shift), scale);
    if (walk.tid == label % kThreads)
      dx[label] = __fsub_rn(dx[label], scale);
  }
}

/// Calls f(std::integral_constant<int, threads per row>) for rows of
/// `classes` logits.
template <typename F> void withRowThreads(int64_t classes, F &&f) {
  if (classes <= kWarpRowMax)
    f(std::integral_constant<int, kWarp>{});
  else
    f(std::integral_constant<int, kBlockRowThreads>{});
}

template <int kThreads> dim3 rowGrid(int64_t rows) {
  int64_t perBlock = kThreads == kWarp ? kLossWarpRowsPerBlock : 1;
  return dim3(static_cast<unsigned>(
      std::clamp<int64_t>((rows + perBlock - 1) / perBlock, 1, kMaxBlocks)));
}

template <int kThreads> dim3 rowBlock() {
  return dim3(kThreads == kWarp ? kWarp * kLossWarpRowsPerBlock : kThreads);
}

} // namespace

size_t crossEntropyWorkspaceBytes(int64_t rows) {
  return sizeof(double) * static_cast<size_t>(std::max<int64_t>(rows, 1));
}

void launchCrossEntropy(const float *logits, const int64_t *labels, float *loss,
                        int64_t rows, int64_t classes, int64_t ignoreIndex,
                        void *workspace, cudaStream_t stream) {
  double *rowLoss = static_cast<double *>(workspace);
  if (rows > 0) {
    withRowThreads(classes, [&](auto threads) {
      constexpr int kThreads = decltype(threads)::value;
      rowLossKernel<kThreads>
          <<<rowGrid<kThreads>(rows), rowBlock<kThreads>(), 0, stream>>>(
              logits, labels, rowLoss, rows, classes, ignoreIndex);
    });
    CLEAVE_CUDA_LAUNCHED("rowLossKernel");
  }
  lossMeanKernel<<<1, kReduceThreads, 0, stream>>>(rowLoss, labels, rows,
                                                   ignoreIndex, loss);
  CLEAVE_CUDA_LAUNCHED("lossMeanKernel");
}

size_t crossEntropyGradWorkspaceBytes() { return sizeof(float); }

void launchCrossEntropyGrad(const float *logits, const int64_t *labels,
                            const float *dLoss, float *dLogits, int64_t rows,
                            int64_t classes, int64_t ignoreIndex,
                            void *workspace, cudaStream_t stream) {
  if (rows <= 0 || classes <= 0)
    return;
  float *scale = static_cast<float *>(workspace);
  gradScaleKernel<<<1, kReduceThreads, 0, stream>>>(labels, rows, ignoreIndex,
                                                    dLoss, scale);
  CLEAVE_CUDA_LAUNCHED("gradScaleKernel");
  withRowThreads(classes, [&](auto threads) {
    constexpr int kThreads = decltype(threads)::value;
    crossEntropyGradKernel<kThreads>
        <<<rowGrid<kThreads>(rows), rowBlock<kThreads>(), 0, stream>>>(
            logits, labels, scale, dLogits, rows, classes, ignoreIndex);
  });
  CLEAVE_CUDA_LAUNCHED("crossEntropyGradKernel");
}

} // namespace cleave::cuda
