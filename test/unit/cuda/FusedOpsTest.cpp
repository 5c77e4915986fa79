//===- FusedOpsTest.cpp - Fused GEMM groups against the ops one by one ----===//
//
// Each case is a group of instructions a backend fuses (executor
// Fusion.h): the reference runs them one by one on the CPU; the CPU's
// fused kernels (everywhere) and cuBLASLt's epilogues (on a GPU) must give
// the same tensors, and the trace must show that the group ran fused.

#include "CudaOpCase.h"

using namespace cleave::test;

namespace {

/// x [4, 17, 64] . W + b, W [64, 96] (or [96, 64] transposed).
int32_t linear(OpCase &t, bool transposed) {
  t.f32({4, 17, 64}, 1);
  t.f32(transposed ? std::vector<int64_t>{96, 64}
                   : std::vector<int64_t>{64, 96},
        2, -0.2f, 0.2f);
  int32_t product = t.output({4, 17, 96});
  t.setBool("transpose_rhs", transposed);
  t.then("graph.add");
  t.input(product);
  t.f32({96}, 3);
  return t.output({4, 17, 96});
}

} // namespace

TEST_F(CudaOps, FusedLinearBias) {
  for (bool transposed : {false, true}) {
    OpCase t("graph.matmul");
    linear(t, transposed);
    t.expectFused("matmul+bias");
    t.expectMatch(1e-4, 1e-5);
  }
}

TEST_F(CudaOps, FusedLinearBiasGeluKeepsThePreActivation) {
  // The backward reads gelu's input: the epilogue stores it as its aux
  // matrix (read back here through a later instruction).
  OpCase t("graph.matmul");
  int32_t y = linear(t, false);
  t.then("graph.gelu").setBool("approximate_tanh", true);
  t.input(y);
  int32_t z = t.output({4, 17, 96});
  t.then("graph.neg");
  t.input(y);
  t.output({4, 17, 96});
  t.compare(z);
  t.expectFused("matmul+bias+activation");
  t.expectMatch(1e-4, 1e-5);
}

TEST_F(CudaOps, FusedLinearBiasRelu) {
  OpCase t("graph.matmul");
  int32_t y = linear(t, false);
  t.then("graph.relu");
  t.input(y);
  t.output({4, 17, 96});
  t.expectFused("matmul+bias+activation");
  t.expectMatch(1e-4, 1e-5);
}

TEST_F(CudaOps, ExactGeluKeepsOnlyTheBiasInTheEpilogue) {
  // cuBLASLt's GELU is the tanh approximation: the GPU fuses the bias and
  // runs the erf GELU alone; the result is the same.
  OpCase t("graph.matmul");
  int32_t y = linear(t, false);
  t.then("graph.gelu");
  t.input(y);
  t.output({4, 17, 96});
  t.expectMatch(1e-4, 1e-5);
}

TEST_F(CudaOps, FusedGeluGradient) {
  // dy = gelu_tanh'(y) * (dz . W^T): a linear layer's input gradient.
  OpCase t("graph.matmul");
  t.f32({4, 17, 96}, 4);
  t.f32({64, 96}, 5, -0.2f, 0.2f);
  int32_t product = t.output({4, 17, 64});
  t.setBool("transpose_rhs", true);
  t.then("graph.activation_grad").setString("kind", "gelu_tanh");
  t.f32({4, 17, 64}, 6, -3.0f, 3.0f);
  t.input(product);
  t.output({4, 17, 64});
  t.expectFused("matmul+activation_grad");
  t.expectMatch(1e-4, 1e-5);
}

TEST_F(CudaOps, FusedWeightGradientOverTheBatch) {
  // a [3, 20, 8]^T d [3, 20, 12] summed over the batch: one GEMM over 60
  // rows instead of three and a sum.
  OpCase t("graph.matmul");
  t.f32({3, 20, 8}, 7);
  t.f32({3, 20, 12}, 8);
  int32_t product = t.output({3, 8, 12});
  t.setBool("transpose_lhs", true);
  t.then("graph.reduce_sum").setInts("axes", {0}).setBool("keepdims", true);
  t.input(product);
  t.output({1, 8, 12});
  t.expectFused("matmul+batch_reduce");
  t.expectMatch(1e-4, 1e-5);
}
