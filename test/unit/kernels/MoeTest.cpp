//===- MoeTest.cpp - MoE routing, dispatch and combine --------------------===//

#include "cleave/runtime/kernels/Moe.h"

#include "GradCheck.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

using namespace cleave::kernels;
using namespace cleave::kernels::test;

namespace {

/// Router logits whose experts are at least 0.4 apart in every row, so a
/// finite-difference step never changes the top-k choice.
Tensor separatedLogits(int64_t tokens, int64_t experts, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Tensor t = poisoned({tokens, experts});
  std::vector<int> order(experts);
  for (int64_t r = 0; r < tokens; ++r) {
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    for (int64_t e = 0; e < experts; ++e)
      t[r * experts + e] = 0.4f * order[e] - 1.0f +
                           0.1f * std::uniform_real_distribution<float>()(rng);
  }
  return t;
}

TEST(MoeGate, PicksTopKProbabilities) {
  Tensor logits({2, 4}, {1, 3, 2, 0, 0, 0, 0, 0});
  Tensor w = poisoned({2, 2});
  IndexTensor idx({2, 2});
  moeGate(logits, 2, false, w, idx);
  double z = std::exp(1.0) + std::exp(3.0) + std::exp(2.0) + 1.0;
  EXPECT_EQ(idx.values(), (std::vector<int64_t>{1, 2, 0, 1}))
      << "descending probability, ties to the lower index";
  EXPECT_NEAR(w[0], std::exp(3.0) / z, 1e-6);
  EXPECT_NEAR(w[1], std::exp(2.0) / z, 1e-6);
  EXPECT_NEAR(w[2], 0.25, 1e-6);
  moeGate(logits, 2, true, w, idx);
  EXPECT_NEAR(w[0], std::exp(3.0) / (std::exp(3.0) + std::exp(2.0)), 1e-6);
  EXPECT_NEAR(w[0] + w[1], 1.0, 1e-6);
  EXPECT_NEAR(w[2], 0.5, 1e-6);
}

TEST(MoeGate, GradientMatchesFiniteDifferences) {
  for (bool renormalize : {false, true}) {
    Tensor logits = separatedLogits(3, 5, 1);
    Tensor w = poisoned({3, 2});
    IndexTensor idx({3, 2});
    GradCheck gc([&] { moeGate(logits, 2, renormalize, w, idx); }, {&w});
    Tensor dLogits = poisoned(logits.shape());
    moeGateBackward(logits, idx, renormalize, gc.outGrad(), dLogits);
    EXPECT_TRUE(gc.check(logits, dLogits)) << "renormalize " << renormalize;
    // graph.moe_gate_grad's form recomputes the same choice.
    Tensor again = poisoned(logits.shape());
    moeGateBackward(logits, 2, renormalize, gc.outGrad(), again);
    EXPECT_EQ(again.values(), dLogits.values());
  }
}

TEST(MoeSlots, FirstComeFirstServedUpToCapacity) {
  IndexTensor idx({3, 2}, {0, 1, 0, 2, 0, 1});
  std::vector<int64_t> slots(6);
  assignExpertSlots(idx, 3, 2, slots.data());
  EXPECT_EQ(slots, (std::vector<int64_t>{0, 0, 1, 0, -1, 1}));
  IndexTensor bad({1, 1}, {3});
  EXPECT_THROW(assignExpertSlots(bad, 3, 2, slots.data()),
               std::invalid_argument);
}

TEST(MoeDispatchCombine, RouteTokensThroughSlots) {
  // Three tokens of width 2; token 2's first choice overflows expert 0.
  Tensor x({3, 2}, {1, 2, 3, 4, 5, 6});
  IndexTensor idx({3, 2}, {0, 1, 0, 2, 0, 1});
  Tensor buffers = poisoned({3, 2, 2});
  moeDispatch(x, idx, 3, 2, buffers);
  EXPECT_EQ(buffers.values(), (std::vector<float>{1, 2, 3, 4,    // expert 0
                                                  1, 2, 5, 6,    // expert 1
                                                  3, 4, 0, 0})); // expert 2

  Tensor y = randomTensor({3, 2, 2}, 2);
  Tensor w({3, 2}, {0.5f, 0.25f, 1.0f, 2.0f, 3.0f, 4.0f});
  Tensor out = poisoned({3, 2});
  moeCombine(y, w, idx, out);
  auto at = [&](int64_t e, int64_t s, int64_t h) {
    return y[(e * 2 + s) * 2 + h];
  };
  for (int64_t h = 0; h < 2; ++h) {
    EXPECT_FLOAT_EQ(out[h], 0.5f * at(0, 0, h) + 0.25f * at(1, 0, h));
    EXPECT_FLOAT_EQ(out[2 + h], 1.0f * at(0, 1, h) + 2.0f * at(2, 0, h));
    EXPECT_FLOAT_EQ(out[4 + h], 4.0f * at(1, 1, h)) << "dropped choice";
  }
}

TEST(MoeDispatchCombine, GradientsMatchFiniteDifferences) {
  IndexTensor idx({4, 2}, {0, 1, 2, 0, 0, 1, 0, 2});
  Tensor x = randomTensor({4, 3}, 3), buffers = poisoned({3, 2, 3});
  GradCheck gd([&] { moeDispatch(x, idx, 3, 2, buffers); }, {&buffers});
  Tensor dx = poisoned(x.shape());
  moeDispatchBackward(gd.outGrad(), idx, dx);
  EXPECT_TRUE(gd.check(x, dx));

  Tensor y = randomTensor({3, 2, 3}, 4), w = randomTensor({4, 2}, 5);
  Tensor out = poisoned({4, 3});
  GradCheck gc([&] { moeCombine(y, w, idx, out); }, {&out});
  Tensor dy = poisoned(y.shape()), dw = poisoned(w.shape());
  moeCombineBackward(y, w, idx, gc.outGrad(), dy, dw);
  EXPECT_TRUE(gc.check(y, dy));
  EXPECT_TRUE(gc.check(w, dw));
  EXPECT_EQ(dw[6], 0.0f) << "token 3's first choice was dropped";
}

} // namespace
