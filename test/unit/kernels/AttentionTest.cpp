//===- AttentionTest.cpp - Softmax and rope -------------------------------===//

#include "cleave/runtime/kernels/Attention.h"

#include "GradCheck.h"

#include <cmath>

using namespace cleave::kernels;
using namespace cleave::kernels::test;

namespace {

TEST(Softmax, MatchesReferenceAlongEveryAxis) {
  Tensor x = randomTensor({2, 3, 4}, 1, -3.0f, 3.0f);
  for (int64_t axis = 0; axis < 3; ++axis) {
    Tensor out = poisoned(x.shape()), expected = poisoned(x.shape());
    softmax(x, axis, false, out);
    for (int64_t i = 0; i < x.numElements(); ++i) {
      Shape idx = unravel(i, x.shape());
      double sum = 0;
      for (int64_t j = 0; j < x.shape()[axis]; ++j) {
        Shape other = idx;
        other[axis] = j;
        sum += std::exp(double(x[(other[0] * 3 + other[1]) * 4 + other[2]]));
      }
      expected[i] = float(std::exp(double(x[i])) / sum);
    }
    EXPECT_TRUE(allClose(out, expected, 1e-5, 1e-7)) << "axis " << axis;
  }
}

TEST(Softmax, CausalMasksKeysAfterTheQuery) {
  // Two queries over four keys (two cached): query 0 sees keys 0..2,
  // query 1 sees all four.
  Tensor x({1, 2, 4}, {0, 0, 0, 5, 1, 1, 1, 1});
  Tensor out = poisoned({1, 2, 4});
  softmax(x, 2, true, out);
  EXPECT_TRUE(allClose(out, Tensor({1, 2, 4}, {1.0f / 3, 1.0f / 3, 1.0f / 3, 0,
                                               0.25f, 0.25f, 0.25f, 0.25f})));
  // Square: lower-triangular; with more queries than keys the first
  // queries see nothing and get zeros.
  Tensor sq({3, 2}, 0.0f), sqOut = poisoned({3, 2});
  softmax(sq, 1, true, sqOut);
  EXPECT_EQ(sqOut.values(), (std::vector<float>{0, 0, 1, 0, 0.5f, 0.5f}));
  EXPECT_THROW(softmax(x, 1, true, out), std::invalid_argument);
}

TEST(Softmax, QueryBlocksOfASequenceMaskLikeTheWholeSequence) {
  // Context parallelism: 8 queries over 8 keys, cut into 4 blocks of 2
  // queries that each see all 8 keys; block g's rows equal rows 2g, 2g + 1
  // of the whole causal softmax when shifted by g * 2 + 8 - 4 * 2.
  Tensor whole = randomTensor({2, 8, 8}, 5, -3.0f, 3.0f);
  Tensor expected = poisoned(whole.shape());
  softmax(whole, 2, true, expected);
  for (int64_t g = 0; g < 4; ++g) {
    Tensor block({2, 2, 8}, 0.0f), out = poisoned({2, 2, 8});
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t q = 0; q < 2; ++q)
        for (int64_t k = 0; k < 8; ++k)
          block[(b * 2 + q) * 8 + k] = whole[(b * 8 + g * 2 + q) * 8 + k];
    softmax(block, 2, true, out, /*causalShift=*/g * 2);
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t q = 0; q < 2; ++q)
        for (int64_t k = 0; k < 8; ++k)
          EXPECT_EQ(out[(b * 2 + q) * 8 + k],
                    expected[(b * 8 + g * 2 + q) * 8 + k])
              << "block " << g << " query " << q << " key " << k;
  }
  // Zig-zag blocks of 2 devices (4 chunks of 2): device g's 4 queries are
  // the whole's rows at RowOffsets::zigzag's places (0 1 6 7 and 2 3 4 5).
  for (int64_t g = 0; g < 2; ++g) {
    RowOffsets place = RowOffsets::zigzag(4, g, 2);
    Tensor block({2, 4, 8}, 0.0f), out = poisoned({2, 4, 8});
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t q = 0; q < 4; ++q)
        for (int64_t k = 0; k < 8; ++k)
          block[(b * 4 + q) * 8 + k] = whole[(b * 8 + place(q)) * 8 + k];
    softmax(block, 2, true, out, place);
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t q = 0; q < 4; ++q)
        for (int64_t k = 0; k < 8; ++k)
          EXPECT_EQ(out[(b * 4 + q) * 8 + k],
                    expected[(b * 8 + place(q)) * 8 + k])
              << "zig-zag block " << g << " query " << q << " key " << k;
  }
}

TEST(Softmax, GradientsMatchFiniteDifferences) {
  for (int64_t axis = 0; axis < 3; ++axis) {
    Tensor x = randomTensor({2, 3, 4}, 2, -2.0f, 2.0f), y = poisoned(x.shape()),
           dx(x.shape());
    GradCheck gc([&] { softmax(x, axis, false, y); }, {&y});
    softmaxBackward(y, gc.outGrad(), axis, dx);
    EXPECT_TRUE(gc.check(x, dx)) << "axis " << axis;
  }
  Tensor x = randomTensor({2, 3, 5}, 3, -2.0f, 2.0f), y = poisoned(x.shape()),
         dx(x.shape());
  GradCheck gc([&] { softmax(x, 2, true, y); }, {&y});
  softmaxBackward(y, gc.outGrad(), 2, dx);
  EXPECT_TRUE(gc.check(x, dx));
}

TEST(Rope, RotatesHalvesByPositionAngles) {
  const double theta = 100.0;
  const int64_t offset = 3;
  Tensor x = randomTensor({2, 3, 2, 4}, 4), out = poisoned(x.shape()),
         expected = poisoned(x.shape());
  rope(x, theta, offset, out);
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t s = 0; s < 3; ++s)
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t i = 0; i < 2; ++i) {
          int64_t base = ((b * 3 + s) * 2 + h) * 4;
          double angle = (s + offset) * std::pow(theta, -2.0 * i / 4);
          double lo = x[base + i], hi = x[base + i + 2];
          expected[base + i] = lo * std::cos(angle) - hi * std::sin(angle);
          expected[base + i + 2] = hi * std::cos(angle) + lo * std::sin(angle);
        }
  EXPECT_TRUE(allClose(out, expected, 1e-5, 1e-6));
  // Position 0 (offset 0, first token) is the identity.
  Tensor first({1, 1, 1, 4}, {1, 2, 3, 4}), firstOut = poisoned({1, 1, 1, 4});
  rope(first, theta, 0, firstOut);
  EXPECT_EQ(firstOut.values(), first.values());
}

TEST(Rope, GradientIsTheInverseRotation) {
  Tensor x = randomTensor({1, 4, 2, 6}, 5), y = poisoned(x.shape()),
         dx = poisoned(x.shape());
  GradCheck gc([&] { rope(x, 10000.0, 2, y); }, {&y});
  ropeBackward(gc.outGrad(), 10000.0, 2, dx);
  EXPECT_TRUE(gc.check(x, dx));
  // And it undoes the forward.
  Tensor back = poisoned(x.shape());
  ropeBackward(y, 10000.0, 2, back);
  EXPECT_TRUE(allClose(back, x, 1e-5, 1e-6));
}

TEST(Rope, ZigzagBlocksRotateByTheirPlaceInTheSequence) {
  // 2 devices over 8 positions: device 1's zig-zag block holds positions
  // 2 3 4 5 in its rows 0-3, device 0's 0 1 6 7.
  Tensor whole = randomTensor({1, 8, 2, 4}, 9), wholeOut = poisoned(whole.shape());
  rope(whole, 10000.0, 0, wholeOut);
  for (int64_t g = 0; g < 2; ++g) {
    RowOffsets place = RowOffsets::zigzag(4, g, 2);
    Tensor block({1, 4, 2, 4}, 0.0f), out = poisoned({1, 4, 2, 4});
    for (int64_t r = 0; r < 4; ++r)
      for (int64_t e = 0; e < 8; ++e)
        block[r * 8 + e] = whole[place(r) * 8 + e];
    rope(block, 10000.0, place, out);
    for (int64_t r = 0; r < 4; ++r)
      for (int64_t e = 0; e < 8; ++e)
        EXPECT_EQ(out[r * 8 + e], wholeOut[place(r) * 8 + e])
            << "device " << g << " row " << r;
  }
}

} // namespace
