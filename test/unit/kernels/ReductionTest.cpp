//===- ReductionTest.cpp - reduce_sum, reduce_mean, reduce_max ------------===//

#include "cleave/runtime/kernels/Reduction.h"

#include "GradCheck.h"

#include <limits>

using namespace cleave::kernels;
using namespace cleave::kernels::test;

namespace {

Tensor naiveReduce(ReduceOp op, const Tensor &x,
                   const std::vector<int64_t> &axes) {
  Shape kept = reduceShape(x.shape(), axes, true);
  Tensor out(kept, op == ReduceOp::Max ? -std::numeric_limits<float>::infinity()
                                       : 0.0f);
  std::vector<double> sums(out.numElements(), 0.0);
  for (int64_t i = 0; i < x.numElements(); ++i) {
    int64_t o = broadcastOffset(unravel(i, x.shape()), kept);
    sums[o] += x[i];
    out[o] = std::max(out[o], x[i]);
  }
  if (op != ReduceOp::Max)
    for (int64_t o = 0; o < out.numElements(); ++o)
      out[o] = float(op == ReduceOp::Sum
                         ? sums[o]
                         : sums[o] * out.numElements() / x.numElements());
  return out;
}

const std::vector<int64_t> kAxes[] = {{0},    {1},       {2}, {0, 2},
                                      {1, 2}, {0, 1, 2}, {}};

TEST(Reduce, MatchesReferenceOverAnyAxes) {
  Tensor x = randomTensor({3, 4, 5}, 1);
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Mean, ReduceOp::Max})
    for (const auto &axes : kAxes)
      for (bool keepdims : {true, false}) {
        Tensor out = poisoned(reduceShape(x.shape(), axes, keepdims));
        reduce(op, x, axes, keepdims, out);
        Tensor expected = naiveReduce(op, x, axes);
        EXPECT_TRUE(
            allClose(Tensor(out.shape(), expected.values()), out, 1e-5, 1e-6))
            << "op " << int(op) << " axes " << shapeString(axes);
      }
  EXPECT_EQ(reduceShape({3, 4, 5}, {0, 2}, false), (Shape{4}));
  EXPECT_EQ(reduceShape({3, 4, 5}, {0, 2}, true), (Shape{1, 4, 1}));
  EXPECT_THROW(reduceShape({3, 4}, {1, 1}, false), std::invalid_argument);
}

TEST(Reduce, GradientsMatchFiniteDifferences) {
  Tensor x = randomTensor({3, 4, 5}, 2);
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Mean, ReduceOp::Max})
    for (const auto &axes : kAxes) {
      Tensor out = poisoned(reduceShape(x.shape(), axes, false)),
             dx = poisoned(x.shape());
      GradCheck gc([&] { reduce(op, x, axes, false, out); }, {&out});
      reduceBackward(op, x, axes, false, gc.outGrad(), dx);
      EXPECT_TRUE(gc.check(x, dx))
          << "op " << int(op) << " axes " << shapeString(axes);
    }
}

TEST(Reduce, MaxGradientGoesToTheFirstMaximum) {
  Tensor x({2, 3}, {1, 5, 5, 7, 7, 2});
  Tensor dOut({2}, {1.0f, 2.0f}), dx = poisoned({2, 3});
  reduceBackward(ReduceOp::Max, x, {1}, false, dOut, dx);
  EXPECT_EQ(dx.values(), (std::vector<float>{0, 1, 0, 2, 0, 0}));
  Tensor dOut0({3}, {1.0f, 2.0f, 3.0f});
  reduceBackward(ReduceOp::Max, x, {0}, false, dOut0, dx);
  EXPECT_EQ(dx.values(), (std::vector<float>{0, 0, 3, 1, 2, 0}));
}

} // namespace
