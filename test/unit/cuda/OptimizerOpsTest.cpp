//===- OptimizerOpsTest.cpp - sgd_update and adamw_update, CUDA vs CPU ----===//
//
// Both updates in place (outputs are the inputs' tensors) and out of place
// (separate outputs, which start as zeros: a kernel that read them instead
// of the inputs would fail). The GPU rounds as the CPU does, so the
// results are expected to the bit, up to the ulp the double-precision
// bias correction might differ by.
//
//===----------------------------------------------------------------------===//

#include "CudaOpCase.h"

#include <limits>
#include <string>
#include <vector>

using namespace cleave::test;

namespace {

using Shape = std::vector<int64_t>;

/// Relative difference a last-ulp change of AdamW's bias correction
/// (pow in double, libm against CUDA) could cause.
constexpr double kAdamWRtol = 1e-6;

struct SgdTensors {
  int32_t param, grad, buffer;
};

SgdTensors sgdInputs(OpCase &t, const Shape &shape) {
  SgdTensors s;
  s.param = t.f32(shape, 1);
  s.grad = t.f32(shape, 2);
  s.buffer = t.f32(shape, 3);
  return s;
}

void sgdAttributes(OpCase &t) {
  t.setFloat("lr", 0.1);
  t.setFloat("mu", 0.9);
  t.setFloat("weight_decay", 0.01);
}

struct AdamWTensors {
  int32_t param, grad, m, v, step;
};

AdamWTensors adamwInputs(OpCase &t, const Shape &shape, float step) {
  AdamWTensors a;
  a.param = t.f32(shape, 4);
  a.grad = t.f32(shape, 5);
  a.m = t.f32(shape, 6, -0.1f, 0.1f);
  // The second moment is never negative.
  a.v = t.f32(shape, 7, 0.0f, 0.01f);
  a.step = t.f32({1}, std::vector<float>{step});
  return a;
}

void adamwAttributes(OpCase &t) {
  t.setFloat("lr", 1e-3);
  t.setFloat("beta1", 0.9);
  t.setFloat("beta2", 0.999);
  t.setFloat("eps", 1e-8);
  t.setFloat("weight_decay", 0.01);
}

void expectAdamW(const Shape &shape, float step, bool inPlace) {
  SCOPED_TRACE("step " + std::to_string(step) +
               (inPlace ? ", in place" : ", out of place"));
  OpCase t("graph.adamw_update");
  AdamWTensors a = adamwInputs(t, shape, step);
  if (inPlace) {
    t.outputIsInput(a.param);
    t.outputIsInput(a.m);
    t.outputIsInput(a.v);
  } else {
    t.output(shape);
    t.output(shape);
    t.output(shape);
  }
  adamwAttributes(t);
  t.expectMatch(kAdamWRtol, 0.0);
}

} // namespace

TEST_F(CudaOps, SgdOutOfPlace) {
  OpCase t("graph.sgd_update");
  sgdInputs(t, {4097});
  t.output({4097});
  t.output({4097});
  sgdAttributes(t);
  t.expectMatch(0.0, 0.0);
}

TEST_F(CudaOps, SgdInPlace) {
  OpCase t("graph.sgd_update");
  SgdTensors s = sgdInputs(t, {33, 129});
  t.outputIsInput(s.param);
  t.outputIsInput(s.buffer);
  sgdAttributes(t);
  t.expectMatch(0.0, 0.0);
}

TEST_F(CudaOps, SgdMixedInPlaceAndOutOfPlace) {
  OpCase t("graph.sgd_update");
  SgdTensors s = sgdInputs(t, {1000});
  t.outputIsInput(s.param);
  t.output({1000});
  sgdAttributes(t);
  t.expectMatch(0.0, 0.0);
}

TEST_F(CudaOps, SgdDefaultsMomentumAndDecayToZero) {
  // With momentum 0 the new buffer holds this step's gradient.
  OpCase t("graph.sgd_update");
  sgdInputs(t, {7});
  t.output({7});
  t.output({7});
  t.setFloat("lr", 0.05);
  t.expectMatch(0.0, 0.0);
}

TEST_F(CudaOps, SgdLargeTensor) {
  OpCase t("graph.sgd_update");
  SgdTensors s = sgdInputs(t, {1000, 257});
  t.outputIsInput(s.param);
  t.outputIsInput(s.buffer);
  sgdAttributes(t);
  t.expectMatch(0.0, 0.0);
}

TEST_F(CudaOps, AdamWFirstStep) {
  expectAdamW({4097}, 1.0f, false);
  expectAdamW({4097}, 1.0f, true);
}

TEST_F(CudaOps, AdamWThirdStep) {
  expectAdamW({4097}, 3.0f, false);
  expectAdamW({33, 129}, 3.0f, true);
}

TEST_F(CudaOps, AdamWRoundsTheStepCount) {
  // lround(2.6) = 3, lround(0.5) = 1 (half away from zero).
  expectAdamW({1000}, 2.6f, true);
  expectAdamW({1000}, 0.5f, false);
}

TEST_F(CudaOps, AdamWLateStep) { expectAdamW({7}, 10000.0f, false); }

TEST_F(CudaOps, AdamWMixedInPlaceAndOutOfPlace) {
  OpCase t("graph.adamw_update");
  AdamWTensors a = adamwInputs(t, {1000, 257}, 3.0f);
  t.outputIsInput(a.param);
  t.output({1000, 257});
  t.outputIsInput(a.v);
  adamwAttributes(t);
  t.expectMatch(kAdamWRtol, 0.0);
}

// Loss scaling's unscale: gradients divided in place by the scale (the
// same float reciprocal on both backends, so to the bit) and the overflow
// flag: clear for finite gradients, set when one holds an infinity (the
// GPU flag is zeroed first, then set by any thread that sees one).
TEST_F(CudaOps, UnscaleFiniteGradients) {
  OpCase t("runtime.unscale");
  int32_t scale = t.f32({}, std::vector<float>{1024.0f});
  int32_t g1 = t.f32({4097}, 8, -100.0f, 100.0f);
  int32_t g2 = t.f32({33, 129}, 9, -1.0f, 1.0f);
  t.output({});
  t.outputIsInput(g1);
  t.outputIsInput(g2);
  (void)scale;
  t.expectMatch(0.0, 0.0);
}

TEST_F(CudaOps, UnscaleFlagsAnOverflow) {
  OpCase t("runtime.unscale");
  t.f32({}, std::vector<float>{65536.0f});
  int32_t g1 = t.f32({1000}, 10);
  std::vector<float> over(77, 1.0f);
  over[40] = std::numeric_limits<float>::infinity();
  int32_t g2 = t.f32({77}, over);
  t.output({});
  t.outputIsInput(g1);
  t.outputIsInput(g2);
  t.expectMatch(0.0, 0.0);
}
