//===- FlashAttention.cu - Fused attention forward and backward -----------===//
//
// FlashAttention-2's algorithm in fp32 CUDA cores: a block holds kRows
// consecutive query rows of one head (a warp per row, each lane holding
// dim / 32 of the row's elements in registers) and walks the keys in tiles
// of kTile rows staged in shared memory, which every warp of the block
// reads. Scores exist only one at a time in registers: each is a warp-wide
// dot product, folded into a running maximum, sum and output (online
// softmax). A tile past the last key any row of the block may see under
// the causal mask is never loaded: the blocks above the diagonal are
// skipped, half the work at long sequences.
//
// The backward runs two kernels from the forward's log-sum-exp: one warp
// per query row for dq (and the row's delta = rowsum(dout * out), kept for
// the second), one warp per key row for dk and dv, its query tiles staged
// in shared memory and skipped where the mask hides the key from all of
// them. Grouped-query attention: key head hk is read by the query heads
// [hk * group, (hk + 1) * group), whose contributions dk and dv sum.
//
// Not yet tensor-core tiles (the CPU kernel's GEMM blocks): the products
// run on CUDA cores, which keeps memory at O(sequence) but not the
// speed of FlashAttention-2's mma tiles.
//
//===----------------------------------------------------------------------===//

#include "kernels/FlashAttention.h"

#include "Context.h"
#include "kernels/WarpReduce.cuh"
#include "cleave/runtime/kernels/FlashAttention.h"

#include <cmath>
#include <type_traits>

namespace cleave::cuda {
namespace {

constexpr int kRows = 4;  // query (or key) rows a block, one warp each
constexpr int kTile = 16; // key (or query) rows staged per tile

struct Dims {
  int64_t heads, kvHeads, queries, keys;
  int dim;
  float scale;
  bool causal;
  kernels::RowOffsets shift;
  const float *mask;
  int64_t maskDiv, maskMod, maskPlane, maskRowStride;
};

__device__ __forceinline__ int64_t imin(int64_t a, int64_t b) {
  return a < b ? a : b;
}
__device__ __forceinline__ int64_t imax(int64_t a, int64_t b) {
  return a < b ? b : a;
}

/// The additive mask's value for head h, query i, key j (0 without one).
__device__ __forceinline__ float maskAt(const Dims &d, int64_t h, int64_t i,
                                        int64_t j) {
  if (!d.mask)
    return 0.0f;
  float m = d.mask[((h / d.maskDiv) % d.maskMod) * d.maskPlane +
                   i * d.maskRowStride + j];
  // As kernels::maskedScore (not callable on the device).
  return m <= kernels::kMaskedAtOrBelow ? -INFINITY : m;
}

/// Keys a query row may see: [0, visible(i)), never fewer for a later row.
__device__ __forceinline__ int64_t visible(const Dims &d, int64_t i) {
  if (!d.causal)
    return d.keys;
  return imax(0, imin(d.keys, d.shift(i) + 1));
}

/// Copies rows [first, first + count) of a [rows, dim] matrix into `tile`
/// ([kTile, dim]), zero past the end, with every thread of the block.
__device__ void stage(const float *src, int64_t first, int64_t rows, int dim,
                      float *tile) {
  for (int e = threadIdx.x; e < kTile * dim; e += blockDim.x) {
    int64_t r = first + e / dim;
    tile[e] = r < rows ? src[r * dim + e % dim] : 0.0f;
  }
}

/// Keys and values [t, t + kTile) of one head into shared memory, after
/// every warp is done with the previous tile.
__device__ void stageKeys(const float *kh, const float *vh, int64_t t,
                          const Dims &d, float *kTileBuf, float *vTileBuf) {
  __syncthreads();
  stage(kh, t, d.keys, d.dim, kTileBuf);
  stage(vh, t, d.keys, d.dim, vTileBuf);
  __syncthreads();
}

/// Warp-wide dot product of a row held as kPer lane-strided registers
/// (element lane + 32 * p) with a row in shared memory.
template <int kPer>
__device__ __forceinline__ float dotRow(const float (&x)[kPer],
                                        const float *row, int dim, int lane) {
  float s = 0.0f;
#pragma unroll
  for (int p = 0; p < kPer; ++p) {
    int e = lane + kWarp * p;
    if (e < dim)
      s += x[p] * row[e];
  }
  return warpReduce(s, Sum());
}

template <int kPer>
__device__ __forceinline__ void loadRow(const float *src, int dim, int lane,
                                        float (&x)[kPer]) {
#pragma unroll
  for (int p = 0; p < kPer; ++p) {
    int e = lane + kWarp * p;
    x[p] = e < dim ? src[e] : 0.0f;
  }
}

template <int kPer>
__device__ __forceinline__ void storeRow(float *dst, int dim, int lane,
                                         const float (&x)[kPer]) {
#pragma unroll
  for (int p = 0; p < kPer; ++p) {
    int e = lane + kWarp * p;
    if (e < dim)
      dst[e] = x[p];
  }
}

/// grid (ceil(queries / kRows), heads); block kRows warps.
template <int kPer>
__global__ void forwardKernel(const float *q, const float *k, const float *v,
                              float *out, float *lse, Dims d) {
  extern __shared__ float smem[];
  float *kTileBuf = smem, *vTileBuf = smem + kTile * d.dim;
  int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  int64_t h = blockIdx.y, hk = h / (d.heads / d.kvHeads);
  int64_t first = int64_t(blockIdx.x) * kRows, i = first + warp;
  bool active = i < d.queries;
  const float *kh = k + hk * d.keys * d.dim, *vh = v + hk * d.keys * d.dim;

  float qi[kPer], acc[kPer];
  if (active)
    loadRow(q + (h * d.queries + i) * d.dim, d.dim, lane, qi);
#pragma unroll
  for (int p = 0; p < kPer; ++p) {
    acc[p] = 0.0f;
    if (!active)
      qi[p] = 0.0f;
  }
  float m = -INFINITY, l = 0.0f;
  int64_t mine = active ? visible(d, i) : 0;
  // The block's last row sees the most keys.
  int64_t blockKeys = visible(d, imin(first + kRows, d.queries) - 1);
  for (int64_t t = 0; t < blockKeys; t += kTile) {
    stageKeys(kh, vh, t, d, kTileBuf, vTileBuf);
    int64_t end = imin(kTile, mine - t);
    for (int j = 0; j < end; ++j) {
      float s = d.scale * dotRow(qi, kTileBuf + j * d.dim, d.dim, lane) +
                maskAt(d, h, i, t + j);
      if (s == -INFINITY) // masked out: adds nothing
        continue;
      float mNew = fmaxf(m, s);
      float correction = expf(m - mNew), p = expf(s - mNew);
      l = l * correction + p;
      const float *vj = vTileBuf + j * d.dim;
#pragma unroll
      for (int e = 0; e < kPer; ++e) {
        int c = lane + kWarp * e;
        acc[e] = acc[e] * correction + (c < d.dim ? p * vj[c] : 0.0f);
      }
      m = mNew;
    }
  }
  if (!active)
    return;
  float inv = l > 0.0f ? 1.0f / l : 0.0f;
#pragma unroll
  for (int e = 0; e < kPer; ++e)
    acc[e] *= inv;
  storeRow(out + (h * d.queries + i) * d.dim, d.dim, lane, acc);
  if (lane == 0)
    lse[h * d.queries + i] = l > 0.0f ? m + logf(l) : -INFINITY;
}

/// dq for one query row per warp, and delta = rowsum(dout * out).
template <int kPer>
__global__ void queryGradKernel(const float *q, const float *k, const float *v,
                                const float *out, const float *lse,
                                const float *dOut, float *dq, float *delta,
                                Dims d) {
  extern __shared__ float smem[];
  float *kTileBuf = smem, *vTileBuf = smem + kTile * d.dim;
  int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  int64_t h = blockIdx.y, hk = h / (d.heads / d.kvHeads);
  int64_t first = int64_t(blockIdx.x) * kRows, i = first + warp;
  bool active = i < d.queries;
  int64_t row = h * d.queries + i;
  const float *kh = k + hk * d.keys * d.dim, *vh = v + hk * d.keys * d.dim;

  float qi[kPer], gi[kPer], oi[kPer], acc[kPer];
  float rowLse = -INFINITY, rowDelta = 0.0f;
  if (active) {
    loadRow(q + row * d.dim, d.dim, lane, qi);
    loadRow(dOut + row * d.dim, d.dim, lane, gi);
    loadRow(out + row * d.dim, d.dim, lane, oi);
    float part = 0.0f;
#pragma unroll
    for (int e = 0; e < kPer; ++e)
      part += gi[e] * oi[e];
    rowDelta = warpReduce(part, Sum());
    rowLse = lse[row];
  } else {
#pragma unroll
    for (int e = 0; e < kPer; ++e)
      qi[e] = gi[e] = oi[e] = 0.0f;
  }
#pragma unroll
  for (int e = 0; e < kPer; ++e)
    acc[e] = 0.0f;
  // A row that sees no key (lse -inf) has no gradient.
  int64_t mine = active && rowLse > -INFINITY ? visible(d, i) : 0;
  int64_t blockKeys = visible(d, imin(first + kRows, d.queries) - 1);
  for (int64_t t = 0; t < blockKeys; t += kTile) {
    stageKeys(kh, vh, t, d, kTileBuf, vTileBuf);
    int64_t end = imin(kTile, mine - t);
    for (int j = 0; j < end; ++j) {
      const float *kj = kTileBuf + j * d.dim;
      float p = expf(d.scale * dotRow(qi, kj, d.dim, lane) +
                     maskAt(d, h, i, t + j) - rowLse);
      float dp = dotRow(gi, vTileBuf + j * d.dim, d.dim, lane);
      float ds = p * (dp - rowDelta) * d.scale;
#pragma unroll
      for (int e = 0; e < kPer; ++e) {
        int c = lane + kWarp * e;
        if (c < d.dim)
          acc[e] += ds * kj[c];
      }
    }
  }
  if (!active)
    return;
  if (dq)
    storeRow(dq + row * d.dim, d.dim, lane, acc);
  if (lane == 0)
    delta[row] = rowDelta;
}

/// dk and dv for one key row per warp, over the query heads of its group.
/// grid (ceil(keys / kRows), kvHeads).
template <int kPer>
__global__ void keyGradKernel(const float *q, const float *k, const float *v,
                              const float *lse, const float *dOut,
                              const float *delta, float *dk, float *dv,
                              Dims d) {
  extern __shared__ float smem[];
  float *qTileBuf = smem, *gTileBuf = smem + kTile * d.dim;
  __shared__ float lseTile[kTile], deltaTile[kTile];
  int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  int64_t hk = blockIdx.y, group = d.heads / d.kvHeads;
  int64_t first = int64_t(blockIdx.x) * kRows, j = first + warp;
  bool active = j < d.keys;
  int64_t row = hk * d.keys + j;

  float kj[kPer], vj[kPer], dkAcc[kPer], dvAcc[kPer];
  if (active) {
    loadRow(k + row * d.dim, d.dim, lane, kj);
    loadRow(v + row * d.dim, d.dim, lane, vj);
  }
#pragma unroll
  for (int e = 0; e < kPer; ++e) {
    dkAcc[e] = dvAcc[e] = 0.0f;
    if (!active)
      kj[e] = vj[e] = 0.0f;
  }
  // Query i sees key j when j <= shift(i): from the first query placed at
  // or past j on. The block's first key is seen from the earliest query.
  int64_t from = d.causal ? d.shift.firstAtOrPast(first) : int64_t(0);
  int64_t mineFrom = d.causal ? d.shift.firstAtOrPast(j) : 0;
  for (int64_t g = 0; g < group; ++g) {
    int64_t h = hk * group + g;
    const float *qh = q + h * d.queries * d.dim;
    const float *gh = dOut + h * d.queries * d.dim;
    for (int64_t t = from - from % kTile; t < d.queries; t += kTile) {
      __syncthreads();
      stage(qh, t, d.queries, d.dim, qTileBuf);
      stage(gh, t, d.queries, d.dim, gTileBuf);
      for (int r = threadIdx.x; r < kTile; r += blockDim.x) {
        int64_t i = t + r;
        lseTile[r] = i < d.queries ? lse[h * d.queries + i] : -INFINITY;
        deltaTile[r] = i < d.queries ? delta[h * d.queries + i] : 0.0f;
      }
      __syncthreads();
      if (!active)
        continue;
      for (int r = 0; r < kTile; ++r) {
        int64_t i = t + r;
        if (i >= d.queries || i < mineFrom || !(lseTile[r] > -INFINITY))
          continue;
        const float *qi = qTileBuf + r * d.dim, *gi = gTileBuf + r * d.dim;
        float s = 0.0f, dp = 0.0f;
#pragma unroll
        for (int e = 0; e < kPer; ++e) {
          int c = lane + kWarp * e;
          if (c < d.dim) {
            s += kj[e] * qi[c];
            dp += vj[e] * gi[c];
          }
        }
        s = warpReduce(s, Sum());
        dp = warpReduce(dp, Sum());
        float p = expf(d.scale * s + maskAt(d, h, i, j) - lseTile[r]);
        float ds = p * (dp - deltaTile[r]) * d.scale;
#pragma unroll
        for (int e = 0; e < kPer; ++e) {
          int c = lane + kWarp * e;
          if (c < d.dim) {
            dvAcc[e] += p * gi[c];
            dkAcc[e] += ds * qi[c];
          }
        }
      }
    }
  }
  if (!active)
    return;
  if (dk)
    storeRow(dk + row * d.dim, d.dim, lane, dkAcc);
  if (dv)
    storeRow(dv + row * d.dim, d.dim, lane, dvAcc);
}

Dims makeDims(const FlashAttentionShape &s) {
  return {s.heads,     s.kvHeads,
          s.queries,   s.keys,
          static_cast<int>(s.dim), s.scale,
          s.causal,    s.shift,
          s.mask,      s.maskDiv,
          s.maskMod,   s.maskPlane,
          s.maskRowStride};
}

/// Runs `launch` with the register count per lane that the head size needs.
template <typename Launch> void byDim(int64_t dim, Launch &&launch) {
  if (dim <= 32)
    launch(std::integral_constant<int, 1>());
  else if (dim <= 64)
    launch(std::integral_constant<int, 2>());
  else if (dim <= 128)
    launch(std::integral_constant<int, 4>());
  else
    launch(std::integral_constant<int, 8>());
}

size_t tileBytes(int64_t dim) { return 2 * kTile * dim * sizeof(float); }

} // namespace

void launchFlashAttention(const float *q, const float *k, const float *v,
                          float *out, float *lse,
                          const FlashAttentionShape &shape,
                          cudaStream_t stream) {
  if (shape.heads <= 0 || shape.queries <= 0)
    return;
  Dims d = makeDims(shape);
  dim3 grid((shape.queries + kRows - 1) / kRows, shape.heads);
  byDim(shape.dim, [&](auto per) {
    forwardKernel<decltype(per)::value>
        <<<grid, kRows * kWarp, tileBytes(shape.dim), stream>>>(q, k, v, out,
                                                               lse, d);
  });
  CLEAVE_CUDA_LAUNCHED("flashAttentionForward");
}

size_t flashAttentionBackwardWorkspaceBytes(const FlashAttentionShape &shape) {
  return static_cast<size_t>(shape.heads * shape.queries) * sizeof(float);
}

void launchFlashAttentionBackward(const float *q, const float *k,
                                  const float *v, const float *out,
                                  const float *lse, const float *dOut,
                                  float *dq, float *dk, float *dv,
                                  const FlashAttentionShape &shape,
                                  void *workspace, cudaStream_t stream) {
  if (shape.heads <= 0 || shape.queries <= 0 || shape.keys <= 0)
    return;
  Dims d = makeDims(shape);
  float *delta = static_cast<float *>(workspace);
  dim3 queryGrid((shape.queries + kRows - 1) / kRows, shape.heads);
  dim3 keyGrid((shape.keys + kRows - 1) / kRows, shape.kvHeads);
  byDim(shape.dim, [&](auto per) {
    constexpr int kPer = decltype(per)::value;
    queryGradKernel<kPer><<<queryGrid, kRows * kWarp, tileBytes(shape.dim),
                            stream>>>(q, k, v, out, lse, dOut, dq, delta, d);
    CLEAVE_CUDA_LAUNCHED("flashAttentionQueryGrad");
    if (dk || dv) {
      keyGradKernel<kPer><<<keyGrid, kRows * kWarp, tileBytes(shape.dim),
                            stream>>>(q, k, v, lse, dOut, delta, dk, dv, d);
      CLEAVE_CUDA_LAUNCHED("flashAttentionKeyGrad");
    }
  });
}

} // namespace cleave::cuda
