//===- GradCheck.h - Finite-difference checks of kernel gradients -*- C++
//-*-===//
//
// A backward kernel is checked against central differences of the scalar
//   L = sum_k <w_k, out_k>
// where out_k are the forward's outputs and w_k fixed random weights: the
// weights are the output gradients handed to the backward kernel, so the
// analytic input gradient must equal dL/dinput. L is accumulated in double
// and the step is the difference of the two rounded float inputs, so the
// only noise is the forward's own float rounding.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TEST_UNIT_KERNELS_GRADCHECK_H
#define CLEAVE_TEST_UNIT_KERNELS_GRADCHECK_H

#include "cleave/runtime/kernels/Tensor.h"

#include "gtest/gtest.h"

#include <functional>

namespace cleave::kernels::test {

/// A reproducible tensor of values uniform in [lo, hi).
Tensor randomTensor(const Shape &shape, uint64_t seed, float lo = -1.0f,
                    float hi = 1.0f);

/// A tensor of NaNs, for kernel outputs: an element the kernel fails to
/// write then fails any comparison.
Tensor poisoned(const Shape &shape);

/// The multi-index of row-major element `flat` of `shape`.
Shape unravel(int64_t flat, const Shape &shape);

/// The row-major offset in a tensor of `shape` of the element that `index`
/// (an index of the broadcast result, right-aligned) reads.
int64_t broadcastOffset(const Shape &index, const Shape &shape);

/// Elementwise |actual - expected| <= atol + rtol * |expected|.
::testing::AssertionResult allClose(const Tensor &actual,
                                    const Tensor &expected, double rtol = 1e-5,
                                    double atol = 1e-5);

class GradCheck {
public:
  /// `forward` recomputes every tensor in `outputs` from the current inputs.
  GradCheck(std::function<void()> forward, std::vector<const Tensor *> outputs,
            uint64_t seed = 7);

  /// The output gradient to pass to the backward kernel for output i.
  const Tensor &outGrad(size_t i = 0) const { return weights_[i]; }

  /// Compares `analytic` with the central difference of L w.r.t. each
  /// element of `input` (restored afterwards). Passes when every element
  /// has |analytic - fd| <= atol + rtol * |fd|.
  ::testing::AssertionResult check(Tensor &input, const Tensor &analytic) const;

  double eps = 1e-3;
  double rtol = 1e-2;
  double atol = 2e-3;

private:
  double loss() const;

  std::function<void()> forward_;
  std::vector<const Tensor *> outputs_;
  std::vector<Tensor> weights_;
};

} // namespace cleave::kernels::test

#endif // CLEAVE_TEST_UNIT_KERNELS_GRADCHECK_H
