//===- Reduction.cu - Sums and maxima over axes on the GPU ----------------===//
//
// Three kernels reduce [outer, length, inner] over the middle dimension:
// - rowGroupKernel (inner == 1, rows up to kBlockRowMin elements): G lanes
//   of a warp per row, G from 4 to 32 as the row grows, so that short rows
//   (a head dimension, a handful of classes) do not idle most of a warp;
// - rowBlockKernel (inner == 1, longer rows or chunks of them): a block
//   per row, warp shuffles then one shared-memory step;
// - columnKernel (inner > 1): a block of bx x by threads, bx consecutive
//   columns (coalesced) by `by` rows, folded through shared memory.
// A split (planSplit) gives the passes enough blocks to fill the GPU.
//
//===----------------------------------------------------------------------===//

#include "kernels/Reduction.h"

#include "Context.h"
#include "kernels/WarpReduce.cuh"

#include <algorithm>
#include <cmath>
#include <limits>

namespace cleave::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
/// Rows longer than this get a block each rather than a group of lanes.
constexpr int64_t kBlockRowMin = 1024;
/// A split row chunk is at least this long, so that each of a block's
/// threads still reads several elements.
constexpr int64_t kMinRowChunk = 2048;
/// A split column chunk gives each thread at least this many rows.
constexpr int64_t kMinRowsPerThread = 8;
/// Partial results per output element, at most; the second pass reduces
/// them with one group or block per output.
constexpr int64_t kMaxChunks = 1024;
/// Blocks per multiprocessor a pass aims for before it splits.
constexpr int64_t kBlocksPerSm = 4;

template <ReduceCombine Op> __device__ __forceinline__ float identity() {
  return Op == ReduceCombine::Sum ? 0.0f : -INFINITY;
}

/// The CPU's `m + x` and `x > m ? x : m` (a NaN never wins a max).
template <ReduceCombine Op>
__device__ __forceinline__ float combine(float acc, float x) {
  if constexpr (Op == ReduceCombine::Sum)
    return acc + x;
  else
    return x > acc ? x : acc;
}

template <ReduceCombine Op>
__device__ __forceinline__ float finish(float acc, float scale) {
  if constexpr (Op == ReduceCombine::Sum)
    return acc * scale;
  else
    return acc;
}

/// combine<Op> as warpReduce's operator. Not the shared Max: `x > acc`
/// and fmaxf differ where acc is NaN.
template <ReduceCombine Op> struct Combiner {
  __device__ __forceinline__ float operator()(float acc, float x) const {
    return combine<Op>(acc, x);
  }
};

/// Combines `acc` over groups of G lanes (xor butterfly: every lane of the
/// group ends with the result). All 32 lanes must call it.
template <ReduceCombine Op, int G>
__device__ __forceinline__ float groupReduce(float acc) {
  return warpReduce<G>(acc, Combiner<Op>());
}

/// Combines `acc` over the block; the result is valid in thread 0.
/// `partial` holds one float per warp. Not the shared blockReduce, whose
/// order differs: here the warps' partials go through a second butterfly
/// (padded with the identity) rather than being combined in warp order.
template <ReduceCombine Op>
__device__ __forceinline__ float blockTreeReduce(float acc, float *partial) {
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  acc = groupReduce<Op, 32>(acc);
  if (lane == 0)
    partial[warp] = acc;
  __syncthreads();
  if (warp == 0) {
    acc = lane < kWarps ? partial[lane] : identity<Op>();
    acc = groupReduce<Op, 32>(acc);
  }
  // partial is rewritten by the next row.
  __syncthreads();
  return acc;
}

/// Segment s (row s / chunks, chunk s % chunks) of a [rows, length] input
/// covers [begin, end) of its row; out[s] receives its result.
struct Segment {
  const float *row;
  int64_t begin, end;
};

__device__ __forceinline__ Segment segment(const float *in, int64_t s,
                                           int64_t chunks, int64_t length,
                                           int64_t chunkLength) {
  int64_t row = s / chunks, chunk = s % chunks;
  int64_t begin = chunk * chunkLength;
  return {in + row * length, begin, min(begin + chunkLength, length)};
}

template <ReduceCombine Op, int G>
__global__ void rowGroupKernel(const float *__restrict__ in,
                               float *__restrict__ out, int64_t segments,
                               int64_t chunks, int64_t length,
                               int64_t chunkLength, float scale) {
  constexpr int kPerWarp = 32 / G;
  int lane = threadIdx.x % 32;
  int64_t warp = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / 32;
  int64_t warps = int64_t(gridDim.x) * blockDim.x / 32;
  // The bound depends on the warp only, so all its lanes reach the
  // shuffles together.
  for (int64_t base = warp * kPerWarp; base < segments;
       base += warps * kPerWarp) {
    int64_t s = base + lane / G;
    float acc = identity<Op>();
    if (s < segments) {
      Segment seg = segment(in, s, chunks, length, chunkLength);
      for (int64_t j = seg.begin + lane % G; j < seg.end; j += G)
        acc = combine<Op>(acc, seg.row[j]);
    }
    acc = groupReduce<Op, G>(acc);
    if (s < segments && lane % G == 0)
      out[s] = finish<Op>(acc, scale);
  }
}

template <ReduceCombine Op>
__global__ void rowBlockKernel(const float *__restrict__ in,
                               float *__restrict__ out, int64_t segments,
                               int64_t chunks, int64_t length,
                               int64_t chunkLength, float scale) {
  __shared__ float partial[kWarps];
  for (int64_t s = blockIdx.x; s < segments; s += gridDim.x) {
    Segment seg = segment(in, s, chunks, length, chunkLength);
    float acc = identity<Op>();
    for (int64_t j = seg.begin + threadIdx.x; j < seg.end; j += blockDim.x)
      acc = combine<Op>(acc, seg.row[j]);
    acc = blockTreeReduce<Op>(acc, partial);
    if (threadIdx.x == 0)
      out[s] = finish<Op>(acc, scale);
  }
}

/// out[o, c, i] = combine over the rows of chunk c of in[o, :, i]. Block
/// (bx, by): bx consecutive columns, by rows at a time; by is a power of
/// two and bx * by == kThreads.
template <ReduceCombine Op>
__global__ void columnKernel(const float *__restrict__ in,
                             float *__restrict__ out, int64_t outer,
                             int64_t length, int64_t inner, int64_t chunks,
                             int64_t chunkLength, float scale) {
  __shared__ float tile[kThreads];
  int tx = threadIdx.x, ty = threadIdx.y;
  int bx = blockDim.x, by = blockDim.y;
  int64_t columnBlocks = (inner + bx - 1) / bx;
  // Every loop bound is the block's, so all threads meet at the barriers.
  for (int64_t o = blockIdx.z; o < outer; o += gridDim.z)
    for (int64_t c = blockIdx.y; c < chunks; c += gridDim.y)
      for (int64_t cb = blockIdx.x; cb < columnBlocks; cb += gridDim.x) {
        int64_t col = cb * bx + tx;
        int64_t begin = c * chunkLength;
        int64_t end = min(begin + chunkLength, length);
        float acc = identity<Op>();
        if (col < inner) {
          const float *x = in + o * length * inner + col;
          for (int64_t r = begin + ty; r < end; r += by)
            acc = combine<Op>(acc, x[r * inner]);
        }
        tile[ty * bx + tx] = acc;
        __syncthreads();
        for (int half = by / 2; half > 0; half /= 2) {
          if (ty < half)
            tile[ty * bx + tx] =
                combine<Op>(tile[ty * bx + tx], tile[(ty + half) * bx + tx]);
          __syncthreads();
        }
        if (ty == 0 && col < inner)
          out[(o * chunks + c) * inner + col] = finish<Op>(tile[tx], scale);
        // The tile is rewritten by the next columns.
        __syncthreads();
      }
}

__global__ void fillKernel(float *__restrict__ out, int64_t n, float value) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = value;
}

/// ReductionGroups in the kernel's index type.
template <typename I> struct GroupWalk {
  int rank;
  I dims[kReductionMaxRank];
  I groupStrides[kReductionMaxRank];
};

template <typename I> GroupWalk<I> narrow(const ReductionGroups &g) {
  GroupWalk<I> w{};
  w.rank = g.rank;
  for (int d = 0; d < kReductionMaxRank; ++d) {
    w.dims[d] = static_cast<I>(g.dims[d]);
    w.groupStrides[d] = static_cast<I>(g.groupStrides[d]);
  }
  return w;
}

template <typename I>
__device__ __forceinline__ I groupOf(const GroupWalk<I> &w, I index) {
  I group = 0;
#pragma unroll
  for (int d = kReductionMaxRank - 1; d >= 0; --d) {
    if (d >= w.rank)
      continue;
    I coord = index;
    if (d > 0) {
      coord = index % w.dims[d];
      index /= w.dims[d];
    }
    group += coord * w.groupStrides[d];
  }
  return group;
}

template <typename I>
__global__ void maxGradMarkKernel(const float *__restrict__ in,
                                  const float *__restrict__ maxima,
                                  float *__restrict__ dIn,
                                  unsigned long long *first, I n,
                                  const __grid_constant__ GroupWalk<I> w) {
  for (I i = I(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += I(gridDim.x) * blockDim.x) {
    dIn[i] = 0.0f;
    I g = groupOf(w, i);
    if (in[i] != maxima[g])
      continue;
    // Ties (a saturated relu, a constant row) would all hit one address;
    // most find a smaller index already there and skip the atomic.
    unsigned long long mine = static_cast<unsigned long long>(i);
    if (mine < *reinterpret_cast<volatile unsigned long long *>(&first[g]))
      atomicMin(&first[g], mine);
  }
}

__global__ void
maxGradScatterKernel(const unsigned long long *__restrict__ first,
                     const float *__restrict__ dOut, int64_t numGroups,
                     float *dIn) {
  for (int64_t g = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       g < numGroups; g += int64_t(gridDim.x) * blockDim.x) {
    unsigned long long f = first[g];
    if (f != ~0ull)
      dIn[f] = dOut[g];
  }
}

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Columns per column-kernel block: enough for coalesced rows of up to 32
/// floats, no more than the inner dimension has (rounded up to a power of
/// two), the rest of the block's threads go down the rows.
int columnBlockX(int64_t inner) {
  int bx = 1;
  while (bx < 32 && bx < inner)
    bx *= 2;
  return bx;
}

/// How the length is cut: `chunks` chunks of `chunkLength` (the last may
/// be shorter, none empty).
struct Split {
  int64_t chunks = 1;
  int64_t chunkLength = 0;
};

Split planSplit(int64_t outer, int64_t length, int64_t inner, int smCount) {
  int64_t target = kBlocksPerSm * std::max(smCount, 1);
  int64_t chunks = 1;
  if (inner == 1) {
    // Only rows long enough for a block each are worth splitting.
    if (outer < target && length >= 2 * kMinRowChunk)
      chunks =
          std::min({ceilDiv(target, outer), length / kMinRowChunk, kMaxChunks});
  } else {
    int64_t by = kThreads / columnBlockX(inner);
    int64_t blocks = ceilDiv(inner, columnBlockX(inner)) * outer;
    if (blocks < target && length >= 2 * by * kMinRowsPerThread)
      chunks = std::min({ceilDiv(target, blocks),
                         length / (by * kMinRowsPerThread), kMaxChunks});
  }
  Split split;
  split.chunkLength = ceilDiv(length, std::max<int64_t>(chunks, 1));
  split.chunks = ceilDiv(length, split.chunkLength);
  return split;
}

template <ReduceCombine Op, int G>
void launchRowGroups(const float *in, float *out, int64_t segments,
                     int64_t chunks, int64_t length, int64_t chunkLength,
                     float scale, cudaStream_t stream) {
  int64_t threads = ceilDiv(segments, 32 / G) * 32;
  rowGroupKernel<Op, G><<<blocksFor(threads, kThreads), kThreads, 0, stream>>>(
      in, out, segments, chunks, length, chunkLength, scale);
  CLEAVE_CUDA_LAUNCHED("row reduction");
}

/// One pass over [rows, length] in `chunks` chunks into out[rows, chunks].
template <ReduceCombine Op>
void reduceRows(const float *in, float *out, int64_t rows, int64_t length,
                Split split, float scale, cudaStream_t stream) {
  int64_t segments = rows * split.chunks;
  int64_t span = split.chunkLength;
  if (span > kBlockRowMin) {
    unsigned blocks = static_cast<unsigned>(
        std::min<int64_t>(segments, std::numeric_limits<int32_t>::max()));
    rowBlockKernel<Op><<<blocks, kThreads, 0, stream>>>(
        in, out, segments, split.chunks, length, span, scale);
    CLEAVE_CUDA_LAUNCHED("row reduction");
  } else if (span > 64) {
    launchRowGroups<Op, 32>(in, out, segments, split.chunks, length, span,
                            scale, stream);
  } else if (span > 32) {
    launchRowGroups<Op, 16>(in, out, segments, split.chunks, length, span,
                            scale, stream);
  } else if (span > 16) {
    launchRowGroups<Op, 8>(in, out, segments, split.chunks, length, span, scale,
                           stream);
  } else {
    launchRowGroups<Op, 4>(in, out, segments, split.chunks, length, span, scale,
                           stream);
  }
}

/// One pass over [outer, length, inner] in `chunks` chunks into
/// out[outer, chunks, inner].
template <ReduceCombine Op>
void reduceColumns(const float *in, float *out, int64_t outer, int64_t length,
                   int64_t inner, Split split, float scale,
                   cudaStream_t stream) {
  int bx = columnBlockX(inner);
  dim3 block(bx, kThreads / bx);
  dim3 grid(static_cast<unsigned>(std::min<int64_t>(
                ceilDiv(inner, bx), std::numeric_limits<int32_t>::max())),
            static_cast<unsigned>(std::min<int64_t>(split.chunks, 65535)),
            static_cast<unsigned>(std::min<int64_t>(outer, 65535)));
  columnKernel<Op><<<grid, block, 0, stream>>>(
      in, out, outer, length, inner, split.chunks, split.chunkLength, scale);
  CLEAVE_CUDA_LAUNCHED("column reduction");
}

template <ReduceCombine Op>
void reduceMiddleAs(const float *in, float *out, int64_t outer, int64_t length,
                    int64_t inner, float scale, float *workspace, int smCount,
                    cudaStream_t stream) {
  Split split = planSplit(outer, length, inner, smCount);
  Split whole;
  whole.chunkLength = split.chunks;
  auto pass = [&](const float *from, float *to, int64_t len, Split s,
                  float factor) {
    if (inner == 1)
      reduceRows<Op>(from, to, outer, len, s, factor, stream);
    else
      reduceColumns<Op>(from, to, outer, len, inner, s, factor, stream);
  };
  if (split.chunks == 1) {
    pass(in, out, length, split, scale);
    return;
  }
  // Partials [outer, chunks, inner], then their reduction, which is the
  // same view with the chunks as its length, in one chunk.
  pass(in, workspace, length, split, 1.0f);
  pass(workspace, out, split.chunks, whole, scale);
}

} // namespace

int64_t reduceMiddleWorkspace(int64_t outer, int64_t length, int64_t inner,
                              int smCount) {
  if (outer <= 0 || length <= 0 || inner <= 0)
    return 0;
  Split split = planSplit(outer, length, inner, smCount);
  return split.chunks == 1 ? 0 : outer * split.chunks * inner;
}

void reduceMiddle(ReduceCombine op, const float *in, float *out, int64_t outer,
                  int64_t length, int64_t inner, float scale, float *workspace,
                  int smCount, cudaStream_t stream) {
  if (outer <= 0 || length <= 0 || inner <= 0)
    return;
  if (op == ReduceCombine::Sum)
    reduceMiddleAs<ReduceCombine::Sum>(in, out, outer, length, inner, scale,
                                       workspace, smCount, stream);
  else
    reduceMiddleAs<ReduceCombine::Max>(in, out, outer, length, inner, scale,
                                       workspace, smCount, stream);
}

void reductionFill(float *out, int64_t n, float value, cudaStream_t stream) {
  if (n <= 0)
    return;
  fillKernel<<<blocksFor(n, kThreads), kThreads, 0, stream>>>(out, n, value);
  CLEAVE_CUDA_LAUNCHED("reduction fill");
}

void reduceMaxGradMark(const float *in, const float *maxima,
                       const ReductionGroups &groups, int64_t n, float *dIn,
                       unsigned long long *first, cudaStream_t stream) {
  if (n <= 0)
    return;
  if (n <= std::numeric_limits<int32_t>::max())
    maxGradMarkKernel<uint32_t>
        <<<blocksFor(n, kThreads), kThreads, 0, stream>>>(
            in, maxima, dIn, first, static_cast<uint32_t>(n),
            narrow<uint32_t>(groups));
  else
    maxGradMarkKernel<int64_t><<<blocksFor(n, kThreads), kThreads, 0, stream>>>(
        in, maxima, dIn, first, n, narrow<int64_t>(groups));
  CLEAVE_CUDA_LAUNCHED("reduce_max_grad");
}

void reduceMaxGradScatter(const unsigned long long *first, const float *dOut,
                          int64_t numGroups, float *dIn, cudaStream_t stream) {
  if (numGroups <= 0)
    return;
  maxGradScatterKernel<<<blocksFor(numGroups, kThreads), kThreads, 0, stream>>>(
      first, dOut, numGroups, dIn);
  CLEAVE_CUDA_LAUNCHED("reduce_max_grad");
}

} // namespace cleave::cuda
