//===- RowShape.cuh - One warp or one block per row ------------*- CUDA -*-===//
//-*-===//
//
// The row kernels (softmax, normalisation, cross-entropy) share how a row
// maps to threads: one warp per row up to 512 elements, one block of 128 to
// 1024 threads beyond, each thread seeing elements tid, tid + threads, ...
// (coalesced) and holding up to 16 of them in registers (rows up to 8192
// elements are read from memory once; longer ones are re-read per pass).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_CUDA_SRC_KERNELS_ROWSHAPE_CUH
#define CLEAVE_RUNTIME_CUDA_SRC_KERNELS_ROWSHAPE_CUH

#include "kernels/WarpReduce.cuh"

#include <algorithm>
#include <cstdint>

namespace cleave::cuda {

/// Rows per block when one warp handles a row.
constexpr int kWarpRowsPerBlock = 4;
/// Grids loop over rows or elements beyond this many blocks.
constexpr int64_t kMaxBlocks = int64_t(1) << 20;

//===----------------------------------------------------------------------===//
// Rows: one warp or one block per row
//===----------------------------------------------------------------------===//

/// kThreads threads per row, each holding kPer elements of it in registers
/// (0: none, the row is re-read at every pass).
template <int kThreads, int kPer> struct RowShape {
  static constexpr int threads = kThreads;
  static constexpr int per = kPer;
  static constexpr int blockThreads =
      kThreads == kWarp ? kWarp * kWarpRowsPerBlock : kThreads;
  static constexpr int rowsPerBlock = kThreads == kWarp ? kWarpRowsPerBlock : 1;
  /// Blocks per SM that __launch_bounds__ asks for: at most 128 registers
  /// a thread, so that a row held in registers does not cost occupancy
  /// below a quarter (the compiler recomputes rather than keep more live).
  static constexpr int minBlocks =
      blockThreads * 128 >= 65536 ? 1 : 65536 / (blockThreads * 128);
};

/// Calls f(RowShape<...>{}) with the shape for rows of n elements.
template <typename F> void withRowShape(int64_t n, F &&f) {
  if (n <= 32)
    f(RowShape<kWarp, 1>{});
  else if (n <= 64)
    f(RowShape<kWarp, 2>{});
  else if (n <= 128)
    f(RowShape<kWarp, 4>{});
  else if (n <= 256)
    f(RowShape<kWarp, 8>{});
  else if (n <= 512)
    f(RowShape<kWarp, 16>{});
  else if (n <= 1024) // a warp would need 32 registers per row operand
    f(RowShape<128, 8>{});
  else if (n <= 2048)
    f(RowShape<256, 8>{});
  else if (n <= 4096)
    f(RowShape<512, 8>{});
  else if (n <= 8192)
    f(RowShape<512, 16>{});
  else
    f(RowShape<1024, 0>{});
}

template <typename Shape> unsigned rowBlocks(int64_t rows) {
  int64_t blocks = (rows + Shape::rowsPerBlock - 1) / Shape::rowsPerBlock;
  return static_cast<unsigned>(std::clamp<int64_t>(blocks, 1, kMaxBlocks));
}

/// This thread's place among the threads of its row, and the rows its
/// warp (or block) visits; warp rows come kRowsPerBlock to a block.
template <int kThreads, int kRowsPerBlock = kWarpRowsPerBlock> struct RowWalk {
  int tid;
  int64_t first, stride;
  __device__ RowWalk() {
    if constexpr (kThreads == kWarp) {
      tid = threadIdx.x % kWarp;
      first = int64_t(blockIdx.x) * kRowsPerBlock + threadIdx.x / kWarp;
      stride = int64_t(gridDim.x) * kRowsPerBlock;
    } else {
      tid = threadIdx.x;
      first = blockIdx.x;
      stride = gridDim.x;
    }
  }
};

/// The n elements of a row as thread `tid` of kThreads sees them; a null
/// `src` loads nothing (a row the kernel does not need).
template <int kThreads, int kPer> struct RowSlice {
  const float *src;
  int64_t n;
  int tid;
  float v[kPer > 0 ? kPer : 1];

  __device__ RowSlice(const float *src, int64_t n, int tid)
      : src(src), n(n), tid(tid) {
    if constexpr (kPer > 0) {
#pragma unroll
      for (int k = 0; k < kPer; ++k) {
        int64_t i = tid + int64_t(k) * kThreads;
        v[k] = src && i < n ? src[i] : 0.0f;
      }
    }
  }

  /// f(i, x[i]) for this thread's elements.
  template <typename F> __device__ void forEach(F &&f) const {
    if constexpr (kPer > 0) {
#pragma unroll
      for (int k = 0; k < kPer; ++k) {
        int64_t i = tid + int64_t(k) * kThreads;
        if (i < n)
          f(i, v[k]);
      }
    } else {
      for (int64_t i = tid; i < n; i += kThreads)
        f(i, src[i]);
    }
  }
};

/// f(i, a[i], b[i]) over two slices of the same row shape.
template <int kThreads, int kPer, typename F>
__device__ void forEach2(const RowSlice<kThreads, kPer> &a,
                         const RowSlice<kThreads, kPer> &b, F &&f) {
  if constexpr (kPer > 0) {
#pragma unroll
    for (int k = 0; k < kPer; ++k) {
      int64_t i = a.tid + int64_t(k) * kThreads;
      if (i < a.n)
        f(i, a.v[k], b.v[k]);
    }
  } else {
    for (int64_t i = a.tid; i < a.n; i += kThreads)
      f(i, a.src[i], b.src[i]);
  }
}

} // namespace cleave::cuda

#endif // CLEAVE_RUNTIME_CUDA_SRC_KERNELS_ROWSHAPE_CUH
