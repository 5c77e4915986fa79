//===- Optimizer.cpp - In-place SGD and AdamW steps -----------------------===//

#include "cleave/runtime/kernels/Optimizer.h"

#include "Parallel.h"
#include "Support.h"
#include "VectorClones.h"

#include <cmath>

namespace cleave::kernels {

CLEAVE_VECTOR_CLONES void sgdStep(TensorRef param, ConstTensorRef grad,
                                  TensorRef momentumBuffer,
                                  const SgdOptions &options) {
  detail::checkShape(grad, param.shape, "sgdStep", "grad");
  CLEAVE_CHECK(options.momentum == 0.0f || momentumBuffer,
               "momentum needs a momentum buffer");
  detail::checkOptionalShape(momentumBuffer, param.shape, "sgdStep",
                             "momentumBuffer");
  int64_t n = param.numElements();
  float lr = options.learningRate, mu = options.momentum,
        wd = options.weightDecay;
  float *p = param.data, *buf = momentumBuffer.data;
  const float *g = grad.data;
  if (!buf) {
    for (int64_t i = 0; i < n; ++i)
      p[i] -= lr * (g[i] + wd * p[i]);
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    float b = mu * buf[i] + (g[i] + wd * p[i]);
    buf[i] = b;
    p[i] -= lr * b;
  }
}

bool unscaleGradient(TensorRef grad, float scale) {
  CLEAVE_CHECK(scale > 0.0f && std::isfinite(scale),
               "the loss scale is " + std::to_string(scale) +
                   " (a finite number above 0 expected)");
  float inverse = 1.0f / scale;
  bool nonFinite = false;
  float *g = grad.data;
  for (int64_t i = 0, n = grad.numElements(); i < n; ++i) {
    nonFinite |= !std::isfinite(g[i]);
    g[i] *= inverse;
  }
  return nonFinite;
}

namespace {

struct AdamWConstants {
  float beta1, beta2, eps, stepSize, invSqrtBc2, decay;
};

/// Elements [i0, i1) of the update (cloned for the vector widths, run on
/// the threads of parallelFor).
CLEAVE_VECTOR_CLONES void adamwRange(float *p, const float *g, float *pm,
                                     float *pv, const AdamWConstants &c,
                                     int64_t i0, int64_t i1) {
  float beta1 = c.beta1, beta2 = c.beta2, eps = c.eps;
  float stepSize = c.stepSize, invSqrtBc2 = c.invSqrtBc2, decay = c.decay;
  for (int64_t i = i0; i < i1; ++i) {
    float mi = beta1 * pm[i] + (1.0f - beta1) * g[i];
    float vi = beta2 * pv[i] + (1.0f - beta2) * g[i] * g[i];
    pm[i] = mi;
    pv[i] = vi;
    p[i] = p[i] * decay - stepSize * mi / (std::sqrt(vi) * invSqrtBc2 + eps);
  }
}

} // namespace

void adamwStep(TensorRef param, ConstTensorRef grad, TensorRef m, TensorRef v,
               int64_t step, const AdamWOptions &options) {
  detail::checkShape(grad, param.shape, "adamwStep", "grad");
  detail::checkShape(m, param.shape, "adamwStep", "m");
  detail::checkShape(v, param.shape, "adamwStep", "v");
  CLEAVE_CHECK(step >= 1, "step counts from 1, got " + std::to_string(step));
  double b1 = options.beta1, b2 = options.beta2;
  // As PyTorch: p -= (lr / bc1) * m / (sqrt(v) / sqrt(bc2) + eps).
  double bc1 = 1.0 - std::pow(b1, double(step));
  double bc2 = 1.0 - std::pow(b2, double(step));
  AdamWConstants c{options.beta1,
                   options.beta2,
                   options.epsilon,
                   static_cast<float>(options.learningRate / bc1),
                   static_cast<float>(1.0 / std::sqrt(bc2)),
                   1.0f - options.learningRate * options.weightDecay};
  int64_t n = param.numElements();
  // Element-wise: any split gives the same bits. Each element reads and
  // writes 16 bytes, hence the weight of the work.
  detail::parallelFor(n, 4 * n, [&](int64_t i0, int64_t i1) {
    adamwRange(param.data, grad.data, m.data, v.data, c, i0, i1);
  });
}

} // namespace cleave::kernels
