//===- MixedPrecisionOpsTest.cpp - bf16 storage on the CUDA backend -------===//
//
// A bf16 plan's instructions on 16-bit tensors: casts between fp32 and
// bf16 (the master weights' copies, the loss's logits), and fp32 kernels
// run on bf16 operands and results through the executor's widening (the
// backend's widen and narrow conversions), fused attention among them.
// Both backends round to nearest even from fp32 results that differ in
// their last bits, so a bf16 result may differ by one bf16 step (2^-8
// relative): compared after the cast back with rtol 1e-2.
//
//===----------------------------------------------------------------------===//

#include "CudaOpCase.h"

#include <cstdint>
#include <vector>

using namespace cleave::test;
using cleave::plan::BF16;

TEST_F(CudaOps, CastsBetweenFp32AndBf16) {
  OpCase t("graph.cast");
  t.f32({5, 33}, 1, -3.0f, 3.0f);
  int32_t half = t.output({5, 33}, BF16);
  t.then("graph.cast");
  t.input(half);
  t.output({5, 33});
  // Both backends round the same fp32 values: equal to the bit.
  t.expectMatch(0.0, 0.0);
}

TEST_F(CudaOps, KernelsRunOnBf16Storage) {
  // gelu and a row softmax read and write bf16 tensors.
  OpCase t("graph.cast");
  t.f32({4, 100}, 2, -3.0f, 3.0f);
  int32_t x = t.output({4, 100}, BF16);
  t.then("graph.gelu");
  t.input(x);
  int32_t g = t.output({4, 100}, BF16);
  t.then("graph.softmax");
  t.input(g);
  int32_t s = t.output({4, 100}, BF16);
  t.setInt("axis", -1);
  t.then("graph.cast");
  t.input(s);
  t.output({4, 100});
  t.expectMatch(1e-2, 1e-4);
}

TEST_F(CudaOps, FlashAttentionOnBf16Storage) {
  // q, k, v and out in bf16, the log-sum-exp in fp32.
  OpCase t("graph.cast");
  t.f32({1, 2, 24, 64}, 3);
  int32_t q = t.output({1, 2, 24, 64}, BF16);
  t.then("graph.cast");
  t.f32({1, 2, 24, 64}, 4);
  int32_t k = t.output({1, 2, 24, 64}, BF16);
  t.then("graph.attention");
  t.input(q);
  t.input(k);
  t.input(k);
  int32_t out = t.output({1, 2, 24, 64}, BF16);
  int32_t lse = t.output({1, 2, 24});
  t.setFloat("scale", 0.125).setBool("causal", true);
  t.then("graph.cast");
  t.input(out);
  t.output({1, 2, 24, 64});
  t.compare(lse);
  t.expectMatch(1e-2, 1e-3);
}

TEST_F(CudaOps, MatmulReadsAndWritesBf16Storage) {
  // The CUDA matmul takes bf16 operands to the tensor cores as stored and
  // rounds its fp32 accumulators once into the bf16 result (no widened
  // copies): against the CPU's fp32 product of the same bf16 values,
  // rounded. A linear layer over every token, a batched product against a
  // broadcast operand, and a product broadcast over an inner batch
  // dimension (one call per batch).
  struct Case {
    std::vector<int64_t> lhs, rhs, out;
    bool transposeRhs;
  };
  for (const Case &c : {Case{{2, 7, 40}, {40, 24}, {2, 7, 24}, false},
                        Case{{3, 16, 32}, {1, 24, 32}, {3, 16, 24}, true},
                        Case{{2, 3, 8, 16}, {2, 1, 16, 8}, {2, 3, 8, 8},
                             false}}) {
    OpCase t("graph.cast");
    t.f32(c.lhs, 5, -2.0f, 2.0f);
    int32_t a = t.output(c.lhs, BF16);
    t.then("graph.cast");
    t.f32(c.rhs, 6, -2.0f, 2.0f);
    int32_t b = t.output(c.rhs, BF16);
    t.then("graph.matmul");
    t.input(a);
    t.input(b);
    int32_t y = t.output(c.out, BF16);
    t.setBool("transpose_rhs", c.transposeRhs);
    t.then("graph.cast");
    t.input(y);
    t.output(c.out);
    t.expectMatch(1e-2, 1e-3);
  }
}
