//===- GradCheck.cpp - Finite-difference checks of kernel gradients -------===//

#include "GradCheck.h"

#include <cmath>
#include <limits>
#include <random>
#include <sstream>

namespace cleave::kernels::test {

Tensor randomTensor(const Shape &shape, uint64_t seed, float lo, float hi) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  Tensor t(shape);
  for (float &v : t.values())
    v = dist(rng);
  return t;
}

Tensor poisoned(const Shape &shape) {
  return Tensor(shape, std::numeric_limits<float>::quiet_NaN());
}

Shape unravel(int64_t flat, const Shape &shape) {
  Shape index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  return index;
}

int64_t broadcastOffset(const Shape &index, const Shape &shape) {
  size_t skip = index.size() - shape.size();
  int64_t offset = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    offset = offset * shape[d] + (shape[d] == 1 ? 0 : index[skip + d]);
  return offset;
}

::testing::AssertionResult allClose(const Tensor &actual,
                                    const Tensor &expected, double rtol,
                                    double atol) {
  if (actual.shape() != expected.shape())
    return ::testing::AssertionFailure()
           << "shape " << shapeString(actual.shape()) << " vs expected "
           << shapeString(expected.shape());
  for (int64_t i = 0; i < actual.numElements(); ++i) {
    double a = actual[i], e = expected[i];
    if (!(std::fabs(a - e) <= atol + rtol * std::fabs(e)))
      return ::testing::AssertionFailure()
             << "element " << i << ": " << a << " vs expected " << e;
  }
  return ::testing::AssertionSuccess();
}

GradCheck::GradCheck(std::function<void()> forward,
                     std::vector<const Tensor *> outputs, uint64_t seed)
    : forward_(std::move(forward)), outputs_(std::move(outputs)) {
  forward_();
  for (size_t i = 0; i < outputs_.size(); ++i)
    weights_.push_back(randomTensor(outputs_[i]->shape(), seed + 101 * i));
}

double GradCheck::loss() const {
  forward_();
  double sum = 0.0;
  for (size_t k = 0; k < outputs_.size(); ++k)
    for (int64_t i = 0; i < outputs_[k]->numElements(); ++i)
      sum += double((*outputs_[k])[i]) * double(weights_[k][i]);
  return sum;
}

::testing::AssertionResult GradCheck::check(Tensor &input,
                                            const Tensor &analytic) const {
  if (input.shape() != analytic.shape())
    return ::testing::AssertionFailure()
           << "gradient shape " << shapeString(analytic.shape()) << " vs input "
           << shapeString(input.shape());
  std::ostringstream failures;
  int bad = 0;
  for (int64_t i = 0; i < input.numElements(); ++i) {
    float saved = input[i];
    float plus = static_cast<float>(saved + eps);
    float minus = static_cast<float>(saved - eps);
    input[i] = plus;
    double lp = loss();
    input[i] = minus;
    double lm = loss();
    input[i] = saved;
    double fd = (lp - lm) / (double(plus) - double(minus));
    double a = analytic[i];
    if (!(std::fabs(a - fd) <= atol + rtol * std::fabs(fd))) {
      if (bad++ < 5)
        failures << "\n  element " << i << ": analytic " << a
                 << ", finite difference " << fd;
    }
  }
  forward_();
  if (bad)
    return ::testing::AssertionFailure()
           << bad << " of " << input.numElements()
           << " gradient elements differ:" << failures.str();
  return ::testing::AssertionSuccess();
}

} // namespace cleave::kernels::test
