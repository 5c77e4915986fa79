//===- OptimizerTest.cpp - SGD and AdamW steps ----------------------------===//

#include "cleave/runtime/kernels/Optimizer.h"

#include "GradCheck.h"

#include <cmath>
#include <limits>

using namespace cleave::kernels;
using namespace cleave::kernels::test;

namespace {

TEST(Sgd, PlainStepWithWeightDecay) {
  Tensor p({2}, {1.0f, -2.0f}), g({2}, {0.5f, 0.25f});
  sgdStep(p, g, {}, {0.1f, 0.0f, 0.01f});
  // p - lr * (g + wd * p)
  EXPECT_FLOAT_EQ(p[0], 1.0f - 0.1f * (0.5f + 0.01f * 1.0f));
  EXPECT_FLOAT_EQ(p[1], -2.0f - 0.1f * (0.25f - 0.01f * 2.0f));
}

TEST(Sgd, ABufferWithoutMomentumHoldsTheStepsGradient) {
  // graph.sgd_update returns new_momentum = mu * m + (g + wd * p) even at
  // mu = 0.
  Tensor p({1}, {2.0f}), buf({1}, {5.0f});
  sgdStep(p, Tensor({1}, {1.0f}), buf, {0.5f, 0.0f, 0.25f});
  EXPECT_FLOAT_EQ(buf[0], 1.5f);
  EXPECT_FLOAT_EQ(p[0], 2.0f - 0.5f * 1.5f);
}

TEST(Sgd, MomentumAccumulatesOverTwoSteps) {
  Tensor p({1}, {1.0f}), buf({1}, 0.0f);
  SgdOptions o{0.1f, 0.9f, 0.0f};
  sgdStep(p, Tensor({1}, {1.0f}), buf, o);
  EXPECT_FLOAT_EQ(buf[0], 1.0f);
  EXPECT_FLOAT_EQ(p[0], 0.9f);
  sgdStep(p, Tensor({1}, {2.0f}), buf, o);
  EXPECT_FLOAT_EQ(buf[0], 0.9f * 1.0f + 2.0f);
  EXPECT_FLOAT_EQ(p[0], 0.9f - 0.1f * 2.9f);
  EXPECT_THROW(sgdStep(p, Tensor({1}, {1.0f}), {}, o), std::invalid_argument);
}

TEST(AdamW, TwoStepsMatchHandComputation) {
  AdamWOptions o{0.1f, 0.9f, 0.99f, 1e-8f, 0.1f};
  Tensor p({2}, {1.0f, -1.0f}), m({2}, 0.0f), v({2}, 0.0f);
  double ep[2] = {1.0, -1.0}, em[2] = {0, 0}, ev[2] = {0, 0};
  const double grads[2][2] = {{0.5, -2.0}, {-1.0, 0.1}};
  for (int step = 1; step <= 2; ++step) {
    Tensor g({2}, {float(grads[step - 1][0]), float(grads[step - 1][1])});
    adamwStep(p, g, m, v, step, o);
    for (int i = 0; i < 2; ++i) {
      double gi = grads[step - 1][i];
      ep[i] *= 1.0 - 0.1 * 0.1;
      em[i] = 0.9 * em[i] + 0.1 * gi;
      ev[i] = 0.99 * ev[i] + 0.01 * gi * gi;
      double mhat = em[i] / (1.0 - std::pow(0.9, step));
      double vhat = ev[i] / (1.0 - std::pow(0.99, step));
      ep[i] -= 0.1 * mhat / (std::sqrt(vhat) + 1e-8);
      EXPECT_NEAR(m[i], em[i], 1e-6);
      EXPECT_NEAR(v[i], ev[i], 1e-6);
      EXPECT_NEAR(p[i], ep[i], 1e-6) << "step " << step << " element " << i;
    }
  }
  // The first step moves every parameter by about lr (|mhat / sqrt(vhat)|
  // is 1), after decay.
  Tensor q({1}, {0.0f}), mq({1}, 0.0f), vq({1}, 0.0f);
  adamwStep(q, Tensor({1}, {3.0f}), mq, vq, 1, o);
  EXPECT_NEAR(q[0], -0.1, 1e-6);
  EXPECT_THROW(adamwStep(q, Tensor({1}, {3.0f}), mq, vq, 0, o),
               std::invalid_argument);
}

TEST(LossScaling, UnscaleDividesAndFlagsNonFinite) {
  Tensor g({3}, {1024.0f, -512.0f, 3.0f});
  EXPECT_FALSE(unscaleGradient(g, 1024.0f));
  EXPECT_FLOAT_EQ(g[0], 1.0f);
  EXPECT_FLOAT_EQ(g[1], -0.5f);
  EXPECT_FLOAT_EQ(g[2], 3.0f / 1024.0f);
  float inf = std::numeric_limits<float>::infinity();
  Tensor over({2}, {inf, 2.0f});
  EXPECT_TRUE(unscaleGradient(over, 2.0f));
  Tensor nan({2}, {1.0f, std::nanf("")});
  EXPECT_TRUE(unscaleGradient(nan, 2.0f));
  // A scale that is no scale is an error, not a silent NaN.
  EXPECT_THROW(unscaleGradient(g, 0.0f), std::invalid_argument);
  EXPECT_THROW(unscaleGradient(g, inf), std::invalid_argument);
}

} // namespace
