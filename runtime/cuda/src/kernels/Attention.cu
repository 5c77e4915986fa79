//===- Attention.cu - Softmax and rotary embedding kernels ----------------===//
//
// Softmax rows run one warp per row up to 512 elements and one block per
// row beyond (128 to 512 threads, so that a thread holds at most 16
// elements). Each thread sees elements tid, tid + threads, ... of its row
// (coalesced) and keeps them in registers up to 8192 elements, so that a
// row is read from memory once; longer rows are re-read per pass (from L1
// or L2). Max and sum are reduced with warp shuffles, then across a
// block's warps through shared memory, always in the same order, so the
// results are deterministic. The arithmetic is the CPU kernel's: the row
// max, expf(x - max) summed in fp32, then expf(x - max) * (1 / sum).
//
//===----------------------------------------------------------------------===//

#include "kernels/Attention.h"

#include "Context.h"
#include "kernels/RowShape.cuh"
#include "kernels/WarpReduce.cuh"

#include <algorithm>

namespace cleave::cuda {
namespace {

//===----------------------------------------------------------------------===//
// Softmax
//===----------------------------------------------------------------------===//

template <int kThreads, int kPer>
__global__ void __launch_bounds__(RowShape<kThreads, kPer>::blockThreads,
                                  RowShape<kThreads, kPer>::minBlocks)
    softmaxRowsKernel(const float *in, float *out, int64_t rows, int64_t n,
                      bool causal, int64_t queries,
                      kernels::RowOffsets shift) {
  __shared__ float shared[kThreads / kWarp];
  RowWalk<kThreads> walk;
  for (int64_t row = walk.first; row < rows; row += walk.stride) {
    const float *x = in + row * n;
    float *y = out + row * n;
    int64_t valid = n;
    if (causal)
      valid = min(n, max(int64_t(0), shift(row % queries) + 1));
    // Masked keys are never read: a causal row reads only what it keeps.
    for (int64_t i = max(valid, int64_t(0)) + walk.tid; i < n; i += kThreads)
      y[i] = 0.0f;
    if (valid <= 0)
      continue;
    RowSlice<kThreads, kPer> v(x, valid, walk.tid);
    float rowMax = -INFINITY;
    v.forEach([&](int64_t, float xi) { rowMax = fmaxf(rowMax, xi); });
    rowMax = blockReduce<kThreads>(rowMax, Max(), shared);
    float sum = 0.0f;
    v.forEach([&](int64_t, float xi) { sum += expf(xi - rowMax); });
    sum = blockReduce<kThreads>(sum, Sum(), shared);
    float inv = 1.0f / sum;
    // Every read of the row is done (the reductions synchronise), so out
    // may alias in.
    v.forEach([&](int64_t i, float xi) { y[i] = expf(xi - rowMax) * inv; });
  }
}

/// One thread per [outer, inner] column, walking the axis as the CPU does.
__global__ void softmaxStridedKernel(const float *in, float *out, int64_t outer,
                                     int64_t n, int64_t inner) {
  int64_t columns = outer * inner;
  for (int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; c < columns;
       c += int64_t(gridDim.x) * blockDim.x) {
    int64_t base = (c / inner) * n * inner + c % inner;
    const float *x = in + base;
    float *y = out + base;
    float rowMax = -INFINITY;
    for (int64_t j = 0; j < n; ++j)
      rowMax = fmaxf(rowMax, x[j * inner]);
    float sum = 0.0f;
    for (int64_t j = 0; j < n; ++j) {
      float e = expf(x[j * inner] - rowMax);
      y[j * inner] = e;
      sum += e;
    }
    float inv = 1.0f / sum;
    for (int64_t j = 0; j < n; ++j)
      y[j * inner] *= inv;
  }
}

template <int kThreads, int kPer>
__global__ void __launch_bounds__(RowShape<kThreads, kPer>::blockThreads,
                                  RowShape<kThreads, kPer>::minBlocks)
    softmaxGradRowsKernel(const float *out, const float *dOut, float *dIn,
                          int64_t rows, int64_t n) {
  __shared__ float shared[kThreads / kWarp];
  RowWalk<kThreads> walk;
  for (int64_t row = walk.first; row < rows; row += walk.stride) {
    RowSlice<kThreads, kPer> y(out + row * n, n, walk.tid);
    RowSlice<kThreads, kPer> g(dOut + row * n, n, walk.tid);
    float dot = 0.0f;
    forEach2(y, g, [&](int64_t, float yi, float gi) { dot += yi * gi; });
    dot = blockReduce<kThreads>(dot, Sum(), shared);
    float *d = dIn + row * n;
    forEach2(y, g,
             [&](int64_t i, float yi, float gi) { d[i] = yi * (gi - dot); });
  }
}

__global__ void softmaxGradStridedKernel(const float *out, const float *dOut,
                                         float *dIn, int64_t outer, int64_t n,
                                         int64_t inner) {
  int64_t columns = outer * inner;
  for (int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; c < columns;
       c += int64_t(gridDim.x) * blockDim.x) {
    int64_t base = (c / inner) * n * inner + c % inner;
    const float *y = out + base, *g = dOut + base;
    float *d = dIn + base;
    float dot = 0.0f;
    for (int64_t j = 0; j < n; ++j)
      dot += y[j * inner] * g[j * inner];
    for (int64_t j = 0; j < n; ++j)
      d[j * inner] = y[j * inner] * (g[j * inner] - dot);
  }
}

//===----------------------------------------------------------------------===//
// Rope
//===----------------------------------------------------------------------===//

/// table[s * half + i] = (cos, sin) of position s's angle for pair i, in
/// double and rounded to float as the CPU's table is.
__global__ void ropeTableKernel(float2 *table, int64_t seq, int64_t half,
                                int64_t dim, double theta,
                                kernels::RowOffsets positions, bool inverse) {
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       t < seq * half; t += int64_t(gridDim.x) * blockDim.x) {
    int64_t s = t / half, i = t % half;
    double pos = static_cast<double>(positions(s));
    double angle = pos * pow(theta, -2.0 * static_cast<double>(i) /
                                        static_cast<double>(dim));
    double sine = sin(angle);
    table[t] = make_float2(static_cast<float>(cos(angle)),
                           static_cast<float>(inverse ? -sine : sine));
  }
}

/// One thread per rotated pair; both elements are read before either is
/// written, so out may alias in. The _rn intrinsics keep nvcc from fusing
/// the products into FMAs, which the CPU does not have.
__global__ void ropeKernel(const float *in, float *out, const float2 *table,
                           int64_t pairs, int64_t seq, int64_t heads,
                           int64_t half) {
  for (int64_t p = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; p < pairs;
       p += int64_t(gridDim.x) * blockDim.x) {
    int64_t i = p % half, vec = p / half; // vec = (b * seq + s) * heads + h
    int64_t s = (vec / heads) % seq;
    float2 cs = table[s * half + i];
    const float *x = in + vec * 2 * half;
    float *y = out + vec * 2 * half;
    float lo = x[i], hi = x[i + half];
    y[i] = __fsub_rn(__fmul_rn(lo, cs.x), __fmul_rn(hi, cs.y));
    y[i + half] = __fadd_rn(__fmul_rn(hi, cs.x), __fmul_rn(lo, cs.y));
  }
}

} // namespace

void launchSoftmaxRows(const float *in, float *out, int64_t rows, int64_t n,
                       bool causal, int64_t queries,
                       kernels::RowOffsets shift, cudaStream_t stream) {
  if (rows <= 0 || n <= 0)
    return;
  withRowShape(n, [&](auto shape) {
    using S = decltype(shape);
    softmaxRowsKernel<S::threads, S::per>
        <<<rowBlocks<S>(rows), S::blockThreads, 0, stream>>>(
            in, out, rows, n, causal, causal ? queries : 1, shift);
  });
  CLEAVE_CUDA_LAUNCHED("softmaxRowsKernel");
}

void launchSoftmaxStrided(const float *in, float *out, int64_t outer, int64_t n,
                          int64_t inner, cudaStream_t stream) {
  if (outer <= 0 || n <= 0 || inner <= 0)
    return;
  softmaxStridedKernel<<<blocksFor(outer * inner), 256, 0, stream>>>(
      in, out, outer, n, inner);
  CLEAVE_CUDA_LAUNCHED("softmaxStridedKernel");
}

void launchSoftmaxGradRows(const float *out, const float *dOut, float *dIn,
                           int64_t rows, int64_t n, cudaStream_t stream) {
  if (rows <= 0 || n <= 0)
    return;
  withRowShape(n, [&](auto shape) {
    using S = decltype(shape);
    softmaxGradRowsKernel<S::threads, S::per>
        <<<rowBlocks<S>(rows), S::blockThreads, 0, stream>>>(out, dOut, dIn,
                                                             rows, n);
  });
  CLEAVE_CUDA_LAUNCHED("softmaxGradRowsKernel");
}

void launchSoftmaxGradStrided(const float *out, const float *dOut, float *dIn,
                              int64_t outer, int64_t n, int64_t inner,
                              cudaStream_t stream) {
  if (outer <= 0 || n <= 0 || inner <= 0)
    return;
  softmaxGradStridedKernel<<<blocksFor(outer * inner), 256, 0, stream>>>(
      out, dOut, dIn, outer, n, inner);
  CLEAVE_CUDA_LAUNCHED("softmaxGradStridedKernel");
}

size_t ropeWorkspaceBytes(int64_t seq, int64_t headDim) {
  return static_cast<size_t>(std::max<int64_t>(seq * (headDim / 2), 0)) *
         sizeof(float2);
}

void launchRope(const float *in, float *out, int64_t batch, int64_t seq,
                int64_t heads, int64_t headDim, double theta,
                kernels::RowOffsets positions, bool inverse, void *workspace,
                cudaStream_t stream) {
  int64_t half = headDim / 2;
  int64_t pairs = batch * seq * heads * half;
  if (pairs <= 0)
    return;
  float2 *table = static_cast<float2 *>(workspace);
  ropeTableKernel<<<blocksFor(seq * half), 256, 0, stream>>>(
      table, seq, half, headDim, theta, positions, inverse);
  CLEAVE_CUDA_LAUNCHED("ropeTableKernel");
  ropeKernel<<<blocksFor(pairs), 256, 0, stream>>>(in, out, table, pairs, seq,
                                                   heads, half);
  CLEAVE_CUDA_LAUNCHED("ropeKernel");
}

} // namespace cleave::cuda
