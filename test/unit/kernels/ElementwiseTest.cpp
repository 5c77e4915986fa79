//===- ElementwiseTest.cpp - Elementwise kernels and gradients ------------===//

#include "cleave/runtime/kernels/Elementwise.h"

#include "GradCheck.h"

#include <cmath>
#include <limits>

using namespace cleave::kernels;
using namespace cleave::kernels::test;

namespace {

double reference(BinaryOp op, double a, double b) {
  switch (op) {
  case BinaryOp::Add:
    return a + b;
  case BinaryOp::Sub:
    return a - b;
  case BinaryOp::Mul:
    return a * b;
  case BinaryOp::Div:
    return a / b;
  case BinaryOp::Pow:
    return std::pow(a, b);
  case BinaryOp::Max:
    return std::max(a, b);
  case BinaryOp::Min:
    return std::min(a, b);
  }
  return 0;
}

const BinaryOp kBinaryOps[] = {BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul,
                               BinaryOp::Div, BinaryOp::Pow, BinaryOp::Max,
                               BinaryOp::Min};

// Shape pairs covering equal shapes, a trailing vector, a middle broadcast,
// both sides broadcasting, a scalar and a rank difference.
const std::pair<Shape, Shape> kBroadcastCases[] = {
    {{2, 3}, {2, 3}},       {{2, 3, 4}, {4}}, {{2, 3, 4}, {2, 1, 4}},
    {{2, 1, 4}, {3, 1}},    {{}, {2, 3}},     {{3, 1, 2}, {1, 5, 1}},
    {{1, 4}, {2, 3, 1, 1}}, {{2, 3}, {1}},
};

/// Positive bases for pow and bounded-away divisors for div.
Tensor operand(BinaryOp op, const Shape &shape, uint64_t seed, bool isRhs) {
  if (op == BinaryOp::Pow && !isRhs)
    return randomTensor(shape, seed, 0.5f, 2.0f);
  if (op == BinaryOp::Div && isRhs)
    return randomTensor(shape, seed, 0.5f, 2.0f);
  return randomTensor(shape, seed);
}

TEST(Binary, BroadcastsLikeNumpy) {
  for (BinaryOp op : kBinaryOps) {
    for (const auto &[ls, rs] : kBroadcastCases) {
      Tensor a = operand(op, ls, 1, false), b = operand(op, rs, 2, true);
      Shape os = broadcastShape(ls, rs);
      Tensor out = poisoned(os), expected = poisoned(os);
      binary(op, a, b, out);
      for (int64_t i = 0; i < expected.numElements(); ++i) {
        Shape idx = unravel(i, os);
        expected[i] = reference(op, a[broadcastOffset(idx, ls)],
                                b[broadcastOffset(idx, rs)]);
      }
      EXPECT_TRUE(allClose(out, expected))
          << shapeString(ls) << " op " << int(op) << " " << shapeString(rs);
    }
  }
}

TEST(Binary, RejectsShapesThatDoNotBroadcast) {
  Tensor a = poisoned({2, 3}), b = poisoned({4, 3}), out = poisoned({2, 3});
  EXPECT_THROW(binary(BinaryOp::Add, a, b, out), std::invalid_argument);
  Tensor c = poisoned({3});
  Tensor wrong = poisoned({3, 3});
  EXPECT_THROW(binary(BinaryOp::Add, a, c, wrong), std::invalid_argument);
}

TEST(Binary, GradientsMatchFiniteDifferences) {
  for (BinaryOp op : kBinaryOps) {
    for (const auto &[ls, rs] : kBroadcastCases) {
      Tensor a = operand(op, ls, 3, false), b = operand(op, rs, 4, true);
      Tensor out = poisoned(broadcastShape(ls, rs));
      GradCheck gc([&] { binary(op, a, b, out); }, {&out});
      Tensor da = poisoned(ls), db = poisoned(rs);
      binaryBackward(op, a, b, gc.outGrad(), da, db);
      EXPECT_TRUE(gc.check(a, da))
          << "lhs of op " << int(op) << " " << shapeString(ls) << ", "
          << shapeString(rs);
      EXPECT_TRUE(gc.check(b, db))
          << "rhs of op " << int(op) << " " << shapeString(ls) << ", "
          << shapeString(rs);
    }
  }
}

TEST(Binary, MaxAndMinSplitTiesAndSkipUnwantedGradients) {
  Tensor a({3}, {1.0f, 2.0f, 3.0f}), b({3}, {1.0f, 5.0f, 0.0f});
  Tensor g({3}, {2.0f, 2.0f, 2.0f}), da = poisoned({3}), db = poisoned({3});
  binaryBackward(BinaryOp::Max, a, b, g, da, db);
  EXPECT_EQ(da.values(), (std::vector<float>{1.0f, 0.0f, 2.0f}));
  EXPECT_EQ(db.values(), (std::vector<float>{1.0f, 2.0f, 0.0f}));
  binaryBackward(BinaryOp::Min, a, b, g, da, TensorRef());
  EXPECT_EQ(da.values(), (std::vector<float>{1.0f, 2.0f, 0.0f}));
}

TEST(Compare, IeeeComparisonsWithBroadcasting) {
  float inf = std::numeric_limits<float>::infinity(),
        nan = std::numeric_limits<float>::quiet_NaN();
  Tensor a({2, 3}, {inf, -inf, 1.0f, nan, 2.0f, -0.0f});
  Tensor b({3}, {inf, -inf, 1.0f});
  MaskTensor out({2, 3});
  compare(ComparePredicate::Eq, a, b, out);
  // inf == inf and -inf == -inf (a difference would be NaN); NaN equals
  // nothing; -0 == 1 is false.
  EXPECT_EQ(out.values(), (std::vector<uint8_t>{1, 1, 1, 0, 0, 0}));
  compare(ComparePredicate::Ne, a, b, out);
  EXPECT_EQ(out.values(), (std::vector<uint8_t>{0, 0, 0, 1, 1, 1}));
  compare(ComparePredicate::Ge, a, b, out);
  EXPECT_EQ(out.values(), (std::vector<uint8_t>{1, 1, 1, 0, 1, 0}));
  EXPECT_EQ(comparePredicate("lt"), ComparePredicate::Lt);
  EXPECT_THROW(comparePredicate("approx"), std::invalid_argument);
}

TEST(Where, SelectsAndRoutesGradients) {
  MaskTensor cond({2, 1}, {1, 0});
  Tensor a({3}, {1.0f, 2.0f, 3.0f}), b({2, 3}, {4, 5, 6, 7, 8, 9});
  Tensor out = poisoned({2, 3});
  where(cond, a, b, out);
  EXPECT_EQ(out.values(), (std::vector<float>{1, 2, 3, 7, 8, 9}));

  Tensor a2 = randomTensor({2, 3}, 5), b2 = randomTensor({3}, 6);
  MaskTensor c2({2, 3}, {1, 0, 1, 0, 0, 1});
  Tensor out2 = poisoned({2, 3});
  GradCheck gc([&] { where(c2, a2, b2, out2); }, {&out2});
  Tensor da = poisoned({2, 3}), db = poisoned({3});
  whereBackward(c2, gc.outGrad(), da, db);
  EXPECT_TRUE(gc.check(a2, da));
  EXPECT_TRUE(gc.check(b2, db));
}

const UnaryOp kUnaryOps[] = {
    UnaryOp::Neg,  UnaryOp::Exp,  UnaryOp::Log,     UnaryOp::Sqrt,
    UnaryOp::Rsqrt, UnaryOp::Relu, UnaryOp::Tanh,   UnaryOp::Erf,
    UnaryOp::Sigmoid, UnaryOp::Silu, UnaryOp::Gelu, UnaryOp::GeluTanh,
    UnaryOp::Sin,  UnaryOp::Cos,  UnaryOp::Atan,    UnaryOp::Floor};

double reference(UnaryOp op, double x) {
  switch (op) {
  case UnaryOp::Neg:
    return -x;
  case UnaryOp::Exp:
    return std::exp(x);
  case UnaryOp::Log:
    return std::log(x);
  case UnaryOp::Sqrt:
    return std::sqrt(x);
  case UnaryOp::Rsqrt:
    return 1.0 / std::sqrt(x);
  case UnaryOp::Relu:
    return x > 0 ? x : 0;
  case UnaryOp::Tanh:
    return std::tanh(x);
  case UnaryOp::Erf:
    return std::erf(x);
  case UnaryOp::Sigmoid:
    return 1.0 / (1.0 + std::exp(-x));
  case UnaryOp::Silu:
    return x / (1.0 + std::exp(-x));
  case UnaryOp::Gelu:
    return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
  case UnaryOp::GeluTanh:
    return 0.5 * x *
           (1.0 +
            std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
  case UnaryOp::Sin:
    return std::sin(x);
  case UnaryOp::Cos:
    return std::cos(x);
  case UnaryOp::Atan:
    return std::atan(x);
  case UnaryOp::Floor:
    return std::floor(x);
  }
  return 0;
}

/// Inputs in the op's domain, away from relu's kink.
Tensor unaryInput(UnaryOp op, uint64_t seed) {
  bool positive =
      op == UnaryOp::Log || op == UnaryOp::Sqrt || op == UnaryOp::Rsqrt;
  Tensor x = randomTensor({3, 7}, seed, positive ? 0.3f : -3.0f, 3.0f);
  if (op == UnaryOp::Relu)
    for (float &v : x.values())
      v = v >= 0 ? v + 0.05f : v - 0.05f;
  if (op == UnaryOp::Floor) // halfway between its steps
    for (float &v : x.values())
      v = std::floor(v) + 0.5f;
  return x;
}

TEST(Unary, MatchesReference) {
  for (UnaryOp op : kUnaryOps) {
    Tensor x = unaryInput(op, 11), out = poisoned(x.shape()),
           expected = poisoned(x.shape());
    unary(op, x, out);
    for (int64_t i = 0; i < x.numElements(); ++i)
      expected[i] = reference(op, x[i]);
    EXPECT_TRUE(allClose(out, expected, 2e-6, 2e-6)) << "op " << int(op);
  }
  // Known values: gelu(1) = 0.8413447, its tanh form 0.8411920.
  Tensor one({1}, {1.0f}), y = poisoned({1});
  unary(UnaryOp::Gelu, one, y);
  EXPECT_NEAR(y[0], 0.8413447f, 1e-6);
  unary(UnaryOp::GeluTanh, one, y);
  EXPECT_NEAR(y[0], 0.8411920f, 1e-6);
}

TEST(Unary, GradientsMatchFiniteDifferences) {
  for (UnaryOp op : kUnaryOps) {
    Tensor x = unaryInput(op, 12), out = poisoned(x.shape()),
           dx = poisoned(x.shape());
    GradCheck gc([&] { unary(op, x, out); }, {&out});
    unaryBackward(op, x, gc.outGrad(), dx);
    EXPECT_TRUE(gc.check(x, dx)) << "op " << int(op);
  }
}

TEST(Dropout, KeepsAboutOneMinusRatioAndScalesThem) {
  Tensor x({10000}, 1.0f), out = poisoned({10000});
  dropout(x, 0.25, 42, out);
  int kept = 0;
  for (float v : out.values()) {
    if (v != 0.0f) {
      ++kept;
      EXPECT_FLOAT_EQ(v, 1.0f / 0.75f);
    }
  }
  EXPECT_NEAR(kept / 10000.0, 0.75, 0.02);
  for (int64_t i = 0; i < 100; ++i)
    EXPECT_EQ(out[i] != 0.0f, dropoutKeeps(42, i, 0.25));

  // Another seed draws another mask; ratio 0 keeps everything unscaled.
  Tensor other = poisoned({10000});
  dropout(x, 0.25, 43, other);
  EXPECT_NE(out.values(), other.values());
  dropout(x, 0.0, 42, other);
  EXPECT_EQ(other.values(), x.values());
  EXPECT_THROW(dropout(x, 1.0, 42, other), std::invalid_argument);
}

TEST(Dropout, AnyBlockDrawsTheMaskOfTheWholeTensor) {
  Tensor x = randomTensor({4, 6, 5}, 3), whole = poisoned({4, 6, 5});
  dropout(x, 0.5, 9, whole);
  // The block [1:3, 2:6, 1:4] computed on its own.
  Shape offsets{1, 2, 1}, blockShape{2, 4, 3};
  Tensor block = poisoned(blockShape), blockOut = poisoned(blockShape);
  for (int64_t i = 0; i < block.numElements(); ++i) {
    Shape idx = unravel(i, blockShape);
    block[i] = x[((idx[0] + 1) * 6 + idx[1] + 2) * 5 + idx[2] + 1];
  }
  dropoutBlock(block, 0.5, 9, {4, 6, 5}, offsets, blockOut);
  for (int64_t i = 0; i < block.numElements(); ++i) {
    Shape idx = unravel(i, blockShape);
    EXPECT_EQ(blockOut[i],
              whole[((idx[0] + 1) * 6 + idx[1] + 2) * 5 + idx[2] + 1]);
  }
}

TEST(Dropout, GradientIsDropoutOfTheOutputGradient) {
  Tensor x = randomTensor({5, 8}, 4), out = poisoned({5, 8}),
         dx = poisoned({5, 8});
  GradCheck gc([&] { dropout(x, 0.3, 5, out); }, {&out});
  dropout(gc.outGrad(), 0.3, 5, dx);
  EXPECT_TRUE(gc.check(x, dx));
}

// The checker must be able to fail: a gradient off by a few percent in one
// element, or one of the wrong op, is rejected.
TEST(GradCheckMeta, RejectsWrongGradients) {
  Tensor a = randomTensor({3, 4}, 21), b = randomTensor({4}, 22);
  Tensor out = poisoned({3, 4});
  GradCheck gc([&] { binary(BinaryOp::Mul, a, b, out); }, {&out});
  Tensor da = poisoned({3, 4}), db = poisoned({4});
  binaryBackward(BinaryOp::Mul, a, b, gc.outGrad(), da, db);
  ASSERT_TRUE(gc.check(a, da));
  ASSERT_TRUE(gc.check(b, db));

  Tensor nudged = db;
  nudged[2] += 0.05f * (1.0f + std::fabs(nudged[2]));
  EXPECT_FALSE(gc.check(b, nudged));

  // The gradient of add is not that of mul.
  binaryBackward(BinaryOp::Add, a, b, gc.outGrad(), da, db);
  EXPECT_FALSE(gc.check(a, da));
  EXPECT_FALSE(gc.check(b, db));

  Tensor x = randomTensor({2, 5}, 23, 0.3f, 2.0f), y = poisoned({2, 5}),
         dx = poisoned({2, 5});
  GradCheck gu([&] { unary(UnaryOp::Gelu, x, y); }, {&y});
  unaryBackward(UnaryOp::GeluTanh, x, gu.outGrad(), dx);
  // Exact and tanh gelu differ by ~1e-3 in the gradient: too close to tell
  // here, but sqrt vs rsqrt is caught.
  unaryBackward(UnaryOp::Rsqrt, x, gu.outGrad(), dx);
  EXPECT_FALSE(gu.check(x, dx));
}

} // namespace
