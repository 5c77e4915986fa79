//===- PagedAttention.cu - Paged key/value cache kernels ------------------===//
//
// A decode step's attention reads few queries against many keys: one warp
// a query, its lanes splitting the head dimension for the dot products
// (warp-reduced) and the weighted sum of values, walking the sequence's
// keys through its block table with the CPU kernel's online softmax
// (running maximum and sum, rescaled when the maximum grows).
//
//===----------------------------------------------------------------------===//

#include "kernels/PagedAttention.h"

#include "Context.h"
#include "kernels/WarpReduce.cuh"

namespace cleave::cuda {
namespace {

__global__ void cacheWriteKernel(const float *rows, const int64_t *slots,
                                 int64_t n, int64_t rowElements,
                                 int64_t capacity, float *cache) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       e < n * rowElements; e += int64_t(gridDim.x) * blockDim.x) {
    int64_t row = e / rowElements, slot = slots[row];
    if (slot >= 0 && slot < capacity)
      cache[slot * rowElements + e % rowElements] = rows[e];
  }
}

/// Elements of the head dimension a lane holds at most (dim up to 256).
constexpr int kPerLane = 8;

__global__ void pagedAttentionKernel(const float *q, const float *keyCache,
                                     const float *valueCache,
                                     const int64_t *table,
                                     const int64_t *lengths, int64_t queries,
                                     int64_t heads, int64_t tokens,
                                     int64_t dim, int64_t kvHeads,
                                     int64_t blockSize, int64_t maxBlocks,
                                     float scale, float *out) {
  int64_t warp = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / kWarp;
  int lane = threadIdx.x % kWarp;
  if (warp >= queries)
    return; // uniform per warp
  int64_t t = warp % tokens, h = (warp / tokens) % heads,
          b = warp / (tokens * heads);
  int64_t kvHead = h / (heads / kvHeads);
  int64_t last = lengths[b] - tokens + t;
  const float *query = q + warp * dim;
  float qv[kPerLane], acc[kPerLane];
  for (int i = 0; i < kPerLane; ++i) {
    int64_t d = lane + i * kWarp;
    qv[i] = d < dim ? query[d] : 0.0f;
    acc[i] = 0.0f;
  }
  float maximum = -INFINITY, sum = 0.0f;
  for (int64_t p = 0; p <= last; ++p) {
    int64_t offset = ((table[b * maxBlocks + p / blockSize] * blockSize +
                       p % blockSize) *
                          kvHeads +
                      kvHead) *
                     dim;
    float partial = 0.0f;
    for (int i = 0; i < kPerLane; ++i) {
      int64_t d = lane + i * kWarp;
      if (d < dim)
        partial += qv[i] * keyCache[offset + d];
    }
    float score = warpReduce(partial, Sum()) * scale;
    if (score > maximum) {
      float factor = expf(maximum - score);
      sum *= factor;
      for (int i = 0; i < kPerLane; ++i)
        acc[i] *= factor;
      maximum = score;
    }
    float weight = expf(score - maximum);
    sum += weight;
    for (int i = 0; i < kPerLane; ++i) {
      int64_t d = lane + i * kWarp;
      if (d < dim)
        acc[i] += weight * valueCache[offset + d];
    }
  }
  float *o = out + warp * dim;
  for (int i = 0; i < kPerLane; ++i) {
    int64_t d = lane + i * kWarp;
    if (d < dim)
      o[d] = sum > 0 ? acc[i] / sum : 0.0f;
  }
}

__global__ void ropeAtKernel(const float *in, float *out,
                             const int64_t *positions, int64_t pairs,
                             int64_t heads, int64_t half, double theta,
                             bool inverse) {
  for (int64_t p = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; p < pairs;
       p += int64_t(gridDim.x) * blockDim.x) {
    int64_t i = p % half, vec = p / half; // vec = (b * seq + s) * heads + h
    double angle = static_cast<double>(positions[vec / heads]) *
                   pow(theta, -2.0 * static_cast<double>(i) /
                                  static_cast<double>(2 * half));
    float c = static_cast<float>(cos(angle));
    float s = static_cast<float>(inverse ? -sin(angle) : sin(angle));
    const float *x = in + vec * 2 * half;
    float *y = out + vec * 2 * half;
    float lo = x[i], hi = x[i + half];
    y[i] = __fsub_rn(__fmul_rn(lo, c), __fmul_rn(hi, s));
    y[i + half] = __fadd_rn(__fmul_rn(hi, c), __fmul_rn(lo, s));
  }
}

} // namespace

void launchCacheWrite(const float *rows, const int64_t *slots, int64_t n,
                      int64_t rowElements, int64_t capacity, float *cache,
                      cudaStream_t stream) {
  if (n <= 0 || rowElements <= 0)
    return;
  cacheWriteKernel<<<blocksFor(n * rowElements), 256, 0, stream>>>(
      rows, slots, n, rowElements, capacity, cache);
  CLEAVE_CUDA_LAUNCHED("cacheWriteKernel");
}

void launchPagedAttention(const float *q, const float *keyCache,
                          const float *valueCache, const int64_t *table,
                          const int64_t *lengths, int64_t batch,
                          int64_t heads, int64_t tokens, int64_t dim,
                          int64_t kvHeads, int64_t blockSize,
                          int64_t maxBlocks, float scale, float *out,
                          cudaStream_t stream) {
  int64_t queries = batch * heads * tokens;
  if (queries <= 0)
    return;
  constexpr int kThreads = 128;
  unsigned blocks =
      static_cast<unsigned>((queries * kWarp + kThreads - 1) / kThreads);
  pagedAttentionKernel<<<blocks, kThreads, 0, stream>>>(
      q, keyCache, valueCache, table, lengths, queries, heads, tokens, dim,
      kvHeads, blockSize, maxBlocks, scale, out);
  CLEAVE_CUDA_LAUNCHED("pagedAttentionKernel");
}

void launchRopeAt(const float *in, float *out, const int64_t *positions,
                  int64_t batch, int64_t seq, int64_t heads, int64_t headDim,
                  double theta, bool inverse, cudaStream_t stream) {
  int64_t half = headDim / 2, pairs = batch * seq * heads * half;
  if (pairs <= 0)
    return;
  ropeAtKernel<<<blocksFor(pairs), 256, 0, stream>>>(
      in, out, positions, pairs, heads, half, theta, inverse);
  CLEAVE_CUDA_LAUNCHED("ropeAtKernel");
}

} // namespace cleave::cuda
