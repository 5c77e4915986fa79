//===- Optimizer.cu - SGD and AdamW steps on the GPU ----------------------===//
//
// Both updates stream their tensors once; when every buffer is 16-byte
// aligned they move float4s (the element function runs four times), the
// rest element by element. Parameters and state may be updated in place,
// so those pointers are not __restrict__: each thread reads an element's
// inputs before it writes that element's outputs.
//
//===----------------------------------------------------------------------===//

#include "kernels/Optimizer.h"

#include "Context.h"

#include <cmath>
#include <cstdint>

namespace cleave::cuda {

namespace {

constexpr int kThreads = 256;

/// A product rounded on its own (nvcc would fuse it with the sum it feeds;
/// the CPU build rounds both).
__device__ __forceinline__ float mulRn(float a, float b) {
  return __fmul_rn(a, b);
}

__device__ __forceinline__ float4 load4(const float *p, int64_t i) {
  return reinterpret_cast<const float4 *>(p)[i];
}

__device__ __forceinline__ void store4(float *p, int64_t i, float4 v) {
  reinterpret_cast<float4 *>(p)[i] = v;
}

/// Calls element(i) for every i < n, four at a time through float4 lanes
/// when `vectorized` (element4(i4) handles elements 4 i4 .. 4 i4 + 3).
template <typename Element, typename Element4>
__device__ __forceinline__ void forEach(int64_t n, bool vectorized,
                                        Element element, Element4 element4) {
  int64_t first = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  int64_t stride = int64_t(gridDim.x) * blockDim.x;
  int64_t done = 0;
  if (vectorized) {
    for (int64_t i = first; i < n / 4; i += stride)
      element4(i);
    done = n / 4 * 4;
  }
  for (int64_t i = done + first; i < n; i += stride)
    element(i);
}

struct Sgd {
  SgdHyperparameters h;
  /// b = mu * buffer + (g + wd * p); p - lr * b (kernels::sgdStep).
  __device__ void operator()(float p, float g, float buffer, float &newP,
                             float &newBuffer) const {
    float b = mulRn(h.momentum, buffer) + (g + mulRn(h.weightDecay, p));
    newBuffer = b;
    newP = p - mulRn(h.learningRate, b);
  }
};

__global__ void sgdKernel(const float *param, const float *__restrict__ grad,
                          const float *buffer, float *newParam,
                          float *newBuffer, int64_t n, bool vectorized,
                          Sgd sgd) {
  forEach(
      n, vectorized,
      [&](int64_t i) {
        sgd(param[i], grad[i], buffer[i], newParam[i], newBuffer[i]);
      },
      [&](int64_t i) {
        float4 p = load4(param, i), g = load4(grad, i), b = load4(buffer, i);
        float4 np, nb;
        sgd(p.x, g.x, b.x, np.x, nb.x);
        sgd(p.y, g.y, b.y, np.y, nb.y);
        sgd(p.z, g.z, b.z, np.z, nb.z);
        sgd(p.w, g.w, b.w, np.w, nb.w);
        store4(newParam, i, np);
        store4(newBuffer, i, nb);
      });
}

struct AdamW {
  AdamWHyperparameters h;
  float stepSize;   // lr / (1 - beta1^step)
  float invSqrtBc2; // 1 / sqrt(1 - beta2^step)

  /// kernels::adamwStep's loop body.
  __device__ void operator()(float p, float g, float m, float v, float &newP,
                             float &newM, float &newV) const {
    float mi = mulRn(h.beta1, m) + mulRn(1.0f - h.beta1, g);
    float vi = mulRn(h.beta2, v) + mulRn((1.0f - h.beta2) * g, g);
    newM = mi;
    newV = vi;
    newP = mulRn(p, h.decay) -
           stepSize * mi / (mulRn(sqrtf(vi), invSqrtBc2) + h.epsilon);
  }
};

__global__ void adamwKernel(const float *param, const float *__restrict__ grad,
                            const float *m, const float *v,
                            const float *__restrict__ step, float *newParam,
                            float *newM, float *newV, int64_t n,
                            bool vectorized, AdamWHyperparameters h) {
  // The step count lives on the device (the plan increments it there), so
  // each block derives the bias corrections from it once, in double as the
  // CPU does.
  __shared__ float stepSize, invSqrtBc2;
  __shared__ bool valid;
  if (threadIdx.x == 0) {
    long count = lroundf(*step);
    valid = count >= 1;
    double bc1 = 1.0 - pow(double(h.beta1), double(count));
    double bc2 = 1.0 - pow(double(h.beta2), double(count));
    stepSize = static_cast<float>(h.learningRate / bc1);
    invSqrtBc2 = static_cast<float>(1.0 / sqrt(bc2));
  }
  __syncthreads();
  if (!valid) {
    // The CPU throws; a GPU kernel cannot, so the update poisons what it
    // writes rather than step with a meaningless bias correction.
    forEach(
        n, false, [&](int64_t i) { newParam[i] = newM[i] = newV[i] = NAN; },
        [&](int64_t) {});
    return;
  }
  AdamW adamw{h, stepSize, invSqrtBc2};
  forEach(
      n, vectorized,
      [&](int64_t i) {
        adamw(param[i], grad[i], m[i], v[i], newParam[i], newM[i], newV[i]);
      },
      [&](int64_t i) {
        float4 p = load4(param, i), g = load4(grad, i), m4 = load4(m, i),
               v4 = load4(v, i);
        float4 np, nm, nv;
        adamw(p.x, g.x, m4.x, v4.x, np.x, nm.x, nv.x);
        adamw(p.y, g.y, m4.y, v4.y, np.y, nm.y, nv.y);
        adamw(p.z, g.z, m4.z, v4.z, np.z, nm.z, nv.z);
        adamw(p.w, g.w, m4.w, v4.w, np.w, nm.w, nv.w);
        store4(newParam, i, np);
        store4(newM, i, nm);
        store4(newV, i, nv);
      });
}

bool aligned16(const void *p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

template <typename... P> bool allAligned(const P *...pointers) {
  return (aligned16(pointers) && ...);
}

unsigned gridFor(int64_t n, bool vectorized) {
  return blocksFor(vectorized ? (n + 3) / 4 : n, kThreads);
}

__global__ void unscaleKernel(float *grad, int64_t n, const float *scale,
                              float *flag) {
  float inverse = 1.0f / *scale;
  bool nonFinite = false;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    float g = grad[i];
    nonFinite |= !isfinite(g);
    grad[i] = g * inverse;
  }
  if (nonFinite)
    *flag = 1.0f;
}

} // namespace

void unscaleGradient(float *grad, int64_t n, const float *scale, float *flag,
                     cudaStream_t stream) {
  if (n <= 0)
    return;
  unscaleKernel<<<blocksFor(n, kThreads), kThreads, 0, stream>>>(grad, n,
                                                                 scale, flag);
  CLEAVE_CUDA_LAUNCHED("unscale");
}

void sgdUpdate(const float *param, const float *grad, const float *buffer,
               float *newParam, float *newBuffer, int64_t n,
               const SgdHyperparameters &h, cudaStream_t stream) {
  if (n <= 0)
    return;
  bool vectorized = allAligned(param, grad, buffer, newParam, newBuffer);
  sgdKernel<<<gridFor(n, vectorized), kThreads, 0, stream>>>(
      param, grad, buffer, newParam, newBuffer, n, vectorized, Sgd{h});
  CLEAVE_CUDA_LAUNCHED("sgd_update");
}

void adamwUpdate(const float *param, const float *grad, const float *m,
                 const float *v, const float *step, float *newParam,
                 float *newM, float *newV, int64_t n,
                 const AdamWHyperparameters &h, cudaStream_t stream) {
  if (n <= 0)
    return;
  bool vectorized = allAligned(param, grad, m, v, newParam, newM, newV);
  adamwKernel<<<gridFor(n, vectorized), kThreads, 0, stream>>>(
      param, grad, m, v, step, newParam, newM, newV, n, vectorized, h);
  CLEAVE_CUDA_LAUNCHED("adamw_update");
}

} // namespace cleave::cuda
