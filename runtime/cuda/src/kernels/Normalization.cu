//===- Normalization.cu - Layer and RMS normalisation kernels -------------===//
//
// Rows run one warp per row up to 512 elements and one block per row beyond
// (128 to 512 threads, so that a thread holds at most 16 elements of each
// operand). Each thread sees elements tid, tid + threads, ... of its row
// (coalesced) and keeps them in registers up to 8192 elements, so that a
// row is read from memory once for its statistics and its result; longer
// rows are re-read per pass. Sums are reduced with warp shuffles, then
// across a block's warps through shared memory, in a fixed order.
//
// The arithmetic is the CPU kernel's, operation by operation: statistics in
// double (mean, then the centred sum of squares), rounded to float, and the
// per-element formulas in float with the _rn intrinsics where nvcc would
// otherwise fuse a product and a sum into an FMA the CPU does not have.
//
// The scale and bias gradients are column sums over all rows: blocks of
// 32 columns x 8 row lanes sum a chunk of rows each into a partial row,
// and a second kernel adds the chunks' partials in order.
//
//===----------------------------------------------------------------------===//

#include "kernels/Normalization.h"

#include "Context.h"
#include "kernels/RowShape.cuh"
#include "kernels/WarpReduce.cuh"

#include <algorithm>

namespace cleave::cuda {
namespace {

/// Sums over the kThreads threads of a row, in double as the CPU sums;
/// every one of them gets the result. `shared` holds kThreads / 32 doubles
/// (unused for warp rows).
template <int kThreads> __device__ double rowSum(double v, double *shared) {
  return blockReduce<kThreads>(v, Sum(), shared);
}

/// A row's mean and 1 / sqrt(var + epsilon) (layer norm), or only the
/// latter with var the mean square (rms norm; mean is then 0).
struct RowStats {
  float mean, rstd;
};

template <int kThreads, int kPer>
__device__ RowStats layerStats(const RowSlice<kThreads, kPer> &x,
                               double epsilon, double *shared) {
  double sum = 0.0;
  x.forEach([&](int64_t, float xi) { sum += xi; });
  double mean = rowSum<kThreads>(sum, shared) / x.n;
  double sq = 0.0;
  x.forEach([&](int64_t, float xi) {
    double c = xi - mean;
    sq += c * c;
  });
  double var = rowSum<kThreads>(sq, shared) / x.n;
  return {static_cast<float>(mean),
          static_cast<float>(1.0 / sqrt(var + epsilon))};
}

template <int kThreads, int kPer>
__device__ RowStats rmsStats(const RowSlice<kThreads, kPer> &x, double epsilon,
                             double *shared) {
  double sq = 0.0;
  x.forEach([&](int64_t, float xi) { sq += double(xi) * xi; });
  double meanSquare = rowSum<kThreads>(sq, shared) / x.n;
  return {0.0f, static_cast<float>(1.0 / sqrt(meanSquare + epsilon))};
}

template <bool kRms, int kThreads, int kPer>
__device__ RowStats rowStats(const RowSlice<kThreads, kPer> &x, double epsilon,
                             double *shared) {
  if constexpr (kRms)
    return rmsStats(x, epsilon, shared);
  else
    return layerStats(x, epsilon, shared);
}

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//

/// Layer norm: ((x - mean) * rstd) * scale + bias; rms norm:
/// (x * rstd) * scale (bias is null). Every read of a row precedes the
/// last reduction, so out may alias in.
template <bool kRms, int kThreads, int kPer>
__global__ void __launch_bounds__(RowShape<kThreads, kPer>::blockThreads,
                                  RowShape<kThreads, kPer>::minBlocks)
    normKernel(const float *in, const float *scale, const float *bias,
               float *out, int64_t rows, int64_t n, double epsilon) {
  __shared__ double shared[kThreads / kWarp];
  RowWalk<kThreads> walk;
  for (int64_t row = walk.first; row < rows; row += walk.stride) {
    RowSlice<kThreads, kPer> x(in + row * n, n, walk.tid);
    RowStats s = rowStats<kRms>(x, epsilon, shared);
    float *y = out + row * n;
    x.forEach([&](int64_t i, float xi) {
      float v = kRms ? __fmul_rn(xi, s.rstd)
                     : __fmul_rn(__fsub_rn(xi, s.mean), s.rstd);
      if (scale)
        v = __fmul_rn(v, scale[i]);
      if (bias)
        v = __fadd_rn(v, bias[i]);
      y[i] = v;
    });
  }
}

//===----------------------------------------------------------------------===//
// Backward
//===----------------------------------------------------------------------===//

/// Per row: the statistics into `stats` (when the parameter gradients need
/// them) and dIn (when wanted). With g = dy * scale and xhat the
/// normalised input, layer norm has dx = rstd * (g - mean(g) - xhat *
/// mean(g * xhat)) and rms norm dx = rstd * g - x * rstd^3 * mean(g * x).
template <bool kRms, int kThreads, int kPer>
__global__ void __launch_bounds__(RowShape<kThreads, kPer>::blockThreads,
                                  RowShape<kThreads, kPer>::minBlocks)
    normGradRowsKernel(const float *in, const float *scale, const float *dOut,
                       float *dIn, RowStats *stats, int64_t rows, int64_t n,
                       double epsilon) {
  __shared__ double shared[kThreads / kWarp];
  RowWalk<kThreads> walk;
  for (int64_t row = walk.first; row < rows; row += walk.stride) {
    RowSlice<kThreads, kPer> x(in + row * n, n, walk.tid);
    RowSlice<kThreads, kPer> dy(dIn ? dOut + row * n : nullptr, n, walk.tid);
    RowStats s = rowStats<kRms>(x, epsilon, shared);
    if (stats && walk.tid == 0)
      stats[row] = s;
    if (!dIn)
      continue;
    auto gradOf = [&](int64_t i, float dyi) {
      return scale ? __fmul_rn(dyi, scale[i]) : dyi;
    };
    float *dx = dIn + row * n;
    if constexpr (kRms) {
      double sumGX = 0.0;
      forEach2(x, dy, [&](int64_t i, float xi, float dyi) {
        sumGX += double(gradOf(i, dyi)) * xi;
      });
      sumGX = rowSum<kThreads>(sumGX, shared);
      float k = __fmul_rn(
          __fmul_rn(__fmul_rn(static_cast<float>(sumGX / n), s.rstd), s.rstd),
          s.rstd);
      forEach2(x, dy, [&](int64_t i, float xi, float dyi) {
        dx[i] = __fsub_rn(__fmul_rn(s.rstd, gradOf(i, dyi)), __fmul_rn(xi, k));
      });
    } else {
      double sumG = 0.0, sumGX = 0.0;
      forEach2(x, dy, [&](int64_t i, float xi, float dyi) {
        float g = gradOf(i, dyi);
        float xhat = __fmul_rn(__fsub_rn(xi, s.mean), s.rstd);
        sumG += g;
        sumGX += double(g) * xhat;
      });
      sumG = rowSum<kThreads>(sumG, shared);
      sumGX = rowSum<kThreads>(sumGX, shared);
      float meanG = static_cast<float>(sumG / n);
      float meanGX = static_cast<float>(sumGX / n);
      forEach2(x, dy, [&](int64_t i, float xi, float dyi) {
        float g = gradOf(i, dyi);
        float xhat = __fmul_rn(__fsub_rn(xi, s.mean), s.rstd);
        dx[i] = __fmul_rn(
            s.rstd, __fsub_rn(__fsub_rn(g, meanG), __fmul_rn(xhat, meanGX)));
      });
    }
  }
}

/// Columns per block and row lanes per column of the parameter gradients.
constexpr int kColumns = 32;
constexpr int kRowLanes = 8;
constexpr int kParamGradThreads = kColumns * kRowLanes;
constexpr int64_t kMinRowsPerChunk = 64;
constexpr int64_t kMaxChunks = 512;

struct Chunks {
  int64_t rowsPerChunk, count;
};

Chunks chunksFor(int64_t rows) {
  int64_t per =
      std::max(kMinRowsPerChunk, (rows + kMaxChunks - 1) / kMaxChunks);
  return {per, std::max<int64_t>(1, (rows + per - 1) / per)};
}

/// Sums of chunk blockIdx.y's rows for 32 columns: dScale terms (layer
/// norm: (dy * (x - mean)) * rstd, rms norm: (dy * x) * rstd, as the CPU
/// rounds them) and dBias terms (dy), into row blockIdx.y of the partials.
template <bool kRms>
__global__ void __launch_bounds__(kParamGradThreads)
    normParamGradKernel(const float *in, const float *dOut,
                        const RowStats *stats, float *scalePartials,
                        float *biasPartials, int64_t rows, int64_t n,
                        int64_t rowsPerChunk) {
  __shared__ float scaleSums[kRowLanes][kColumns];
  __shared__ float biasSums[kRowLanes][kColumns];
  int64_t col = int64_t(blockIdx.x) * kColumns + threadIdx.x;
  int64_t begin = int64_t(blockIdx.y) * rowsPerChunk;
  int64_t end = min(rows, begin + rowsPerChunk);
  float scaleSum = 0.0f, biasSum = 0.0f;
  if (col < n) {
    for (int64_t r = begin + threadIdx.y; r < end; r += kRowLanes) {
      float dy = dOut[r * n + col];
      if (scalePartials) {
        float x = in[r * n + col];
        RowStats s = stats[r];
        float centred = kRms ? x : __fsub_rn(x, s.mean);
        scaleSum += __fmul_rn(__fmul_rn(dy, centred), s.rstd);
      }
      biasSum += dy;
    }
  }
  scaleSums[threadIdx.y][threadIdx.x] = scaleSum;
  biasSums[threadIdx.y][threadIdx.x] = biasSum;
  __syncthreads();
  if (threadIdx.y != 0 || col >= n)
    return;
  for (int lane = 1; lane < kRowLanes; ++lane) {
    scaleSum += scaleSums[lane][threadIdx.x];
    biasSum += biasSums[lane][threadIdx.x];
  }
  int64_t at = int64_t(blockIdx.y) * n + col;
  if (scalePartials)
    scalePartials[at] = scaleSum;
  if (biasPartials)
    biasPartials[at] = biasSum;
}

/// out[col] = the sum of the chunks' partials, in chunk order.
__global__ void sumChunksKernel(const float *partials, float *out,
                                int64_t chunks, int64_t n) {
  for (int64_t col = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; col < n;
       col += int64_t(gridDim.x) * blockDim.x) {
    float sum = 0.0f;
    for (int64_t c = 0; c < chunks; ++c)
      sum += partials[c * n + col];
    out[col] = sum;
  }
}

size_t alignUp(size_t bytes) { return (bytes + 255) / 256 * 256; }

/// The workspace: row statistics, then the scale and bias partials (only
/// with more than one chunk; otherwise the kernel writes the outputs).
struct GradWorkspace {
  RowStats *stats;
  float *scalePartials, *biasPartials;
};

GradWorkspace carve(void *workspace, int64_t rows, int64_t n) {
  char *p = static_cast<char *>(workspace);
  GradWorkspace w;
  w.stats = reinterpret_cast<RowStats *>(p);
  p += alignUp(sizeof(RowStats) * rows);
  w.scalePartials = reinterpret_cast<float *>(p);
  p += alignUp(sizeof(float) * chunksFor(rows).count * n);
  w.biasPartials = reinterpret_cast<float *>(p);
  return w;
}

void zeroIfWanted(float *data, int64_t n, cudaStream_t stream) {
  if (data && n > 0)
    CLEAVE_CUDA_CHECK(cudaMemsetAsync(data, 0, sizeof(float) * n, stream));
}

template <bool kRms>
void launchForward(const float *in, const float *scale, const float *bias,
                   float *out, int64_t rows, int64_t n, double epsilon,
                   cudaStream_t stream) {
  if (rows <= 0 || n <= 0)
    return;
  withRowShape(n, [&](auto shape) {
    using S = decltype(shape);
    normKernel<kRms, S::threads, S::per>
        <<<rowBlocks<S>(rows), S::blockThreads, 0, stream>>>(
            in, scale, bias, out, rows, n, epsilon);
  });
  CLEAVE_CUDA_LAUNCHED(kRms ? "rmsNormKernel" : "layerNormKernel");
}

template <bool kRms>
void launchBackward(const float *in, const float *scale, const float *dOut,
                    float *dIn, float *dScale, float *dBias, int64_t rows,
                    int64_t n, double epsilon, void *workspace,
                    cudaStream_t stream) {
  if (n <= 0)
    return;
  if (rows <= 0) {
    // No rows: zero parameter gradients, as the CPU's.
    zeroIfWanted(dScale, n, stream);
    zeroIfWanted(dBias, n, stream);
    return;
  }
  bool params = dScale || dBias;
  if (!dIn && !params)
    return;
  GradWorkspace w = params ? carve(workspace, rows, n) : GradWorkspace{};
  RowStats *stats = dScale ? w.stats : nullptr;
  withRowShape(n, [&](auto shape) {
    using S = decltype(shape);
    normGradRowsKernel<kRms, S::threads, S::per>
        <<<rowBlocks<S>(rows), S::blockThreads, 0, stream>>>(
            in, scale, dOut, dIn, stats, rows, n, epsilon);
  });
  CLEAVE_CUDA_LAUNCHED(kRms ? "rmsNormGradRowsKernel"
                            : "layerNormGradRowsKernel");
  if (!params)
    return;
  Chunks chunks = chunksFor(rows);
  bool direct = chunks.count == 1;
  float *scaleOut = dScale && !direct ? w.scalePartials : dScale;
  float *biasOut = dBias && !direct ? w.biasPartials : dBias;
  dim3 grid(static_cast<unsigned>((n + kColumns - 1) / kColumns),
            static_cast<unsigned>(chunks.count));
  normParamGradKernel<kRms><<<grid, dim3(kColumns, kRowLanes), 0, stream>>>(
      in, dOut, stats, scaleOut, biasOut, rows, n, chunks.rowsPerChunk);
  CLEAVE_CUDA_LAUNCHED("normParamGradKernel");
  if (direct)
    return;
  if (dScale) {
    sumChunksKernel<<<blocksFor(n), 256, 0, stream>>>(w.scalePartials, dScale,
                                                      chunks.count, n);
    CLEAVE_CUDA_LAUNCHED("sumChunksKernel");
  }
  if (dBias) {
    sumChunksKernel<<<blocksFor(n), 256, 0, stream>>>(w.biasPartials, dBias,
                                                      chunks.count, n);
    CLEAVE_CUDA_LAUNCHED("sumChunksKernel");
  }
}

} // namespace

void launchLayerNorm(const float *in, const float *scale, const float *bias,
                     float *out, int64_t rows, int64_t n, double epsilon,
                     cudaStream_t stream) {
  launchForward<false>(in, scale, bias, out, rows, n, epsilon, stream);
}

void launchRmsNorm(const float *in, const float *scale, float *out,
                   int64_t rows, int64_t n, double epsilon,
                   cudaStream_t stream) {
  launchForward<true>(in, scale, nullptr, out, rows, n, epsilon, stream);
}

size_t normGradWorkspaceBytes(int64_t rows, int64_t n) {
  if (rows <= 0 || n <= 0)
    return 0;
  size_t partials = alignUp(sizeof(float) * chunksFor(rows).count * n);
  return alignUp(sizeof(RowStats) * rows) + 2 * partials;
}

void launchLayerNormGrad(const float *in, const float *scale, const float *dOut,
                         float *dIn, float *dScale, float *dBias, int64_t rows,
                         int64_t n, double epsilon, void *workspace,
                         cudaStream_t stream) {
  launchBackward<false>(in, scale, dOut, dIn, dScale, dBias, rows, n, epsilon,
                        workspace, stream);
}

void launchRmsNormGrad(const float *in, const float *scale, const float *dOut,
                       float *dIn, float *dScale, int64_t rows, int64_t n,
                       double epsilon, void *workspace, cudaStream_t stream) {
  launchBackward<true>(in, scale, dOut, dIn, dScale, nullptr, rows, n, epsilon,
                       workspace, stream);
}

} // namespace cleave::cuda
