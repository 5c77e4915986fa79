//===- MatmulTest.cpp - Batched matmul and its gradients ------------------===//

#include "cleave/runtime/kernels/Matmul.h"

#include "GradCheck.h"

using namespace cleave::kernels;
using namespace cleave::kernels::test;

namespace {

/// The stored shape of an operand whose logical matrix is rows x cols.
Shape stored(Shape batch, int64_t rows, int64_t cols, bool transposed) {
  batch.push_back(transposed ? cols : rows);
  batch.push_back(transposed ? rows : cols);
  return batch;
}

/// Element (r, c) of the logical matrix of a (possibly transposed) operand.
float element(const Tensor &t, int64_t matrix, int64_t r, int64_t c,
              bool transposed) {
  const Shape &s = t.shape();
  int64_t rows = s[s.size() - 2], cols = s[s.size() - 1];
  int64_t base = matrix * rows * cols;
  return transposed ? t[base + c * cols + r] : t[base + r * cols + c];
}

Tensor naiveMatmul(const Tensor &a, const Tensor &b, bool ta, bool tb) {
  Shape os = matmulShape(a.shape(), b.shape(), ta, tb);
  Shape ob(os.begin(), os.end() - 2);
  Shape ab(a.shape().begin(), a.shape().end() - 2);
  Shape bb(b.shape().begin(), b.shape().end() - 2);
  int64_t m = os[os.size() - 2], n = os.back();
  int64_t k = a.shape()[a.shape().size() - (ta ? 2 : 1)];
  Tensor out = poisoned(os);
  for (int64_t batch = 0; batch < numElements(ob); ++batch) {
    Shape idx = unravel(batch, ob);
    int64_t ia = broadcastOffset(idx, ab), ib = broadcastOffset(idx, bb);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0;
        for (int64_t p = 0; p < k; ++p)
          sum += double(element(a, ia, i, p, ta)) * element(b, ib, p, j, tb);
        out[(batch * m + i) * n + j] = float(sum);
      }
  }
  return out;
}

struct Case {
  Shape lhsBatch, rhsBatch;
};

// No batch on the right (one tall product), equal batches, both sides
// broadcasting, no batch on the left, and a size-1 batch on the left.
const Case kCases[] = {
    {{2}, {}}, {{2}, {2}}, {{2, 1}, {3}}, {{}, {2}}, {{1}, {3}}, {{}, {}},
};

TEST(Matmul, MatchesNaiveProductWithBroadcastAndTransposes) {
  const int64_t m = 3, k = 4, n = 5;
  for (const Case &c : kCases)
    for (int t = 0; t < 4; ++t) {
      bool ta = t & 1, tb = t & 2;
      Tensor a = randomTensor(stored(c.lhsBatch, m, k, ta), 1);
      Tensor b = randomTensor(stored(c.rhsBatch, k, n, tb), 2);
      Tensor out = poisoned(matmulShape(a.shape(), b.shape(), ta, tb));
      matmul(a, b, ta, tb, out);
      EXPECT_TRUE(allClose(out, naiveMatmul(a, b, ta, tb)))
          << shapeString(a.shape()) << " x " << shapeString(b.shape())
          << " transposes " << ta << tb;
    }
}

TEST(Matmul, GradientsMatchFiniteDifferences) {
  const int64_t m = 3, k = 4, n = 2;
  for (const Case &c : kCases)
    for (int t = 0; t < 4; ++t) {
      bool ta = t & 1, tb = t & 2;
      Tensor a = randomTensor(stored(c.lhsBatch, m, k, ta), 3);
      Tensor b = randomTensor(stored(c.rhsBatch, k, n, tb), 4);
      Tensor out = poisoned(matmulShape(a.shape(), b.shape(), ta, tb));
      GradCheck gc([&] { matmul(a, b, ta, tb, out); }, {&out});
      Tensor da = poisoned(a.shape()), db = poisoned(b.shape());
      matmulBackward(a, b, ta, tb, gc.outGrad(), da, db);
      EXPECT_TRUE(gc.check(a, da))
          << "lhs " << shapeString(a.shape()) << " transposes " << ta << tb;
      EXPECT_TRUE(gc.check(b, db))
          << "rhs " << shapeString(b.shape()) << " transposes " << ta << tb;
    }
}

TEST(Matmul, RejectsMismatchedContraction) {
  Tensor a = poisoned({2, 3}), b = poisoned({4, 5}), out = poisoned({2, 5});
  EXPECT_THROW(matmul(a, b, false, false, out), std::invalid_argument);
  EXPECT_THROW(matmulShape({3}, {3, 2}, false, false), std::invalid_argument);
}

} // namespace
