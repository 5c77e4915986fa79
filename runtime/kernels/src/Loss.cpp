//===- Loss.cpp - Softmax cross-entropy -----------------------------------===//

#include "cleave/runtime/kernels/Loss.h"

#include "FastMath.h"
#include "Parallel.h"
#include "Support.h"
#include "VectorClones.h"

#include <cmath>
#include <limits>
#include <vector>

namespace cleave::kernels {
namespace {

struct LossDims {
  int64_t rows, classes;
};

LossDims lossDims(ConstTensorRef logits, IndexRef labels, const char *kernel) {
  CLEAVE_CHECK_IN(
      kernel,
      logits.rank() >= 1 &&
          Shape(logits.shape.begin(), logits.shape.end() - 1) == labels.shape,
      "labels " + shapeString(labels.shape) +
          " must have the shape of the logits " + shapeString(logits.shape) +
          " without the class dimension");
  LossDims d{labels.numElements(), logits.shape.back()};
  return d;
}

/// Whether row r counts, checking its label.
bool counts(IndexRef labels, int64_t r, int64_t classes, int64_t ignoreIndex,
            const char *kernel) {
  int64_t label = labels.data[r];
  if (label == ignoreIndex)
    return false;
  CLEAVE_CHECK_IN(kernel, label >= 0 && label < classes,
                  "label " + std::to_string(label) + " is out of range for " +
                      std::to_string(classes) + " classes");
  return true;
}

/// max and log(sum(exp(x - max))) of a row.
CLEAVE_CLONE_INLINE void logSumExp(const float *x, int64_t n, float &max,
                                   float &logSum) {
  max = detail::rowMax(x, n);
  logSum = std::log(detail::rowSumExp(x, max, n));
}

} // namespace

namespace {

/// Rows [r0, r1)'s loss terms summed (cloned for the vector widths, run on
/// the threads of parallelFor; the labels checked already, since no error
/// may leave a thread).
CLEAVE_VECTOR_CLONES double crossEntropyRows(ConstTensorRef logits,
                                             IndexRef labels, int64_t classes,
                                             int64_t ignoreIndex, int64_t r0,
                                             int64_t r1) {
  double total = 0.0;
  for (int64_t r = r0; r < r1; ++r) {
    if (labels.data[r] == ignoreIndex)
      continue;
    const float *x = logits.data + r * classes;
    float max, logSum;
    logSumExp(x, classes, max, logSum);
    total += double(max) + logSum - x[labels.data[r]];
  }
  return total;
}

CLEAVE_VECTOR_CLONES void crossEntropyBackwardRows(ConstTensorRef logits,
                                                   IndexRef labels,
                                                   int64_t classes,
                                                   int64_t ignoreIndex,
                                                   float scale,
                                                   TensorRef dLogits,
                                                   int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    const float *x = logits.data + r * classes;
    float *dx = dLogits.data + r * classes;
    if (labels.data[r] == ignoreIndex) {
      detail::zero(dx, classes);
      continue;
    }
    float max, logSum;
    logSumExp(x, classes, max, logSum);
    float shift = max + logSum;
    for (int64_t i = 0; i < classes; ++i)
      dx[i] = detail::expOrZero(x[i] - shift) * scale;
    dx[labels.data[r]] -= scale;
  }
}

} // namespace

void crossEntropy(ConstTensorRef logits, IndexRef labels, int64_t ignoreIndex,
                  TensorRef loss) {
  LossDims d = lossDims(logits, labels, "crossEntropy");
  detail::checkShape(loss, {}, "crossEntropy", "loss");
  // Blocks of rows summed apart, then in block order: the same total on
  // any number of threads.
  int64_t count = 0;
  for (int64_t r = 0; r < d.rows; ++r)
    count += counts(labels, r, d.classes, ignoreIndex, "crossEntropy");
  int64_t block = detail::kSumBlockRows;
  int64_t blocks = (d.rows + block - 1) / block;
  std::vector<double> totals(blocks, 0.0);
  detail::parallelFor(blocks, d.rows * d.classes, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b)
      totals[b] = crossEntropyRows(logits, labels, d.classes, ignoreIndex,
                                   b * block,
                                   std::min(d.rows, (b + 1) * block));
  });
  double total = 0.0;
  for (double t : totals)
    total += t;
  loss.data[0] = count ? static_cast<float>(total / count) : 0.0f;
}

void crossEntropyBackward(ConstTensorRef logits, IndexRef labels,
                          int64_t ignoreIndex, ConstTensorRef dLoss,
                          TensorRef dLogits) {
  LossDims d = lossDims(logits, labels, "crossEntropyBackward");
  detail::checkShape(dLoss, {}, "crossEntropyBackward", "dLoss");
  detail::checkShape(dLogits, logits.shape, "crossEntropyBackward", "dLogits");
  int64_t count = 0;
  for (int64_t r = 0; r < d.rows; ++r)
    count += counts(labels, r, d.classes, ignoreIndex, "crossEntropyBackward");
  float scale = count ? dLoss.data[0] / static_cast<float>(count) : 0.0f;
  detail::parallelFor(d.rows, d.rows * d.classes, [&](int64_t r0, int64_t r1) {
    crossEntropyBackwardRows(logits, labels, d.classes, ignoreIndex, scale,
                             dLogits, r0, r1);
  });
}

} // namespace cleave::kernels
