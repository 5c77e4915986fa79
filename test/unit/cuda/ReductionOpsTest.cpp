//===- ReductionOpsTest.cpp - reduce_* and reduce_max_grad, CUDA vs CPU ---===//
//
// Every axis pattern the pass planner distinguishes: last axes (rows, of
// lengths that pick each lane-group width and the block kernel, split or
// not), leading axes (columns, split or not), middle axes, all axes,
// axes that are not neighbours (two passes), unit axes only, keepdims.
//
// Most inputs are multiples of 1/8 in [-1, 1], so every partial sum is
// exact in fp32 and the GPU's summation order gives the CPU's bits; a few
// cases use random floats with a tolerance for the reordered sums.
//
//===----------------------------------------------------------------------===//

#include "CudaOpCase.h"

#include "cleave/runtime/kernels/Reduction.h"

#include <cmath>
#include <string>
#include <vector>

using namespace cleave::test;

namespace {

using Shape = std::vector<int64_t>;

const std::vector<std::string> kReductions = {
    "graph.reduce_sum", "graph.reduce_mean", "graph.reduce_max"};

int64_t count(const Shape &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// Random multiples of 1/levels in [-1, 1].
std::vector<float> quantized(int64_t n, uint64_t seed, float levels = 8.0f) {
  std::vector<float> v = randomFloats(n, seed);
  for (float &x : v)
    x = std::round(x * levels) / levels;
  return v;
}

Shape reducedShape(const Shape &in, const Shape &axes, bool keepdims) {
  return cleave::kernels::reduceShape(in, axes, keepdims);
}

void expectReduce(const std::string &op, const Shape &shape, const Shape &axes,
                  bool keepdims, std::vector<float> values, double rtol,
                  double atol) {
  SCOPED_TRACE(op + (keepdims ? " (keepdims)" : ""));
  OpCase t(op);
  t.f32(shape, std::move(values));
  t.output(reducedShape(shape, axes, keepdims));
  // setInts adds nothing for an empty list; the attribute must exist.
  t.attr("axes");
  t.setInts("axes", axes);
  t.setBool("keepdims", keepdims);
  t.expectMatch(rtol, atol);
}

/// Every reduction over `axes` of exact-summing inputs: bit-identical.
void expectExact(const Shape &shape, const Shape &axes, bool keepdims = false,
                 uint64_t seed = 1) {
  for (const std::string &op : kReductions)
    expectReduce(op, shape, axes, keepdims, quantized(count(shape), seed), 0.0,
                 0.0);
}

/// Every reduction over `axes` of random floats: sums agree to rounding.
/// The CPU sums sequentially, so its error grows with the length: `atol`
/// is a few times what a sequential fp32 sum of that length carries.
void expectClose(const Shape &shape, const Shape &axes, double atol,
                 bool keepdims = false) {
  for (const std::string &op : kReductions)
    expectReduce(op, shape, axes, keepdims, randomFloats(count(shape), 2), 1e-5,
                 atol);
}

} // namespace

//===----------------------------------------------------------------------===//
// Last axes: rows
//===----------------------------------------------------------------------===//

TEST_F(CudaOps, ReduceLastAxisShortRows) {
  expectExact({5000, 3}, {1});  // 4 lanes per row
  expectExact({1000, 20}, {1}); // 8 lanes
  expectExact({500, 50}, {1});  // 16 lanes
}

TEST_F(CudaOps, ReduceLastAxisWarpRows) {
  expectExact({300, 1000}, {1});
  expectExact({300, 1000}, {1}, true);
  expectExact({2, 3, 129}, {2});
}

TEST_F(CudaOps, ReduceLastAxisBlockRows) {
  // Longer than a warp's share, too many rows to split.
  expectExact({600, 1500}, {1});
  // Few long rows: each is split into chunks and the partials reduced.
  expectExact({64, 1500}, {1});
  expectExact({7, 50000}, {1});
  expectExact({7, 50000}, {1}, true);
}

TEST_F(CudaOps, ReduceLastAxesMerge) {
  expectExact({9, 40, 25}, {1, 2});
  expectExact({9, 40, 25}, {1, 2}, true);
}

TEST_F(CudaOps, ReduceLastAxisRandomFloats) {
  expectClose({300, 1000}, {1}, 1e-4);
  expectClose({300, 1000}, {1}, 1e-4, true);
  expectClose({7, 50000}, {1}, 5e-3);
}

//===----------------------------------------------------------------------===//
// Leading axes: columns
//===----------------------------------------------------------------------===//

TEST_F(CudaOps, ReduceLeadingAxesBiasGradient) {
  // [B, S, H] -> [H]: few columns, many rows, split into chunks.
  expectExact({4, 64, 257}, {0, 1});
  expectExact({8, 512, 96}, {0, 1});
  expectExact({8, 512, 96}, {0, 1}, true);
}

TEST_F(CudaOps, ReduceLeadingAxisWideColumns) {
  // Enough columns for the GPU without a split.
  expectExact({50, 20000}, {0});
}

TEST_F(CudaOps, ReduceLeadingAxisNarrowColumns) {
  expectExact({4097, 2}, {0});
  expectExact({1000, 3}, {0});
  expectExact({100, 5}, {0}, true);
}

TEST_F(CudaOps, ReduceLeadingAxesRandomFloats) {
  expectClose({4, 64, 257}, {0, 1}, 1e-4);
  expectClose({8, 512, 96}, {0, 1}, 5e-4);
}

//===----------------------------------------------------------------------===//
// Middle, all, scattered and unit axes
//===----------------------------------------------------------------------===//

TEST_F(CudaOps, ReduceMiddleAxis) {
  expectExact({6, 100, 33}, {1});
  expectExact({3, 4097, 2}, {1});
  expectExact({6, 100, 33}, {1}, true);
  expectExact({2, 3, 4, 5, 6}, {1, 2});
  expectClose({6, 100, 33}, {1}, 1e-4);
}

TEST_F(CudaOps, ReduceAllAxes) {
  expectExact({3, 5}, {0, 1});
  expectExact({2, 3, 4}, {0, 1, 2}, true);
  expectExact({4097}, {0});
}

TEST_F(CudaOps, ReduceAllAxesLarge) {
  // One output: the rows are split across the GPU, then the partials.
  expectExact({1000, 999}, {0, 1});
  expectExact({1000, 999}, {1, 0}, true);
}

TEST_F(CudaOps, ReduceAllAxesRandomFloats) {
  expectClose({100, 1000}, {0, 1}, 1e-2);
}

TEST_F(CudaOps, ReduceScatteredAxes) {
  // Two reduced runs: two passes.
  expectExact({10, 20, 30}, {0, 2});
  expectExact({10, 20, 30}, {2, 0}, true);
  expectExact({4, 5, 6, 7}, {1, 3});
  expectExact({4, 5, 6, 7}, {0, 2}, true);
  // Three reduced runs.
  expectExact({3, 4, 5, 6, 7, 2}, {0, 2, 4});
}

TEST_F(CudaOps, ReduceUnitAxesOnly) {
  expectExact({6, 1, 7, 1, 8}, {1, 3});
  expectExact({6, 1, 7, 1, 8}, {1, 3}, true);
  // Unit axes next to real ones merge away.
  expectExact({6, 1, 7, 1, 8}, {1, 2, 3});
}

TEST_F(CudaOps, ReduceNoAxes) {
  expectExact({5, 7}, {});
  expectExact({}, {});
}

TEST_F(CudaOps, ReduceEmptyInput) {
  // A sum of nothing is 0 and a mean NaN. (A max of nothing is -inf, which
  // the harness cannot compare: inf - inf is NaN.)
  for (const std::string op : {"graph.reduce_sum", "graph.reduce_mean"}) {
    expectReduce(op, {0, 5}, {0}, false, {}, 0.0, 0.0);
    expectReduce(op, {3, 0}, {1}, true, {}, 0.0, 0.0);
  }
}

TEST_F(CudaOps, ReduceMaxSkipsNaN) {
  float nan = std::nanf("");
  std::vector<float> values = {nan,  1.0f, -2.0f, nan,   -3.0f, -1.0f,
                               0.5f, nan,  4.0f,  -0.0f, 0.0f,  2.0f};
  expectReduce("graph.reduce_max", {3, 4}, {1}, false, values, 0.0, 0.0);
  expectReduce("graph.reduce_max", {3, 4}, {0}, false, values, 0.0, 0.0);
}

//===----------------------------------------------------------------------===//
// reduce_max_grad
//===----------------------------------------------------------------------===//

namespace {

/// Inputs with four levels (many ties, so "the first maximum" matters) and
/// a random output gradient.
void expectMaxGrad(const Shape &shape, const Shape &axes, bool keepdims,
                   std::vector<float> values = {}) {
  SCOPED_TRACE(keepdims ? "keepdims" : "dropped dims");
  if (values.empty())
    values = quantized(count(shape), 3, 1.5f);
  Shape reduced = reducedShape(shape, axes, keepdims);
  OpCase t("graph.reduce_max_grad");
  t.f32(shape, std::move(values));
  t.f32(reduced, 4);
  t.output(shape);
  t.attr("axes");
  t.setInts("axes", axes);
  t.setBool("keepdims", keepdims);
  t.expectMatch(0.0, 0.0);
}

} // namespace

TEST_F(CudaOps, ReduceMaxGradLastAxis) {
  expectMaxGrad({50, 37}, {1}, false);
  expectMaxGrad({50, 37}, {1}, true);
  expectMaxGrad({7, 50000}, {1}, false);
}

TEST_F(CudaOps, ReduceMaxGradLeadingAxes) {
  expectMaxGrad({4, 64, 33}, {0, 1}, false);
  expectMaxGrad({4097, 2}, {0}, true);
}

TEST_F(CudaOps, ReduceMaxGradMiddleAndScatteredAxes) {
  expectMaxGrad({6, 100, 33}, {1}, false);
  expectMaxGrad({10, 20, 30}, {0, 2}, false);
  expectMaxGrad({4, 5, 6, 7}, {1, 3}, true);
}

TEST_F(CudaOps, ReduceMaxGradAllAxes) {
  expectMaxGrad({1000, 999}, {0, 1}, false);
  expectMaxGrad({3, 5}, {0, 1}, true);
}

TEST_F(CudaOps, ReduceMaxGradConstantRows) {
  // Every element ties: the first of each row takes the gradient.
  expectMaxGrad({64, 4097}, {1}, false, std::vector<float>(64 * 4097, 0.25f));
}

TEST_F(CudaOps, ReduceMaxGradWithNaN) {
  // A NaN never is the maximum; a row of NaNs gets no gradient.
  float nan = std::nanf("");
  expectMaxGrad(
      {3, 4}, {1}, false,
      {nan, 3.0f, 1.0f, 3.0f, -1.0f, -1.0f, -1.0f, -1.0f, nan, nan, nan, nan});
}
