//===- Normalization.cpp - Layer, RMS and batch normalisation -------------===//

#include "cleave/runtime/kernels/Normalization.h"

#include "Parallel.h"
#include "Support.h"
#include "VectorClones.h"

#include <cmath>

namespace cleave::kernels {
namespace {

/// Rows of `n` normalised elements: [rows, n].
struct NormDims {
  int64_t rows, n;
  Shape paramShape;
};

NormDims normDims(ConstTensorRef in, int64_t axis, const char *kernel) {
  detail::checkAxis(axis, in.rank(), kernel);
  NormDims d;
  d.rows = detail::product(in.shape, 0, axis);
  d.n = detail::product(in.shape, axis, in.shape.size());
  d.paramShape.assign(in.shape.begin() + axis, in.shape.end());
  return d;
}

struct Moments {
  float mean, rstd;
};

Moments moments(const float *x, int64_t n, double epsilon) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i)
    sum += x[i];
  double mean = n ? sum / n : 0.0;
  double sq = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    double c = x[i] - mean;
    sq += c * c;
  }
  double var = n ? sq / n : 0.0;
  return {static_cast<float>(mean),
          static_cast<float>(1.0 / std::sqrt(var + epsilon))};
}

float rmsInverse(const float *x, int64_t n, double epsilon) {
  double sq = 0.0;
  for (int64_t i = 0; i < n; ++i)
    sq += double(x[i]) * x[i];
  return static_cast<float>(1.0 / std::sqrt((n ? sq / n : 0.0) + epsilon));
}

/// [N, C, S] view of a batch-norm input.
struct ChannelDims {
  int64_t batch, channels, spatial;
};

ChannelDims channelDims(ConstTensorRef in, const char *kernel) {
  CLEAVE_CHECK_IN(kernel, in.rank() >= 2,
                  "expects an [N, C, ...] input, got " + shapeString(in.shape));
  return {in.shape[0], in.shape[1],
          detail::product(in.shape, 2, in.shape.size())};
}

} // namespace

namespace {

// The per-row work of each norm over rows [r0, r1): cloned for the vector
// widths, called from the threads of parallelFor / parallelRowSums.

CLEAVE_VECTOR_CLONES void layerNormRows(const float *in, const float *scale,
                                        const float *bias, int64_t n,
                                        double epsilon, float *out, int64_t r0,
                                        int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    const float *x = in + r * n;
    float *y = out + r * n;
    Moments m = moments(x, n, epsilon);
    for (int64_t i = 0; i < n; ++i)
      y[i] = (x[i] - m.mean) * m.rstd;
    if (scale)
      for (int64_t i = 0; i < n; ++i)
        y[i] *= scale[i];
    if (bias)
      for (int64_t i = 0; i < n; ++i)
        y[i] += bias[i];
  }
}

/// dIn of rows [r0, r1), and their dScale and dBias terms added into
/// `dScale` and `dBias` (either may be null).
CLEAVE_VECTOR_CLONES void
layerNormBackwardRows(const float *in, const float *scale, int64_t n,
                      double epsilon, const float *dOut, float *dIn,
                      float *dScale, float *dBias, int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    const float *x = in + r * n, *dy = dOut + r * n;
    Moments m = moments(x, n, epsilon);
    if (dScale)
      for (int64_t i = 0; i < n; ++i)
        dScale[i] += dy[i] * (x[i] - m.mean) * m.rstd;
    if (dBias)
      for (int64_t i = 0; i < n; ++i)
        dBias[i] += dy[i];
    if (!dIn)
      continue;
    // With g = dy * scale and xhat the normalised input:
    // dx = rstd * (g - mean(g) - xhat * mean(g * xhat)).
    double sumG = 0.0, sumGX = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      float g = scale ? dy[i] * scale[i] : dy[i];
      sumG += g;
      sumGX += double(g) * ((x[i] - m.mean) * m.rstd);
    }
    float meanG = static_cast<float>(sumG / n);
    float meanGX = static_cast<float>(sumGX / n);
    float *dx = dIn + r * n;
    for (int64_t i = 0; i < n; ++i) {
      float g = scale ? dy[i] * scale[i] : dy[i];
      float xhat = (x[i] - m.mean) * m.rstd;
      dx[i] = m.rstd * (g - meanG - xhat * meanGX);
    }
  }
}

CLEAVE_VECTOR_CLONES void rmsNormRows(const float *in, const float *scale,
                                      int64_t n, double epsilon, float *out,
                                      int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    const float *x = in + r * n;
    float *y = out + r * n;
    float inv = rmsInverse(x, n, epsilon);
    if (scale)
      for (int64_t i = 0; i < n; ++i)
        y[i] = x[i] * inv * scale[i];
    else
      for (int64_t i = 0; i < n; ++i)
        y[i] = x[i] * inv;
  }
}

CLEAVE_VECTOR_CLONES void
rmsNormBackwardRows(const float *in, const float *scale, int64_t n,
                    double epsilon, const float *dOut, float *dIn,
                    float *dScale, int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    const float *x = in + r * n, *dy = dOut + r * n;
    float inv = rmsInverse(x, n, epsilon);
    if (dScale)
      for (int64_t i = 0; i < n; ++i)
        dScale[i] += dy[i] * x[i] * inv;
    if (!dIn)
      continue;
    // With g = dy * scale and r = 1 / rms: dx = r * g - x * r^3 * mean(g x).
    double sumGX = 0.0;
    for (int64_t i = 0; i < n; ++i)
      sumGX += double(scale ? dy[i] * scale[i] : dy[i]) * x[i];
    float k = static_cast<float>(sumGX / n) * inv * inv * inv;
    float *dx = dIn + r * n;
    for (int64_t i = 0; i < n; ++i) {
      float g = scale ? dy[i] * scale[i] : dy[i];
      dx[i] = inv * g - x[i] * k;
    }
  }
}

} // namespace

void layerNorm(ConstTensorRef in, ConstTensorRef scale, ConstTensorRef bias,
               int64_t axis, double epsilon, TensorRef out) {
  NormDims d = normDims(in, axis, "layerNorm");
  detail::checkShape(out, in.shape, "layerNorm", "result");
  detail::checkOptionalShape(scale, d.paramShape, "layerNorm", "scale");
  detail::checkOptionalShape(bias, d.paramShape, "layerNorm", "bias");
  detail::parallelFor(d.rows, d.rows * d.n, [&](int64_t r0, int64_t r1) {
    layerNormRows(in.data, scale.data, bias.data, d.n, epsilon, out.data, r0,
                  r1);
  });
}

void layerNormBackward(ConstTensorRef in, ConstTensorRef scale, int64_t axis,
                       double epsilon, ConstTensorRef dOut, TensorRef dIn,
                       TensorRef dScale, TensorRef dBias) {
  NormDims d = normDims(in, axis, "layerNormBackward");
  detail::checkShape(dOut, in.shape, "layerNormBackward", "dOut");
  detail::checkOptionalShape(dIn, in.shape, "layerNormBackward", "dIn");
  detail::checkOptionalShape(scale, d.paramShape, "layerNormBackward", "scale");
  detail::checkOptionalShape(dScale, d.paramShape, "layerNormBackward",
                             "dScale");
  detail::checkOptionalShape(dBias, d.paramShape, "layerNormBackward", "dBias");
  detail::zero(dScale);
  detail::zero(dBias);
  int64_t n = d.n;
  // One sum of 2n: the scale's terms, then the bias's.
  std::vector<float> sums(dScale || dBias ? 2 * n : 0, 0.0f);
  detail::parallelRowSums(
      d.rows, 2 * n, sums.empty() ? nullptr : sums.data(),
      [&](int64_t r0, int64_t r1, float *partial) {
        layerNormBackwardRows(in.data, scale.data, n, epsilon, dOut.data,
                              dIn.data, dScale ? partial : nullptr,
                              dBias ? partial + n : nullptr, r0, r1);
      });
  if (dScale)
    std::copy(sums.begin(), sums.begin() + n, dScale.data);
  if (dBias)
    std::copy(sums.begin() + n, sums.end(), dBias.data);
}

void rmsNorm(ConstTensorRef in, ConstTensorRef scale, int64_t axis,
             double epsilon, TensorRef out) {
  NormDims d = normDims(in, axis, "rmsNorm");
  detail::checkShape(out, in.shape, "rmsNorm", "result");
  detail::checkOptionalShape(scale, d.paramShape, "rmsNorm", "scale");
  detail::parallelFor(d.rows, d.rows * d.n, [&](int64_t r0, int64_t r1) {
    rmsNormRows(in.data, scale.data, d.n, epsilon, out.data, r0, r1);
  });
}

void rmsNormBackward(ConstTensorRef in, ConstTensorRef scale, int64_t axis,
                     double epsilon, ConstTensorRef dOut, TensorRef dIn,
                     TensorRef dScale) {
  NormDims d = normDims(in, axis, "rmsNormBackward");
  detail::checkShape(dOut, in.shape, "rmsNormBackward", "dOut");
  detail::checkOptionalShape(dIn, in.shape, "rmsNormBackward", "dIn");
  detail::checkOptionalShape(scale, d.paramShape, "rmsNormBackward", "scale");
  detail::checkOptionalShape(dScale, d.paramShape, "rmsNormBackward", "dScale");
  detail::zero(dScale);
  detail::parallelRowSums(d.rows, d.n, dScale.data,
                          [&](int64_t r0, int64_t r1, float *partial) {
                            rmsNormBackwardRows(in.data, scale.data, d.n,
                                                epsilon, dOut.data, dIn.data,
                                                partial, r0, r1);
                          });
}

void batchNorm(ConstTensorRef in, ConstTensorRef scale, ConstTensorRef bias,
               ConstTensorRef mean, ConstTensorRef variance, double epsilon,
               bool training, TensorRef out, TensorRef batchMean,
               TensorRef batchVariance) {
  ChannelDims d = channelDims(in, "batchNorm");
  Shape channel{d.channels};
  detail::checkShape(out, in.shape, "batchNorm", "result");
  detail::checkShape(scale, channel, "batchNorm", "scale");
  detail::checkShape(bias, channel, "batchNorm", "bias");
  if (!training) {
    detail::checkShape(mean, channel, "batchNorm", "mean");
    detail::checkShape(variance, channel, "batchNorm", "variance");
  }
  detail::checkOptionalShape(batchMean, channel, "batchNorm", "batchMean");
  detail::checkOptionalShape(batchVariance, channel, "batchNorm",
                             "batchVariance");
  int64_t count = d.batch * d.spatial;
  for (int64_t c = 0; c < d.channels; ++c) {
    double mu, var;
    if (training) {
      double sum = 0.0;
      for (int64_t b = 0; b < d.batch; ++b) {
        const float *x = in.data + (b * d.channels + c) * d.spatial;
        for (int64_t s = 0; s < d.spatial; ++s)
          sum += x[s];
      }
      mu = count ? sum / count : 0.0;
      double sq = 0.0;
      for (int64_t b = 0; b < d.batch; ++b) {
        const float *x = in.data + (b * d.channels + c) * d.spatial;
        for (int64_t s = 0; s < d.spatial; ++s)
          sq += (x[s] - mu) * (x[s] - mu);
      }
      var = count ? sq / count : 0.0;
      if (batchMean)
        batchMean.data[c] = static_cast<float>(mu);
      if (batchVariance)
        batchVariance.data[c] = static_cast<float>(var);
    } else {
      mu = mean.data[c];
      var = variance.data[c];
    }
    // y = x * a + b with the per-channel affine map folded once.
    float a = static_cast<float>(scale.data[c] / std::sqrt(var + epsilon));
    float shift = static_cast<float>(bias.data[c] - mu * a);
    for (int64_t b = 0; b < d.batch; ++b) {
      int64_t base = (b * d.channels + c) * d.spatial;
      const float *x = in.data + base;
      float *y = out.data + base;
      for (int64_t s = 0; s < d.spatial; ++s)
        y[s] = x[s] * a + shift;
    }
  }
}

void batchNormBackward(ConstTensorRef in, ConstTensorRef scale,
                       ConstTensorRef mean, ConstTensorRef variance,
                       double epsilon, bool training, ConstTensorRef dOut,
                       TensorRef dIn, TensorRef dScale, TensorRef dBias,
                       TensorRef dMean, TensorRef dVariance) {
  ChannelDims d = channelDims(in, "batchNormBackward");
  Shape channel{d.channels};
  detail::checkShape(dOut, in.shape, "batchNormBackward", "dOut");
  detail::checkShape(scale, channel, "batchNormBackward", "scale");
  if (!training) {
    detail::checkShape(mean, channel, "batchNormBackward", "mean");
    detail::checkShape(variance, channel, "batchNormBackward", "variance");
  }
  detail::checkOptionalShape(dIn, in.shape, "batchNormBackward", "dIn");
  for (TensorRef *t : {&dScale, &dBias, &dMean, &dVariance})
    detail::checkOptionalShape(*t, channel, "batchNormBackward",
                               "a per-channel gradient");
  int64_t count = d.batch * d.spatial;
  for (int64_t c = 0; c < d.channels; ++c) {
    double mu, var;
    if (training) {
      double sum = 0.0, sq = 0.0;
      for (int64_t b = 0; b < d.batch; ++b) {
        const float *x = in.data + (b * d.channels + c) * d.spatial;
        for (int64_t s = 0; s < d.spatial; ++s)
          sum += x[s];
      }
      mu = count ? sum / count : 0.0;
      for (int64_t b = 0; b < d.batch; ++b) {
        const float *x = in.data + (b * d.channels + c) * d.spatial;
        for (int64_t s = 0; s < d.spatial; ++s)
          sq += (x[s] - mu) * (x[s] - mu);
      }
      var = count ? sq / count : 0.0;
    } else {
      mu = mean.data[c];
      var = variance.data[c];
    }
    double rstd = 1.0 / std::sqrt(var + epsilon);
    double sumDy = 0.0, sumDyXhat = 0.0;
    for (int64_t b = 0; b < d.batch; ++b) {
      int64_t base = (b * d.channels + c) * d.spatial;
      const float *x = in.data + base, *dy = dOut.data + base;
      for (int64_t s = 0; s < d.spatial; ++s) {
        sumDy += dy[s];
        sumDyXhat += dy[s] * ((x[s] - mu) * rstd);
      }
    }
    double g = scale.data[c];
    if (dScale)
      dScale.data[c] = static_cast<float>(sumDyXhat);
    if (dBias)
      dBias.data[c] = static_cast<float>(sumDy);
    if (dMean)
      dMean.data[c] = training ? 0.0f : static_cast<float>(-g * rstd * sumDy);
    if (dVariance)
      dVariance.data[c] =
          training ? 0.0f
                   : static_cast<float>(-0.5 * g * rstd * rstd * sumDyXhat);
    if (!dIn)
      continue;
    // Training: dx = g rstd / M (M dy - sum(dy) - xhat sum(dy xhat)), the
    // batch statistics being functions of x; inference: dx = g rstd dy.
    float a = static_cast<float>(g * rstd);
    float meanDy = training && count ? static_cast<float>(sumDy / count) : 0;
    float meanDyXhat =
        training && count ? static_cast<float>(sumDyXhat / count) : 0;
    float fmu = static_cast<float>(mu), frstd = static_cast<float>(rstd);
    for (int64_t b = 0; b < d.batch; ++b) {
      int64_t base = (b * d.channels + c) * d.spatial;
      const float *x = in.data + base, *dy = dOut.data + base;
      float *dx = dIn.data + base;
      for (int64_t s = 0; s < d.spatial; ++s)
        dx[s] = a * (dy[s] - meanDy - (x[s] - fmu) * frstd * meanDyXhat);
    }
  }
}

} // namespace cleave::kernels
