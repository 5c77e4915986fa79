//===- WarpReduce.cuh - Warp and block reductions for kernels --*- CUDA -*-===//
//
// The reductions the row kernels share: an xor butterfly over a warp (or
// over groups of `width` lanes), then, for a row that spans a block, one
// step through shared memory that combines the warps' results in warp
// order. The order of every combination is fixed, so results are
// deterministic, and several kernels match the CPU's bit for bit: changing
// the offsets, the order of the operands or the accumulation type here
// changes their results. A kernel that needs another order (Reduction.cu's
// second butterfly over the warps) builds it from warpReduce instead.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_CUDA_SRC_KERNELS_WARPREDUCE_CUH
#define CLEAVE_RUNTIME_CUDA_SRC_KERNELS_WARPREDUCE_CUH

namespace cleave::cuda {

constexpr int kWarp = 32;
/// Every lane takes part: the helpers below must be called by all 32 lanes
/// of a warp together (a branch around them must be uniform per warp).
constexpr unsigned kAllLanes = 0xffffffffu;

/// a + b in the operands' type: double partial sums stay double.
struct Sum {
  template <typename T>
  __device__ __forceinline__ T operator()(T a, T b) const {
    return a + b;
  }
};

/// fmaxf ignores a NaN operand, as the CPU's std::max(max, x) does.
struct Max {
  __device__ __forceinline__ float operator()(float a, float b) const {
    return fmaxf(a, b);
  }
};

/// __shfl_xor_sync for the types it takes. A kernel that reduces a struct
/// overloads shuffleXor for it next to the struct (argument-dependent
/// lookup finds it), shuffling the members one by one.
template <typename T>
__device__ __forceinline__ T shuffleXor(T v, int offset, int width) {
  return __shfl_xor_sync(kAllLanes, v, offset, width);
}

/// Combines v over each group of kWidth consecutive lanes (a power of two
/// up to 32), with offsets kWidth / 2, ..., 2, 1 and v as op's left
/// operand. Every lane of a group ends with the same value where op is
/// commutative (IEEE + and fmaxf are). kWidth is a template argument so
/// that the loop always unrolls and a bad width does not compile.
template <int kWidth = kWarp, typename T, typename Op>
__device__ __forceinline__ T warpReduce(T v, Op op) {
  static_assert(kWidth > 0 && kWidth <= kWarp && (kWidth & (kWidth - 1)) == 0,
                "the width must be a power of two up to 32");
#pragma unroll
  for (int offset = kWidth / 2; offset > 0; offset /= 2)
    v = op(v, shuffleXor(v, offset, kWidth));
  return v;
}

/// Combines v over the kThreads threads of a row, which are a warp
/// (kThreads == 32; `shared` is unused) or the whole block (blockDim.x ==
/// kThreads, a multiple of 32 up to 1024; `shared` holds kThreads / 32
/// values). Every thread gets the result: the warps' results combined in
/// warp order, ((w0 op w1) op w2) ..., the same in every thread. It
/// synchronises before writing `shared`, so calls may follow one another
/// on the same buffer.
template <int kThreads, typename T, typename Op>
__device__ __forceinline__ T blockReduce(T v, Op op, T *shared) {
  static_assert(kThreads % kWarp == 0 && kThreads <= 1024,
                "a row is a warp or a block of whole warps");
  v = warpReduce(v, op);
  if constexpr (kThreads > kWarp) {
    constexpr int kWarps = kThreads / kWarp;
    __syncthreads(); // readers of an earlier reduction are done with shared
    if (threadIdx.x % kWarp == 0)
      shared[threadIdx.x / kWarp] = v;
    __syncthreads();
    v = shared[0];
    // Not forced to unroll: nvcc unrolls it by itself for + and max, and
    // unrolling Loss.cu's pair (two expf a step) only costs registers.
    for (int w = 1; w < kWarps; ++w)
      v = op(v, shared[w]);
  }
  return v;
}

} // namespace cleave::cuda

#endif // CLEAVE_RUNTIME_CUDA_SRC_KERNELS_WARPREDUCE_CUH
