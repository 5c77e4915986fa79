//===- NormalizationTest.cpp - Layer, RMS and batch normalisation ---------===//

#include "cleave/runtime/kernels/Normalization.h"

#include "GradCheck.h"

#include <cmath>

using namespace cleave::kernels;
using namespace cleave::kernels::test;

namespace {

const double kEps = 1e-5;

/// Reference layer/RMS norm of [rows, n] rows in double.
Tensor naiveNorm(const Tensor &x, int64_t n, const Tensor *scale,
                 const Tensor *bias, bool rms) {
  Tensor out = poisoned(x.shape());
  for (int64_t r = 0; r < x.numElements() / n; ++r) {
    double mean = 0, sq = 0;
    for (int64_t i = 0; i < n; ++i)
      mean += x[r * n + i];
    mean = rms ? 0.0 : mean / n;
    for (int64_t i = 0; i < n; ++i)
      sq += (x[r * n + i] - mean) * (x[r * n + i] - mean);
    double inv = 1.0 / std::sqrt(sq / n + kEps);
    for (int64_t i = 0; i < n; ++i) {
      double y = (x[r * n + i] - mean) * inv;
      if (scale)
        y *= (*scale)[i];
      if (bias)
        y += (*bias)[i];
      out[r * n + i] = float(y);
    }
  }
  return out;
}

TEST(LayerNorm, MatchesReference) {
  Tensor x = randomTensor({2, 3, 4}, 1, -2.0f, 3.0f);
  Tensor scale = randomTensor({3, 4}, 2), bias = randomTensor({3, 4}, 3);
  Tensor out = poisoned(x.shape());
  layerNorm(x, scale, bias, 1, kEps, out);
  EXPECT_TRUE(
      allClose(out, naiveNorm(x, 12, &scale, &bias, false), 1e-5, 1e-5));
  layerNorm(x, {}, {}, 2, kEps, out);
  EXPECT_TRUE(
      allClose(out, naiveNorm(x, 4, nullptr, nullptr, false), 1e-5, 1e-5));
  EXPECT_THROW(layerNorm(x, scale, {}, 2, kEps, out), std::invalid_argument);
}

TEST(LayerNorm, GradientsMatchFiniteDifferences) {
  Tensor x = randomTensor({3, 2, 5}, 4, -2.0f, 2.0f);
  Tensor scale = randomTensor({2, 5}, 5, 0.5f, 1.5f);
  Tensor bias = randomTensor({2, 5}, 6);
  Tensor y = poisoned(x.shape());
  GradCheck gc([&] { layerNorm(x, scale, bias, 1, kEps, y); }, {&y});
  Tensor dx = poisoned(x.shape()), ds = poisoned(scale.shape()),
         db = poisoned(bias.shape());
  layerNormBackward(x, scale, 1, kEps, gc.outGrad(), dx, ds, db);
  EXPECT_TRUE(gc.check(x, dx));
  EXPECT_TRUE(gc.check(scale, ds));
  EXPECT_TRUE(gc.check(bias, db));

  GradCheck plain([&] { layerNorm(x, {}, {}, 2, kEps, y); }, {&y});
  layerNormBackward(x, {}, 2, kEps, plain.outGrad(), dx, {}, {});
  EXPECT_TRUE(plain.check(x, dx));
}

TEST(RmsNorm, MatchesReference) {
  Tensor x = randomTensor({4, 6}, 7, -2.0f, 3.0f), scale = randomTensor({6}, 8);
  Tensor out = poisoned(x.shape());
  rmsNorm(x, scale, 1, kEps, out);
  EXPECT_TRUE(
      allClose(out, naiveNorm(x, 6, &scale, nullptr, true), 1e-5, 1e-5));
  rmsNorm(x, {}, 0, kEps, out);
  EXPECT_TRUE(
      allClose(out, naiveNorm(x, 24, nullptr, nullptr, true), 1e-5, 1e-5));
}

TEST(RmsNorm, GradientsMatchFiniteDifferences) {
  Tensor x = randomTensor({3, 7}, 9, -2.0f, 2.0f);
  Tensor scale = randomTensor({7}, 10, 0.5f, 1.5f), y = poisoned(x.shape());
  GradCheck gc([&] { rmsNorm(x, scale, 1, kEps, y); }, {&y});
  Tensor dx = poisoned(x.shape()), ds = poisoned(scale.shape());
  rmsNormBackward(x, scale, 1, kEps, gc.outGrad(), dx, ds);
  EXPECT_TRUE(gc.check(x, dx));
  EXPECT_TRUE(gc.check(scale, ds));
}

struct BatchNormInputs {
  Tensor x = randomTensor({3, 2, 2, 3}, 11, -1.0f, 2.0f);
  Tensor scale = randomTensor({2}, 12, 0.5f, 1.5f);
  Tensor bias = randomTensor({2}, 13);
  Tensor mean = randomTensor({2}, 14);
  Tensor var = randomTensor({2}, 15, 0.5f, 2.0f);
};

TEST(BatchNorm, UsesBatchOrGivenStatistics) {
  BatchNormInputs in;
  Tensor out = poisoned(in.x.shape()), bm = poisoned({2}), bv = poisoned({2});
  batchNorm(in.x, in.scale, in.bias, in.mean, in.var, kEps, true, out, bm, bv);
  for (int64_t c = 0; c < 2; ++c) {
    double sum = 0, sq = 0;
    std::vector<int64_t> at;
    for (int64_t i = 0; i < in.x.numElements(); ++i)
      if (unravel(i, in.x.shape())[1] == c)
        at.push_back(i);
    for (int64_t i : at)
      sum += in.x[i];
    double mean = sum / at.size();
    for (int64_t i : at)
      sq += (in.x[i] - mean) * (in.x[i] - mean);
    double var = sq / at.size();
    EXPECT_NEAR(bm[c], mean, 1e-6);
    EXPECT_NEAR(bv[c], var, 1e-6);
    for (int64_t i : at)
      EXPECT_NEAR(out[i],
                  (in.x[i] - mean) / std::sqrt(var + kEps) * in.scale[c] +
                      in.bias[c],
                  1e-5);
  }
  batchNorm(in.x, in.scale, in.bias, in.mean, in.var, kEps, false, out);
  for (int64_t i = 0; i < in.x.numElements(); ++i) {
    int64_t c = unravel(i, in.x.shape())[1];
    EXPECT_NEAR(out[i],
                (in.x[i] - in.mean[c]) / std::sqrt(in.var[c] + kEps) *
                        in.scale[c] +
                    in.bias[c],
                1e-5);
  }
}

TEST(BatchNorm, GradientsMatchFiniteDifferences) {
  for (bool training : {true, false}) {
    BatchNormInputs in;
    Tensor y = poisoned(in.x.shape());
    GradCheck gc(
        [&] {
          batchNorm(in.x, in.scale, in.bias, in.mean, in.var, kEps, training,
                    y);
        },
        {&y});
    Tensor dx = poisoned(in.x.shape()), ds = poisoned({2}), db = poisoned({2}),
           dm = poisoned({2}), dv = poisoned({2});
    batchNormBackward(in.x, in.scale, in.mean, in.var, kEps, training,
                      gc.outGrad(), dx, ds, db, dm, dv);
    EXPECT_TRUE(gc.check(in.x, dx)) << "training " << training;
    EXPECT_TRUE(gc.check(in.scale, ds)) << "training " << training;
    EXPECT_TRUE(gc.check(in.bias, db)) << "training " << training;
    EXPECT_TRUE(gc.check(in.mean, dm)) << "training " << training;
    EXPECT_TRUE(gc.check(in.var, dv)) << "training " << training;
  }
}

} // namespace
