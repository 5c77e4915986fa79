//===- ElementwiseOpsTest.cpp - Pointwise ops, CUDA against the CPU -------===//
//
// Binary ops over every broadcasting pattern the layout merging has to get
// right, each unary op and its gradient, dropout's mask, where, compare,
// broadcast_to, accumulate and scale. Sizes such as 4097 leave a tail after
// the float4 part and a partial last block.
//
// The harness counts two equal infinities as a mismatch (their difference
// is NaN), so inputs keep every result finite.
//
//===----------------------------------------------------------------------===//

#include "CudaOpCase.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

using namespace cleave::test;

namespace {

using Shape = std::vector<int64_t>;

const std::vector<std::string> kArithmetic = {"graph.add", "graph.sub",
                                              "graph.mul", "graph.div",
                                              "graph.max", "graph.min"};

int64_t count(const Shape &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// Random multiples of 1/levels in [-1, 1]: many exact ties.
std::vector<float> quantized(int64_t n, uint64_t seed, float levels = 4.0f) {
  std::vector<float> v = randomFloats(n, seed);
  for (float &x : v)
    x = std::round(x * levels) / levels;
  return v;
}

void expectBinary(const std::string &op, const Shape &lhs, const Shape &rhs,
                  const Shape &out) {
  SCOPED_TRACE(op);
  OpCase t(op);
  t.f32(lhs, 1);
  t.f32(rhs, 2);
  t.output(out);
  t.expectMatch();
}

void expectEveryArithmeticOp(const Shape &lhs, const Shape &rhs,
                             const Shape &out) {
  for (const std::string &op : kArithmetic)
    expectBinary(op, lhs, rhs, out);
}

void expectUnary(const std::string &op, const Shape &shape, float lo,
                 float hi) {
  SCOPED_TRACE(op);
  OpCase t(op);
  t.f32(shape, 3, lo, hi);
  t.output(shape);
  t.expectMatch();
}

void expectActivationGrad(const std::string &kind, const Shape &shape,
                          std::vector<float> input) {
  SCOPED_TRACE(kind);
  OpCase t("graph.activation_grad");
  t.f32(shape, std::move(input));
  t.f32(shape, 5);
  t.output(shape);
  t.setString("kind", kind);
  t.expectMatch();
}

} // namespace

//===----------------------------------------------------------------------===//
// Binary ops
//===----------------------------------------------------------------------===//

TEST_F(CudaOps, BinarySameShapeOddSizes) {
  expectEveryArithmeticOp({4097}, {4097}, {4097});
  expectEveryArithmeticOp({10, 100}, {10, 100}, {10, 100});
  expectEveryArithmeticOp({3}, {3}, {3});
}

TEST_F(CudaOps, BinaryBroadcastsRows) {
  expectEveryArithmeticOp({4, 8}, {8}, {4, 8});
  expectEveryArithmeticOp({8}, {4, 8}, {4, 8});
  expectEveryArithmeticOp({129, 33}, {1, 33}, {129, 33});
}

TEST_F(CudaOps, BinaryBroadcastsColumns) {
  expectEveryArithmeticOp({33, 17}, {33, 1}, {33, 17});
  expectEveryArithmeticOp({33, 1}, {33, 17}, {33, 17});
}

TEST_F(CudaOps, BinaryBroadcastsBothOperands) {
  expectEveryArithmeticOp({5, 1, 7}, {1, 6, 1}, {5, 6, 7});
  expectEveryArithmeticOp({65, 1}, {1, 63}, {65, 63});
}

TEST_F(CudaOps, BinaryBroadcastsScalars) {
  expectEveryArithmeticOp({3, 129}, {}, {3, 129});
  expectEveryArithmeticOp({}, {3, 129}, {3, 129});
  expectEveryArithmeticOp({1}, {1000}, {1000});
  expectEveryArithmeticOp({}, {}, {});
}

TEST_F(CudaOps, BinaryBroadcastsHighRank) {
  // Nothing merges: five dimensions, each broadcast in one operand.
  expectEveryArithmeticOp({2, 1, 3, 1, 5}, {4, 1, 6, 1}, {2, 4, 3, 6, 5});
  // Leading dimensions merge with each other, the inner ones do not.
  expectEveryArithmeticOp({2, 3, 4, 5, 6}, {1, 1, 4, 1, 6}, {2, 3, 4, 5, 6});
  expectEveryArithmeticOp({2, 1, 2, 1, 2, 1, 2, 3}, {1, 2, 1, 2, 1, 2, 1, 3},
                          {2, 2, 2, 2, 2, 2, 2, 3});
}

TEST_F(CudaOps, BinaryLargeBroadcast) {
  expectEveryArithmeticOp({256, 1000}, {1000}, {256, 1000});
}

TEST_F(CudaOps, MaxAndMinTies) {
  for (const std::string op : {"graph.max", "graph.min"}) {
    SCOPED_TRACE(op);
    OpCase t(op);
    t.f32({64, 65}, quantized(64 * 65, 7));
    t.f32({65}, quantized(65, 8));
    t.output({64, 65});
    t.expectMatch(0.0, 0.0);
  }
}

TEST_F(CudaOps, PowPositiveBases) {
  OpCase t("graph.pow");
  t.f32({4097}, 1, 0.25f, 4.0f);
  t.f32({4097}, 2, -3.0f, 3.0f);
  t.output({4097});
  t.expectMatch();
}

TEST_F(CudaOps, PowBroadcastExponent) {
  OpCase t("graph.pow");
  t.f32({64, 33}, 1, 0.5f, 2.0f);
  t.f32({33}, 2, -2.0f, 2.0f);
  t.output({64, 33});
  t.expectMatch();
}

TEST_F(CudaOps, PowNegativeBasesIntegerExponents) {
  // Integer exponents keep the sign; others give NaN on both backends.
  std::vector<float> exponents = {0.0f, 1.0f, 2.0f, 3.0f, -1.0f, -2.0f, 0.5f};
  OpCase t("graph.pow");
  t.f32({100, 1}, 1, -2.0f, -0.5f);
  t.f32({7}, exponents);
  t.output({100, 7});
  t.expectMatch();
}

//===----------------------------------------------------------------------===//
// Unary ops and activation gradients
//===----------------------------------------------------------------------===//

TEST_F(CudaOps, UnaryOpsOnAnyReal) {
  for (const std::string op :
       {"graph.neg", "graph.exp", "graph.relu", "graph.tanh", "graph.erf",
        "graph.sigmoid", "graph.silu"})
    expectUnary(op, {4097}, -3.0f, 3.0f);
}

TEST_F(CudaOps, UnaryOpsOnPositiveReals) {
  for (const std::string op : {"graph.log", "graph.sqrt", "graph.rsqrt"})
    expectUnary(op, {4097}, 0.01f, 4.0f);
}

TEST_F(CudaOps, UnaryOpsSaturate) {
  // fastExp clamps its argument: sigmoid and silu of large magnitudes.
  for (const std::string op : {"graph.sigmoid", "graph.silu", "graph.tanh"})
    expectUnary(op, {1000}, -100.0f, 100.0f);
}

TEST_F(CudaOps, UnaryOddSizes) {
  expectUnary("graph.sigmoid", {1}, -3.0f, 3.0f);
  expectUnary("graph.silu", {7}, -3.0f, 3.0f);
  expectUnary("graph.exp", {1000, 999}, -3.0f, 3.0f);
}

TEST_F(CudaOps, GeluErfForm) {
  OpCase t("graph.gelu");
  t.f32({4097}, 1, -4.0f, 4.0f);
  t.output({4097});
  t.setBool("approximate_tanh", false);
  t.expectMatch();
}

TEST_F(CudaOps, GeluErfFormByDefault) {
  OpCase t("graph.gelu");
  t.f32({33, 31}, 1, -4.0f, 4.0f);
  t.output({33, 31});
  t.expectMatch();
}

TEST_F(CudaOps, GeluTanhForm) {
  OpCase t("graph.gelu");
  t.f32({4097}, 1, -4.0f, 4.0f);
  t.output({4097});
  t.setBool("approximate_tanh", true);
  t.expectMatch();
}

TEST_F(CudaOps, GeluTanhFormSaturates) {
  OpCase t("graph.gelu");
  t.f32({1000}, 2, -100.0f, 100.0f);
  t.output({1000});
  t.setBool("approximate_tanh", true);
  t.expectMatch();
}

TEST_F(CudaOps, ActivationGradEveryKind) {
  for (const std::string kind :
       {"relu", "gelu", "gelu_tanh", "silu", "sigmoid", "tanh", "erf"})
    expectActivationGrad(kind, {4097}, randomFloats(4097, 4, -3.0f, 3.0f));
}

TEST_F(CudaOps, ActivationGradAtZerosAndTies) {
  // relu's derivative at 0 is 0; quantized inputs hit 0 often.
  for (const std::string kind : {"relu", "silu", "gelu_tanh"})
    expectActivationGrad(kind, {31, 33}, quantized(31 * 33, 6));
}

TEST_F(CudaOps, ActivationGradSaturates) {
  for (const std::string kind : {"silu", "sigmoid", "gelu_tanh", "relu"})
    expectActivationGrad(kind, {1000}, randomFloats(1000, 9, -60.0f, 60.0f));
}

//===----------------------------------------------------------------------===//
// Dropout
//===----------------------------------------------------------------------===//

namespace {

/// Inputs in [1, 2), so a zero in the result is a dropped element: a mask
/// that differs from the CPU's in any element fails.
void expectDropout(const Shape &shape, double ratio, int64_t seed) {
  SCOPED_TRACE("ratio " + std::to_string(ratio) + ", seed " +
               std::to_string(seed));
  OpCase t("graph.dropout");
  t.f32(shape, 11, 1.0f, 2.0f);
  t.output(shape);
  t.setFloat("ratio", ratio);
  t.setInt("seed", seed);
  t.expectMatch(0.0, 0.0);
}

} // namespace

TEST_F(CudaOps, DropoutMaskMatchesOnLargeTensor) {
  expectDropout({1000, 999}, 0.5, 1234);
}

TEST_F(CudaOps, DropoutRatiosAndSeeds) {
  expectDropout({4097}, 0.1, -7);
  expectDropout({4097}, 0.9, 0);
  expectDropout({33, 65}, 1.0 / 3.0, 987654321987654321);
  expectDropout({7}, 0.5, 42);
}

TEST_F(CudaOps, DropoutRatioZeroKeepsAll) { expectDropout({4097}, 0.0, 5); }

TEST_F(CudaOps, DropoutSeedDefaultsToZero) {
  OpCase t("graph.dropout");
  t.f32({4097}, 11, 1.0f, 2.0f);
  t.output({4097});
  t.setFloat("ratio", 0.25);
  t.expectMatch(0.0, 0.0);
}

TEST_F(CudaOps, DropoutInPlace) {
  OpCase t("graph.dropout");
  int32_t x = t.f32({4097}, 12, 1.0f, 2.0f);
  t.outputIsInput(x);
  t.setFloat("ratio", 0.3);
  t.setInt("seed", 77);
  t.expectMatch(0.0, 0.0);
}

//===----------------------------------------------------------------------===//
// where, compare, broadcast_to
//===----------------------------------------------------------------------===//

namespace {

std::vector<uint8_t> randomMask(int64_t n, uint64_t seed) {
  std::vector<float> r = randomFloats(n, seed);
  std::vector<uint8_t> m(n);
  // Any non-zero byte is true; use 2 as well as 1.
  for (int64_t i = 0; i < n; ++i)
    m[i] = r[i] < 0.0f ? 0 : (r[i] < 0.5f ? 1 : 2);
  return m;
}

void expectWhere(const Shape &condition, const Shape &lhs, const Shape &rhs,
                 const Shape &out) {
  OpCase t("graph.where");
  t.mask(condition, randomMask(count(condition), 13));
  t.f32(lhs, 14);
  t.f32(rhs, 15);
  t.output(out);
  t.expectMatch(0.0, 0.0);
}

} // namespace

TEST_F(CudaOps, WhereSameShapes) {
  expectWhere({4097}, {4097}, {4097}, {4097});
}

TEST_F(CudaOps, WhereBroadcastsEveryOperand) {
  expectWhere({4, 1}, {4, 8}, {8}, {4, 8});
  expectWhere({8}, {4, 1}, {}, {4, 8});
  expectWhere({}, {3, 5}, {3, 5}, {3, 5});
  expectWhere({2, 1, 7}, {1, 5, 1}, {2, 5, 7}, {2, 5, 7});
  expectWhere({64, 1000}, {1000}, {64, 1}, {64, 1000});
}

namespace {

void expectCompare(const std::string &predicate, const Shape &lhs,
                   std::vector<float> lhsValues, const Shape &rhs,
                   std::vector<float> rhsValues, const Shape &out) {
  SCOPED_TRACE(predicate);
  OpCase t("graph.compare");
  t.f32(lhs, std::move(lhsValues));
  t.f32(rhs, std::move(rhsValues));
  t.output(out, cleave::plan::BOOL);
  t.setString("predicate", predicate);
  t.expectMatch();
}

const std::vector<std::string> kPredicates = {"eq", "ne", "lt",
                                              "le", "gt", "ge"};

} // namespace

TEST_F(CudaOps, CompareEveryPredicateWithTies) {
  for (const std::string &p : kPredicates) {
    expectCompare(p, {37, 65}, quantized(37 * 65, 16), {65}, quantized(65, 17),
                  {37, 65});
    expectCompare(p, {4097}, quantized(4097, 18), {4097}, quantized(4097, 19),
                  {4097});
  }
}

TEST_F(CudaOps, CompareNonFiniteValues) {
  // The sign of a - b decides: inf - inf and anything with NaN are NaN,
  // for which only "ne" holds.
  float inf = std::numeric_limits<float>::infinity();
  float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> a = {inf, inf, -inf, nan, 1.0f, 0.0f, -0.0f, 2.0f};
  std::vector<float> b = {inf, 1.0f, inf, 1.0f, nan, -0.0f, 0.0f, 2.0f};
  for (const std::string &p : kPredicates)
    expectCompare(p, {8}, a, {8}, b, {8});
}

TEST_F(CudaOps, BroadcastToShapes) {
  struct Case {
    Shape in, out;
  };
  for (const Case &c : std::vector<Case>{{{8}, {4, 8}},
                                         {{3, 1, 5}, {2, 3, 4, 5}},
                                         {{}, {7}},
                                         {{1}, {1000}},
                                         {{4097}, {4097}},
                                         {{64, 1}, {64, 1000}}}) {
    OpCase t("graph.broadcast_to");
    t.f32(c.in, 20);
    t.output(c.out);
    t.expectMatch(0.0, 0.0);
  }
}

//===----------------------------------------------------------------------===//
// runtime.accumulate, runtime.scale
//===----------------------------------------------------------------------===//

TEST_F(CudaOps, AccumulateIntoFreshOutput) {
  OpCase t("runtime.accumulate");
  t.f32({4097}, 21);
  t.output({4097});
  t.expectMatch(0.0, 0.0);
}

TEST_F(CudaOps, AccumulateInPlaceDoubles) {
  OpCase t("runtime.accumulate");
  int32_t x = t.f32({33, 31}, 22);
  t.outputIsInput(x);
  t.expectMatch(0.0, 0.0);
}

TEST_F(CudaOps, AccumulateAcrossShapesOfOneSize) {
  OpCase t("runtime.accumulate");
  t.f32({8, 125}, 23);
  t.output({1000});
  t.expectMatch(0.0, 0.0);
}

TEST_F(CudaOps, ScaleOutOfPlace) {
  OpCase t("runtime.scale");
  t.f32({1000}, 24);
  t.output({1000});
  t.setFloat("factor", 0.37);
  t.expectMatch(0.0, 0.0);
}

TEST_F(CudaOps, ScaleInPlace) {
  OpCase t("runtime.scale");
  int32_t x = t.f32({4097}, 25);
  t.outputIsInput(x);
  t.setFloat("factor", -1.0 / 8.0);
  t.expectMatch(0.0, 0.0);
}
