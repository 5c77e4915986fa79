//===- DataMovementTest.cpp - gather, transpose, slice, concat, split -----===//

#include "cleave/runtime/kernels/DataMovement.h"

#include "GradCheck.h"

using namespace cleave::kernels;
using namespace cleave::kernels::test;

namespace {

int64_t offsetOf(const Shape &index, const Shape &shape) {
  int64_t offset = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    offset = offset * shape[d] + index[d];
  return offset;
}

TEST(Gather, SelectsSlicesAlongAxis) {
  // An embedding lookup: rows of a [5, 3] table by [2, 2] token ids.
  Tensor table = randomTensor({5, 3}, 1);
  IndexTensor tokens({2, 2}, {4, 0, 0, -1});
  Tensor out = poisoned(gatherShape(table.shape(), tokens.shape(), 0));
  ASSERT_EQ(out.shape(), (Shape{2, 2, 3}));
  gather(table, tokens, 0, out);
  int64_t rows[] = {4, 0, 0, 4};
  for (int64_t t = 0; t < 4; ++t)
    for (int64_t h = 0; h < 3; ++h)
      EXPECT_EQ(out[t * 3 + h], table[rows[t] * 3 + h]);

  // Along a middle axis.
  Tensor data = randomTensor({2, 4, 3}, 2);
  IndexTensor idx({3}, {3, 1, 3});
  Tensor mid = poisoned(gatherShape(data.shape(), idx.shape(), 1));
  gather(data, idx, 1, mid);
  for (int64_t i = 0; i < mid.numElements(); ++i) {
    Shape m = unravel(i, mid.shape());
    EXPECT_EQ(mid[i], data[offsetOf({m[0], idx[m[1]], m[2]}, data.shape())]);
  }
  IndexTensor bad({1}, {4});
  Tensor badOut = poisoned({2, 1, 3});
  EXPECT_THROW(gather(data, bad, 1, badOut), std::invalid_argument);
}

TEST(Gather, GradientScatterAddsRepeatedIndices) {
  Tensor data = randomTensor({2, 4, 3}, 3);
  IndexTensor idx({2, 2}, {3, 1, 3, 3});
  Tensor out = poisoned(gatherShape(data.shape(), idx.shape(), 1));
  GradCheck gc([&] { gather(data, idx, 1, out); }, {&out});
  Tensor dData = poisoned(data.shape());
  gatherBackward(idx, 1, gc.outGrad(), dData);
  EXPECT_TRUE(gc.check(data, dData));
}

TEST(Transpose, PermutesDimensions) {
  Tensor x = randomTensor({2, 3, 4, 5}, 4);
  for (const std::vector<int64_t> &perm : {std::vector<int64_t>{3, 0, 2, 1},
                                           {0, 1, 3, 2},
                                           {1, 0, 2, 3},
                                           {0, 1, 2, 3}}) {
    Tensor out = poisoned(transposeShape(x.shape(), perm));
    transpose(x, perm, out);
    for (int64_t i = 0; i < out.numElements(); ++i) {
      Shape o = unravel(i, out.shape()), in(4);
      for (int d = 0; d < 4; ++d)
        in[perm[d]] = o[d];
      ASSERT_EQ(out[i], x[offsetOf(in, x.shape())]);
    }
    GradCheck gc([&] { transpose(x, perm, out); }, {&out});
    Tensor dx = poisoned(x.shape());
    transposeBackward(gc.outGrad(), perm, dx);
    EXPECT_TRUE(gc.check(x, dx));
  }
  Tensor out = poisoned({3, 2, 4, 5});
  EXPECT_THROW(transpose(x, {1, 1, 2, 3}, out), std::invalid_argument);
}

TEST(Slice, TakesStridedBoxes) {
  Tensor x = randomTensor({5, 6, 3}, 5);
  std::vector<int64_t> starts{1, 0, 2}, limits{5, 6, 3}, strides{2, 4, 1};
  Tensor out = poisoned(sliceShape(x.shape(), starts, limits, strides));
  ASSERT_EQ(out.shape(), (Shape{2, 2, 1}));
  slice(x, starts, limits, strides, out);
  for (int64_t i = 0; i < out.numElements(); ++i) {
    Shape o = unravel(i, out.shape());
    EXPECT_EQ(out[i],
              x[offsetOf({1 + 2 * o[0], 4 * o[1], 2 + o[2]}, x.shape())]);
  }
  GradCheck gc([&] { slice(x, starts, limits, strides, out); }, {&out});
  Tensor dx = poisoned(x.shape());
  sliceBackward(gc.outGrad(), starts, limits, strides, dx);
  EXPECT_TRUE(gc.check(x, dx));
  // graph.slice_grad's form, without limits, places the same gradient.
  Tensor dx2 = poisoned(x.shape());
  sliceBackward(gc.outGrad(), starts, strides, dx2);
  EXPECT_EQ(dx2.values(), dx.values());

  // A contiguous slice of whole rows, and an empty one.
  Tensor rows = poisoned({2, 6, 3});
  slice(x, {1, 0, 0}, {3, 6, 3}, {1, 1, 1}, rows);
  EXPECT_EQ(
      std::vector<float>(x.values().begin() + 18, x.values().begin() + 54),
      rows.values());
  Tensor empty = poisoned({0, 6, 3});
  slice(x, {2, 0, 0}, {2, 6, 3}, {1, 1, 1}, empty);
  EXPECT_THROW(sliceShape(x.shape(), {0, 0, 0}, {6, 6, 3}, {1, 1, 1}),
               std::invalid_argument);
}

TEST(ConcatSplit, JoinAndSeparateAlongAxis) {
  Tensor a = randomTensor({2, 1, 3}, 6), b = randomTensor({2, 3, 3}, 7);
  Tensor out = poisoned(concatShape({a.shape(), b.shape()}, 1));
  ASSERT_EQ(out.shape(), (Shape{2, 4, 3}));
  concat({a, b}, 1, out);
  for (int64_t i = 0; i < out.numElements(); ++i) {
    Shape o = unravel(i, out.shape());
    float expected = o[1] < 1 ? a[offsetOf(o, a.shape())]
                              : b[offsetOf({o[0], o[1] - 1, o[2]}, b.shape())];
    EXPECT_EQ(out[i], expected);
  }
  Tensor a2 = poisoned(a.shape()), b2 = poisoned(b.shape());
  split(out, 1, {a2, b2});
  EXPECT_EQ(a2.values(), a.values());
  EXPECT_EQ(b2.values(), b.values());
  Tensor wrong = poisoned({2, 2, 3});
  EXPECT_THROW(split(out, 1, {a2, wrong}), std::invalid_argument);
}

TEST(ConcatSplit, AreEachOthersGradient) {
  Tensor a = randomTensor({3, 2}, 8), b = randomTensor({3, 4}, 9);
  Tensor out = poisoned({3, 6});
  GradCheck gc([&] { concat({a, b}, 1, out); }, {&out});
  Tensor da = poisoned(a.shape()), db = poisoned(b.shape());
  split(gc.outGrad(), 1, {da, db});
  EXPECT_TRUE(gc.check(a, da));
  EXPECT_TRUE(gc.check(b, db));

  Tensor x = randomTensor({5, 2}, 10), p = poisoned({2, 2}),
         q = poisoned({3, 2});
  GradCheck gs([&] { split(x, 0, {p, q}); }, {&p, &q});
  Tensor dx = poisoned(x.shape());
  concat({gs.outGrad(0), gs.outGrad(1)}, 0, dx);
  EXPECT_TRUE(gs.check(x, dx));
  // An unused result has no gradient: null reads as zeros.
  concat({gs.outGrad(0), ConstTensorRef(nullptr, {3, 2})}, 0, dx);
  for (int64_t i = 4; i < 10; ++i)
    EXPECT_EQ(dx[i], 0.0f);
}

} // namespace
