//===- LossTest.cpp - Softmax cross-entropy -------------------------------===//

#include "cleave/runtime/kernels/Loss.h"

#include "GradCheck.h"

#include <cmath>

using namespace cleave::kernels;
using namespace cleave::kernels::test;

namespace {

TEST(CrossEntropy, IsTheMeanOverCountedLabels) {
  Tensor logits = randomTensor({2, 3, 4}, 1, -2.0f, 2.0f);
  IndexTensor labels({2, 3}, {0, 3, -100, 2, 1, -100});
  Tensor loss = poisoned(Shape{});
  crossEntropy(logits, labels, -100, loss);
  double total = 0;
  int count = 0;
  for (int64_t r = 0; r < 6; ++r) {
    if (labels[r] == -100)
      continue;
    double sum = 0;
    for (int64_t c = 0; c < 4; ++c)
      sum += std::exp(double(logits[r * 4 + c]));
    total += std::log(sum) - logits[r * 4 + labels[r]];
    ++count;
  }
  EXPECT_NEAR(loss[0], total / count, 1e-6);

  // Uniform logits: log(C).
  Tensor flat({1, 8}, 0.0f);
  IndexTensor one({1}, {5});
  crossEntropy(flat, one, -100, loss);
  EXPECT_NEAR(loss[0], std::log(8.0), 1e-6);

  IndexTensor ignored({2, 3}, -1);
  crossEntropy(logits, ignored, -1, loss);
  EXPECT_EQ(loss[0], 0.0f);
  IndexTensor bad({2, 3}, 4);
  EXPECT_THROW(crossEntropy(logits, bad, -100, loss), std::invalid_argument);
}

TEST(CrossEntropy, GradientMatchesFiniteDifferences) {
  Tensor logits = randomTensor({3, 2, 5}, 2, -2.0f, 2.0f);
  IndexTensor labels({3, 2}, {4, 0, 7, 2, 2, 1});
  Tensor loss = poisoned(Shape{});
  GradCheck gc([&] { crossEntropy(logits, labels, 7, loss); }, {&loss});
  Tensor dLogits = poisoned(logits.shape());
  crossEntropyBackward(logits, labels, 7, gc.outGrad(), dLogits);
  EXPECT_TRUE(gc.check(logits, dLogits));
  for (int64_t c = 0; c < 5; ++c)
    EXPECT_EQ(dLogits[2 * 5 + c], 0.0f) << "an ignored row has no gradient";
}

} // namespace
