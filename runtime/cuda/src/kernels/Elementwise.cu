//===- Elementwise.cu - Pointwise and broadcasting kernels ----------------===//
//
// Two kinds of kernel: maps over contiguous operands (unary ops, gradients,
// dropout, accumulate, scale, and binary ops whose operands both have the
// result's shape), which move float4s when every pointer is 16-byte
// aligned; and broadcast walks, where each result element finds its
// operands' offsets from its row-major index through the merged layout,
// in 32-bit arithmetic whenever the result has fewer than 2^31 elements
// (64-bit division is several times slower on the GPU).
//
// Maps whose result may be the same buffer as an operand (the CPU allows
// it for unary ops, dropout, scale, accumulate, and a binary op may be
// planned in place) take no __restrict__: each thread reads its element
// before writing it, which is all in-place needs.
//
//===----------------------------------------------------------------------===//

#include "kernels/Elementwise.h"

#include "Context.h"

#include <cstdint>
#include <limits>
#include <type_traits>

namespace cleave::cuda {

namespace {

using kernels::BinaryOp;
using kernels::UnaryOp;

constexpr int kThreads = 256;

// The CPU kernels' constants (runtime/kernels/src/ElementwiseUnary.cpp).
constexpr float kTwoOverSqrtPi = 1.12837916709551257390f;
constexpr float kInvSqrt2 = 0.70710678118654752440f;
constexpr float kInvSqrt2Pi = 0.39894228040143267794f;
constexpr float kSqrt2OverPi = 0.79788456080286535588f;
constexpr float kGeluCubic = 0.044715f;

__device__ __forceinline__ int64_t firstIndex() {
  return blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
}

__device__ __forceinline__ int64_t gridStride() {
  return int64_t(gridDim.x) * blockDim.x;
}

/// A product rounded on its own. nvcc fuses a product with the sum it
/// feeds into one FMA (one rounding instead of two); the CPU build has no
/// FMA, so products that feed sums go through here to round as it does.
__device__ __forceinline__ float mulRn(float a, float b) {
  return __fmul_rn(a, b);
}

/// The CPU's fastExp, operation for operation: range reduction to
/// x = n ln2 + r, a degree-6 Taylor polynomial for e^r, 2^n from the
/// exponent bits. Sigmoid, silu and the tanh GELU use it on the CPU, so
/// using it here (rather than expf) gives the same bits.
__device__ __forceinline__ float fastExp(float x) {
  x = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);
  float n = (mulRn(x, 1.44269504088896341f) + 12582912.0f) - 12582912.0f;
  float r = x - mulRn(n, 0.693145751953125f);
  r = r - mulRn(n, 1.428606765330187045e-06f);
  float p = 1.0f / 720.0f;
  p = mulRn(p, r) + 1.0f / 120.0f;
  p = mulRn(p, r) + 1.0f / 24.0f;
  p = mulRn(p, r) + 1.0f / 6.0f;
  p = mulRn(p, r) + 0.5f;
  p = mulRn(p, r) + 1.0f;
  p = mulRn(p, r) + 1.0f;
  int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  return mulRn(p, __int_as_float(bits));
}

__device__ __forceinline__ float sigmoid(float x) {
  return 1.0f / (1.0f + fastExp(-x));
}

/// u of the tanh GELU: sqrt(2/pi) (v + 0.044715 v^3).
__device__ __forceinline__ float geluTanhArgument(float v) {
  return kSqrt2OverPi * (v + mulRn(kGeluCubic * v * v, v));
}

template <UnaryOp Op> __device__ __forceinline__ float unaryValue(float v) {
  if constexpr (Op == UnaryOp::Neg)
    return -v;
  else if constexpr (Op == UnaryOp::Exp)
    return expf(v);
  else if constexpr (Op == UnaryOp::Log)
    return logf(v);
  else if constexpr (Op == UnaryOp::Sqrt)
    return sqrtf(v);
  else if constexpr (Op == UnaryOp::Rsqrt)
    return 1.0f / sqrtf(v); // rsqrtf is approximate; the CPU divides.
  else if constexpr (Op == UnaryOp::Relu)
    return v > 0.0f ? v : 0.0f;
  else if constexpr (Op == UnaryOp::Tanh)
    return tanhf(v);
  else if constexpr (Op == UnaryOp::Erf)
    return erff(v);
  else if constexpr (Op == UnaryOp::Sigmoid)
    return sigmoid(v);
  else if constexpr (Op == UnaryOp::Silu)
    return v * sigmoid(v);
  else if constexpr (Op == UnaryOp::Gelu)
    return 0.5f * v * (1.0f + erff(v * kInvSqrt2));
  else if constexpr (Op == UnaryOp::Sin)
    return sinf(v);
  else if constexpr (Op == UnaryOp::Cos)
    return cosf(v);
  else if constexpr (Op == UnaryOp::Atan)
    return atanf(v);
  else if constexpr (Op == UnaryOp::Floor)
    return floorf(v);
  else
    // 0.5 v (1 + tanh u) = v sigmoid(2u), as the CPU computes it.
    return v / (1.0f + fastExp(-2.0f * geluTanhArgument(v)));
}

/// op'(v), the factor dOut is multiplied by (the CPU's unaryBackward).
template <UnaryOp Op> __device__ __forceinline__ float gradFactor(float v) {
  if constexpr (Op == UnaryOp::Neg) {
    return -1.0f;
  } else if constexpr (Op == UnaryOp::Exp) {
    return expf(v);
  } else if constexpr (Op == UnaryOp::Log) {
    return 1.0f / v;
  } else if constexpr (Op == UnaryOp::Sqrt) {
    return 0.5f / sqrtf(v);
  } else if constexpr (Op == UnaryOp::Rsqrt) {
    float r = 1.0f / sqrtf(v);
    return -0.5f * r * r * r;
  } else if constexpr (Op == UnaryOp::Relu) {
    return v > 0.0f ? 1.0f : 0.0f;
  } else if constexpr (Op == UnaryOp::Tanh) {
    float t = tanhf(v);
    return 1.0f - mulRn(t, t);
  } else if constexpr (Op == UnaryOp::Erf) {
    return kTwoOverSqrtPi * expf(-v * v);
  } else if constexpr (Op == UnaryOp::Sigmoid) {
    float s = sigmoid(v);
    return s * (1.0f - s);
  } else if constexpr (Op == UnaryOp::Silu) {
    float s = sigmoid(v);
    return s * (1.0f + mulRn(v, 1.0f - s));
  } else if constexpr (Op == UnaryOp::Gelu) {
    float cdf = 0.5f * (1.0f + erff(v * kInvSqrt2));
    return cdf + mulRn(v * kInvSqrt2Pi, expf(-0.5f * v * v));
  } else if constexpr (Op == UnaryOp::Sin) {
    return cosf(v);
  } else if constexpr (Op == UnaryOp::Cos) {
    return -sinf(v);
  } else if constexpr (Op == UnaryOp::Atan) {
    return 1.0f / (1.0f + mulRn(v, v));
  } else if constexpr (Op == UnaryOp::Floor) {
    return 0.0f;
  } else {
    // With s = sigmoid(2u): 1 + tanh u = 2s and 1 - tanh^2 u = 4s(1 - s).
    float u = geluTanhArgument(v);
    float s = 1.0f / (1.0f + fastExp(-2.0f * u));
    float du = kSqrt2OverPi * (1.0f + mulRn(3.0f * kGeluCubic * v, v));
    return s + mulRn(2.0f * v * s * (1.0f - s), du);
  }
}

template <BinaryOp Op>
__device__ __forceinline__ float binaryValue(float a, float b) {
  if constexpr (Op == BinaryOp::Add)
    return a + b;
  else if constexpr (Op == BinaryOp::Sub)
    return a - b;
  else if constexpr (Op == BinaryOp::Mul)
    return a * b;
  else if constexpr (Op == BinaryOp::Div)
    return a / b;
  else if constexpr (Op == BinaryOp::Pow)
    return powf(a, b);
  else if constexpr (Op == BinaryOp::Max)
    return a > b ? a : b;
  else
    return a < b ? a : b;
}

template <ComparePredicate P>
__device__ __forceinline__ bool holds(float a, float b) {
  if constexpr (P == ComparePredicate::Eq)
    return a == b;
  else if constexpr (P == ComparePredicate::Ne)
    return a != b;
  else if constexpr (P == ComparePredicate::Lt)
    return a < b;
  else if constexpr (P == ComparePredicate::Le)
    return a <= b;
  else if constexpr (P == ComparePredicate::Gt)
    return a > b;
  else
    return a >= b;
}

/// splitmix64's `index`-th output for `seed` (the CPU's generator).
__device__ __forceinline__ uint64_t splitmix64(uint64_t seed, uint64_t index) {
  uint64_t z = seed + (index + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

//===----------------------------------------------------------------------===//
// Maps over contiguous operands
//===----------------------------------------------------------------------===//

// Each functor gets the element's index, which only dropout uses.

template <UnaryOp Op> struct UnaryFn {
  __device__ float operator()(int64_t, float x) const {
    return unaryValue<Op>(x);
  }
};

template <UnaryOp Op> struct GradFn {
  __device__ float operator()(int64_t, float x, float g) const {
    return g * gradFactor<Op>(x);
  }
};

template <BinaryOp Op> struct BinaryFn {
  __device__ float operator()(int64_t, float a, float b) const {
    return binaryValue<Op>(a, b);
  }
};

struct DropoutFn {
  uint64_t seed;
  uint64_t threshold;
  float scale;
  __device__ float operator()(int64_t i, float x) const {
    bool keep = (splitmix64(seed, static_cast<uint64_t>(i)) >> 11) >= threshold;
    return keep ? x * scale : 0.0f;
  }
};

struct ScaleFn {
  float factor;
  __device__ float operator()(int64_t, float x) const { return x * factor; }
};

/// out + in, as the CPU's `out[i] += in[i]`.
struct AccumulateFn {
  __device__ float operator()(int64_t, float out, float in) const {
    return out + in;
  }
};

/// out[i] = op(i, a[i]). With `vectorized` (a and out 16-byte aligned) the
/// first n/4*4 elements move as float4s and the rest one by one.
template <typename Op>
__global__ void map1Kernel(const float *a, float *out, int64_t n,
                           bool vectorized, Op op) {
  int64_t done = 0;
  if (vectorized) {
    int64_t n4 = n / 4;
    const float4 *a4 = reinterpret_cast<const float4 *>(a);
    float4 *out4 = reinterpret_cast<float4 *>(out);
    for (int64_t i = firstIndex(); i < n4; i += gridStride()) {
      float4 x = a4[i];
      int64_t e = 4 * i;
      out4[i] = make_float4(op(e, x.x), op(e + 1, x.y), op(e + 2, x.z),
                            op(e + 3, x.w));
    }
    done = 4 * n4;
  }
  for (int64_t i = done + firstIndex(); i < n; i += gridStride())
    out[i] = op(i, a[i]);
}

/// out[i] = op(i, a[i], b[i]), vectorised like map1Kernel.
template <typename Op>
__global__ void map2Kernel(const float *a, const float *b, float *out,
                           int64_t n, bool vectorized, Op op) {
  int64_t done = 0;
  if (vectorized) {
    int64_t n4 = n / 4;
    const float4 *a4 = reinterpret_cast<const float4 *>(a);
    const float4 *b4 = reinterpret_cast<const float4 *>(b);
    float4 *out4 = reinterpret_cast<float4 *>(out);
    for (int64_t i = firstIndex(); i < n4; i += gridStride()) {
      float4 x = a4[i], y = b4[i];
      int64_t e = 4 * i;
      out4[i] = make_float4(op(e, x.x, y.x), op(e + 1, x.y, y.y),
                            op(e + 2, x.z, y.z), op(e + 3, x.w, y.w));
    }
    done = 4 * n4;
  }
  for (int64_t i = done + firstIndex(); i < n; i += gridStride())
    out[i] = op(i, a[i], b[i]);
}

bool aligned16(const void *p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

/// Threads a map needs: one per float4 (the last one or three elements
/// reuse the first threads).
int64_t mapThreads(int64_t n, bool vectorized) {
  return vectorized ? (n + 3) / 4 : n;
}

template <typename Op>
void map1(const float *a, float *out, int64_t n, Op op, cudaStream_t stream,
          const char *name) {
  if (n <= 0)
    return;
  bool vectorized = aligned16(a) && aligned16(out);
  map1Kernel<<<blocksFor(mapThreads(n, vectorized), kThreads), kThreads, 0,
               stream>>>(a, out, n, vectorized, op);
  CLEAVE_CUDA_LAUNCHED(name);
}

template <typename Op>
void map2(const float *a, const float *b, float *out, int64_t n, Op op,
          cudaStream_t stream, const char *name) {
  if (n <= 0)
    return;
  bool vectorized = aligned16(a) && aligned16(b) && aligned16(out);
  map2Kernel<<<blocksFor(mapThreads(n, vectorized), kThreads), kThreads, 0,
               stream>>>(a, b, out, n, vectorized, op);
  CLEAVE_CUDA_LAUNCHED(name);
}

//===----------------------------------------------------------------------===//
// Broadcast walks
//===----------------------------------------------------------------------===//

/// A BroadcastLayout in the index type the kernel computes with.
template <typename I, int N> struct Walk {
  int rank;
  I dims[kBroadcastMaxRank];
  I strides[N][kBroadcastMaxRank];
};

template <typename I, int N> Walk<I, N> narrow(const BroadcastLayout<N> &l) {
  Walk<I, N> w{};
  w.rank = l.rank;
  for (int d = 0; d < kBroadcastMaxRank; ++d) {
    w.dims[d] = static_cast<I>(l.dims[d]);
    for (int k = 0; k < N; ++k)
      w.strides[k][d] = static_cast<I>(l.strides[k][d]);
  }
  return w;
}

/// Each operand's element offset for result element `index`. The loop is
/// unrolled over the maximum rank so that the walk's arrays are read at
/// constant indices (straight from parameter space).
template <typename I, int N>
__device__ __forceinline__ void operandOffsets(const Walk<I, N> &w, I index,
                                               I (&offsets)[N]) {
#pragma unroll
  for (int k = 0; k < N; ++k)
    offsets[k] = 0;
#pragma unroll
  for (int d = kBroadcastMaxRank - 1; d >= 0; --d) {
    if (d >= w.rank)
      continue;
    I coord = index;
    if (d > 0) {
      coord = index % w.dims[d];
      index /= w.dims[d];
    }
#pragma unroll
    for (int k = 0; k < N; ++k)
      offsets[k] += coord * w.strides[k][d];
  }
}

// With I = uint32_t the result has at most 2^31 - 1 elements and the grid
// stride is below 2^28, so `i += stride` never wraps.

template <typename I, BinaryOp Op>
__global__ void binaryWalkKernel(const float *a, const float *b, float *out,
                                 I n, const __grid_constant__ Walk<I, 2> w) {
  for (I i = I(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += I(gridDim.x) * blockDim.x) {
    I off[2];
    operandOffsets(w, i, off);
    out[i] = binaryValue<Op>(a[off[0]], b[off[1]]);
  }
}

template <typename I, ComparePredicate P>
__global__ void compareWalkKernel(const float *__restrict__ a,
                                  const float *__restrict__ b,
                                  uint8_t *__restrict__ out, I n,
                                  const __grid_constant__ Walk<I, 2> w) {
  for (I i = I(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += I(gridDim.x) * blockDim.x) {
    I off[2];
    operandOffsets(w, i, off);
    out[i] = holds<P>(a[off[0]], b[off[1]]) ? 1 : 0;
  }
}

template <typename I>
__global__ void whereWalkKernel(const uint8_t *__restrict__ condition,
                                const float *a, const float *b, float *out, I n,
                                const __grid_constant__ Walk<I, 3> w) {
  for (I i = I(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += I(gridDim.x) * blockDim.x) {
    I off[3];
    operandOffsets(w, i, off);
    out[i] = condition[off[0]] ? a[off[1]] : b[off[2]];
  }
}

template <typename I>
__global__ void broadcastWalkKernel(const float *__restrict__ in,
                                    float *__restrict__ out, I n,
                                    const __grid_constant__ Walk<I, 1> w) {
  for (I i = I(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += I(gridDim.x) * blockDim.x) {
    I off[1];
    operandOffsets(w, i, off);
    // The CPU adds zeros (which turns -0 into +0); nvcc keeps an explicit
    // _rn add.
    out[i] = __fadd_rn(in[off[0]], 0.0f);
  }
}

/// Calls launch(walk, count) with 32-bit indices when the result allows.
template <int N, typename Launch>
void withWalk(const BroadcastLayout<N> &layout, int64_t n, Launch &&launch) {
  if (n <= std::numeric_limits<int32_t>::max())
    launch(narrow<uint32_t, N>(layout), static_cast<uint32_t>(n));
  else
    launch(narrow<int64_t, N>(layout), n);
}

/// Whether every operand has the result's layout (a plain map).
template <int N> bool contiguous(const BroadcastLayout<N> &layout) {
  if (layout.rank != 1)
    return false;
  for (int k = 0; k < N; ++k)
    if (layout.strides[k][0] != 1)
      return false;
  return true;
}

//===----------------------------------------------------------------------===//
// Compile-time dispatch of the op enums
//===----------------------------------------------------------------------===//

template <auto V> using Tag = std::integral_constant<decltype(V), V>;

template <typename F> void dispatchBinary(BinaryOp op, F &&f) {
  switch (op) {
  case BinaryOp::Add:
    return f(Tag<BinaryOp::Add>());
  case BinaryOp::Sub:
    return f(Tag<BinaryOp::Sub>());
  case BinaryOp::Mul:
    return f(Tag<BinaryOp::Mul>());
  case BinaryOp::Div:
    return f(Tag<BinaryOp::Div>());
  case BinaryOp::Pow:
    return f(Tag<BinaryOp::Pow>());
  case BinaryOp::Max:
    return f(Tag<BinaryOp::Max>());
  case BinaryOp::Min:
    return f(Tag<BinaryOp::Min>());
  }
}

template <typename F> void dispatchUnary(UnaryOp op, F &&f) {
  switch (op) {
  case UnaryOp::Neg:
    return f(Tag<UnaryOp::Neg>());
  case UnaryOp::Exp:
    return f(Tag<UnaryOp::Exp>());
  case UnaryOp::Log:
    return f(Tag<UnaryOp::Log>());
  case UnaryOp::Sqrt:
    return f(Tag<UnaryOp::Sqrt>());
  case UnaryOp::Rsqrt:
    return f(Tag<UnaryOp::Rsqrt>());
  case UnaryOp::Relu:
    return f(Tag<UnaryOp::Relu>());
  case UnaryOp::Tanh:
    return f(Tag<UnaryOp::Tanh>());
  case UnaryOp::Erf:
    return f(Tag<UnaryOp::Erf>());
  case UnaryOp::Sigmoid:
    return f(Tag<UnaryOp::Sigmoid>());
  case UnaryOp::Silu:
    return f(Tag<UnaryOp::Silu>());
  case UnaryOp::Gelu:
    return f(Tag<UnaryOp::Gelu>());
  case UnaryOp::GeluTanh:
    return f(Tag<UnaryOp::GeluTanh>());
  case UnaryOp::Sin:
    return f(Tag<UnaryOp::Sin>());
  case UnaryOp::Cos:
    return f(Tag<UnaryOp::Cos>());
  case UnaryOp::Atan:
    return f(Tag<UnaryOp::Atan>());
  case UnaryOp::Floor:
    return f(Tag<UnaryOp::Floor>());
  }
}

template <typename F> void dispatchPredicate(ComparePredicate p, F &&f) {
  switch (p) {
  case ComparePredicate::Eq:
    return f(Tag<ComparePredicate::Eq>());
  case ComparePredicate::Ne:
    return f(Tag<ComparePredicate::Ne>());
  case ComparePredicate::Lt:
    return f(Tag<ComparePredicate::Lt>());
  case ComparePredicate::Le:
    return f(Tag<ComparePredicate::Le>());
  case ComparePredicate::Gt:
    return f(Tag<ComparePredicate::Gt>());
  case ComparePredicate::Ge:
    return f(Tag<ComparePredicate::Ge>());
  }
}

} // namespace

void elementwiseBinary(BinaryOp op, const float *lhs, const float *rhs,
                       float *out, int64_t n, const BroadcastLayout<2> &layout,
                       cudaStream_t stream) {
  if (n <= 0)
    return;
  dispatchBinary(op, [&](auto tag) {
    constexpr BinaryOp Op = decltype(tag)::value;
    if (contiguous(layout))
      return map2(lhs, rhs, out, n, BinaryFn<Op>(), stream, "binary map");
    withWalk(layout, n, [&](const auto &walk, auto count) {
      using I = decltype(count);
      binaryWalkKernel<I, Op><<<blocksFor(n, kThreads), kThreads, 0, stream>>>(
          lhs, rhs, out, count, walk);
      CLEAVE_CUDA_LAUNCHED("binary broadcast");
    });
  });
}

void elementwiseCompare(ComparePredicate predicate, const float *lhs,
                        const float *rhs, uint8_t *out, int64_t n,
                        const BroadcastLayout<2> &layout, cudaStream_t stream) {
  if (n <= 0)
    return;
  dispatchPredicate(predicate, [&](auto tag) {
    constexpr ComparePredicate P = decltype(tag)::value;
    withWalk(layout, n, [&](const auto &walk, auto count) {
      using I = decltype(count);
      compareWalkKernel<I, P><<<blocksFor(n, kThreads), kThreads, 0, stream>>>(
          lhs, rhs, out, count, walk);
      CLEAVE_CUDA_LAUNCHED("compare");
    });
  });
}

void elementwiseWhere(const uint8_t *condition, const float *lhs,
                      const float *rhs, float *out, int64_t n,
                      const BroadcastLayout<3> &layout, cudaStream_t stream) {
  if (n <= 0)
    return;
  withWalk(layout, n, [&](const auto &walk, auto count) {
    using I = decltype(count);
    whereWalkKernel<I><<<blocksFor(n, kThreads), kThreads, 0, stream>>>(
        condition, lhs, rhs, out, count, walk);
    CLEAVE_CUDA_LAUNCHED("where");
  });
}

void elementwiseBroadcast(const float *in, float *out, int64_t n,
                          const BroadcastLayout<1> &layout,
                          cudaStream_t stream) {
  if (n <= 0)
    return;
  withWalk(layout, n, [&](const auto &walk, auto count) {
    using I = decltype(count);
    broadcastWalkKernel<I>
        <<<blocksFor(n, kThreads), kThreads, 0, stream>>>(in, out, count, walk);
    CLEAVE_CUDA_LAUNCHED("broadcast_to");
  });
}

void elementwiseUnary(UnaryOp op, const float *in, float *out, int64_t n,
                      cudaStream_t stream) {
  dispatchUnary(op, [&](auto tag) {
    map1(in, out, n, UnaryFn<decltype(tag)::value>(), stream, "unary");
  });
}

void elementwiseActivationGrad(UnaryOp op, const float *in, const float *dOut,
                               float *dIn, int64_t n, cudaStream_t stream) {
  dispatchUnary(op, [&](auto tag) {
    map2(in, dOut, dIn, n, GradFn<decltype(tag)::value>(), stream,
         "activation_grad");
  });
}

void elementwiseDropout(const float *in, float *out, int64_t n, uint64_t seed,
                        uint64_t threshold, float scale, cudaStream_t stream) {
  map1(in, out, n, DropoutFn{seed, threshold, scale}, stream, "dropout");
}

void elementwiseAccumulate(const float *in, float *out, int64_t n,
                           cudaStream_t stream) {
  map2(out, in, out, n, AccumulateFn(), stream, "accumulate");
}

void elementwiseScale(const float *in, float *out, int64_t n, float factor,
                      cudaStream_t stream) {
  map1(in, out, n, ScaleFn{factor}, stream, "scale");
}

} // namespace cleave::cuda
