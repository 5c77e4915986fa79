//===- Matmul.cpp - Batched matrix products through cblas_sgemm -----------===//

#include "cleave/runtime/kernels/Matmul.h"

#include "Broadcast.h"
#include "Gemm.h"

#include <algorithm>

namespace cleave::kernels {
namespace {

using detail::gemm;

struct MatmulDims {
  Shape lhsBatch, rhsBatch, outBatch;
  int64_t m, n, k;
};

MatmulDims matmulDims(const Shape &lhs, const Shape &rhs, bool tl, bool tr) {
  CLEAVE_CHECK_IN("matmul", lhs.size() >= 2 && rhs.size() >= 2,
                  "operands must have rank >= 2, got " + shapeString(lhs) +
                      " and " + shapeString(rhs));
  MatmulDims d;
  size_t lr = lhs.size(), rr = rhs.size();
  d.m = lhs[lr - (tl ? 1 : 2)];
  int64_t kl = lhs[lr - (tl ? 2 : 1)];
  d.k = rhs[rr - (tr ? 1 : 2)];
  d.n = rhs[rr - (tr ? 2 : 1)];
  CLEAVE_CHECK_IN("matmul", kl == d.k,
                  "contraction sizes differ: " + shapeString(lhs) + " and " +
                      shapeString(rhs));
  d.lhsBatch.assign(lhs.begin(), lhs.end() - 2);
  d.rhsBatch.assign(rhs.begin(), rhs.end() - 2);
  d.outBatch = broadcastShape(d.lhsBatch, d.rhsBatch);
  return d;
}

/// Calls f(outIndex, lhsIndex, rhsIndex) for every batch, in matrices.
template <typename F> void forEachBatch(const MatmulDims &d, F &&f) {
  detail::BroadcastPlan<3> plan = detail::planBroadcast<3>(
      d.outBatch, {&d.outBatch, &d.lhsBatch, &d.rhsBatch}, "matmul");
  int64_t n = plan.inner();
  int64_t so = plan.strides[0].back(), sl = plan.strides[1].back(),
          sr = plan.strides[2].back();
  detail::forEachRow(plan, [&](const std::array<int64_t, 3> &off) {
    for (int64_t i = 0; i < n; ++i)
      f(off[0] + i * so, off[1] + i * sl, off[2] + i * sr);
  });
}

} // namespace

Shape matmulShape(const Shape &lhs, const Shape &rhs, bool transposeLhs,
                  bool transposeRhs) {
  MatmulDims d = matmulDims(lhs, rhs, transposeLhs, transposeRhs);
  Shape out = d.outBatch;
  out.push_back(d.m);
  out.push_back(d.n);
  return out;
}

void matmul(ConstTensorRef lhs, ConstTensorRef rhs, bool transposeLhs,
            bool transposeRhs, TensorRef out) {
  MatmulDims d = matmulDims(lhs.shape, rhs.shape, transposeLhs, transposeRhs);
  detail::checkShape(
      out, matmulShape(lhs.shape, rhs.shape, transposeLhs, transposeRhs),
      "matmul", "result");
  int64_t m = d.m, n = d.n, k = d.k;
  int64_t batches = numElements(d.outBatch);
  // A batch of rows against one matrix is a single taller product.
  if (numElements(d.rhsBatch) == 1 && !transposeLhs)
    return gemm(false, transposeRhs, batches * m, n, k, lhs.data, rhs.data,
                0.0f, out.data);
  forEachBatch(d, [&](int64_t o, int64_t l, int64_t r) {
    gemm(transposeLhs, transposeRhs, m, n, k, lhs.data + l * m * k,
         rhs.data + r * k * n, 0.0f, out.data + o * m * n);
  });
}

void linear(ConstTensorRef x, ConstTensorRef w, bool transposeW,
            ConstTensorRef bias, TensorRef out) {
  CLEAVE_CHECK_IN("linear", w.rank() == 2 && x.rank() >= 1,
                  "needs a matrix of weights, got " + shapeString(w.shape));
  Shape expected = matmulShape(x.rank() == 1 ? Shape{1, x.shape[0]} : x.shape,
                               w.shape, false, transposeW);
  if (x.rank() == 1)
    expected.erase(expected.begin());
  detail::checkShape(out, expected, "linear", "result");
  int64_t n = w.shape[transposeW ? 0 : 1], k = w.shape[transposeW ? 1 : 0];
  detail::checkShape(bias, Shape{n}, "linear", "bias");
  int64_t rows = n == 0 ? 0 : out.numElements() / n;
  for (int64_t r = 0; r < rows; ++r)
    std::copy(bias.data, bias.data + n, out.data + r * n);
  gemm(false, transposeW, rows, n, k, x.data, w.data, 1.0f, out.data);
}

void matmulBatchContract(ConstTensorRef a, ConstTensorRef d, TensorRef out) {
  size_t r = a.shape.size();
  CLEAVE_CHECK_IN("matmulBatchContract",
                  r >= 2 && d.shape.size() == r &&
                      std::equal(a.shape.begin(), a.shape.end() - 1,
                                 d.shape.begin()),
                  "operands " + shapeString(a.shape) + " and " +
                      shapeString(d.shape) + " differ but in the last dimension");
  int64_t k = a.shape[r - 1], n = d.shape[r - 1];
  detail::checkShape(out, Shape{k, n}, "matmulBatchContract", "result");
  int64_t rows = k == 0 ? 0 : a.numElements() / k;
  gemm(true, false, k, n, rows, a.data, d.data, 0.0f, out.data);
}

void matmulBackward(ConstTensorRef lhs, ConstTensorRef rhs, bool transposeLhs,
                    bool transposeRhs, ConstTensorRef dOut, TensorRef dLhs,
                    TensorRef dRhs) {
  MatmulDims d = matmulDims(lhs.shape, rhs.shape, transposeLhs, transposeRhs);
  detail::checkShape(
      dOut, matmulShape(lhs.shape, rhs.shape, transposeLhs, transposeRhs),
      "matmulBackward", "dOut");
  detail::checkOptionalShape(dLhs, lhs.shape, "matmulBackward", "dLhs");
  detail::checkOptionalShape(dRhs, rhs.shape, "matmulBackward", "dRhs");
  bool tl = transposeLhs, tr = transposeRhs;
  int64_t m = d.m, n = d.n, k = d.k;
  int64_t batches = numElements(d.outBatch);

  // Y = op(A) op(B): d op(A) = dY op(B)^T and d op(B) = op(A)^T dY, each
  // transposed back when its operand is stored transposed.
  if (numElements(d.rhsBatch) == 1 && !tl) {
    int64_t rows = batches * m;
    if (dLhs)
      gemm(false, !tr, rows, k, n, dOut.data, rhs.data, 0.0f, dLhs.data);
    if (dRhs) {
      if (!tr)
        gemm(true, false, k, n, rows, lhs.data, dOut.data, 0.0f, dRhs.data);
      else
        gemm(true, false, n, k, rows, dOut.data, lhs.data, 0.0f, dRhs.data);
    }
    return;
  }

  // Operands broadcast along a batch dimension accumulate over it.
  bool lhsReduced = numElements(d.lhsBatch) != batches;
  bool rhsReduced = numElements(d.rhsBatch) != batches;
  if (dLhs && (lhsReduced || batches == 0))
    detail::zero(dLhs);
  if (dRhs && (rhsReduced || batches == 0))
    detail::zero(dRhs);
  float betaL = lhsReduced ? 1.0f : 0.0f, betaR = rhsReduced ? 1.0f : 0.0f;
  forEachBatch(d, [&](int64_t o, int64_t l, int64_t r) {
    const float *dy = dOut.data + o * m * n;
    const float *a = lhs.data + l * m * k;
    const float *b = rhs.data + r * k * n;
    if (dLhs) {
      float *da = dLhs.data + l * m * k;
      if (!tl)
        gemm(false, !tr, m, k, n, dy, b, betaL, da);
      else
        gemm(tr, true, k, m, n, b, dy, betaL, da);
    }
    if (dRhs) {
      float *db = dRhs.data + r * k * n;
      if (!tr)
        gemm(!tl, false, k, n, m, a, dy, betaR, db);
      else
        gemm(true, tl, n, k, m, dy, a, betaR, db);
    }
  });
}

} // namespace cleave::kernels
