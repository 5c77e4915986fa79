//===- MatmulOpsTest.cpp - graph.matmul on cuBLASLt against the CPU -------===//

#include "CudaOpCase.h"

using namespace cleave::test;

namespace {

void matmulCase(std::vector<int64_t> lhs, std::vector<int64_t> rhs,
                std::vector<int64_t> out, bool tl, bool tr) {
  OpCase t("graph.matmul");
  t.f32(lhs, 1);
  t.f32(rhs, 2);
  t.output(out);
  t.setBool("transpose_lhs", tl).setBool("transpose_rhs", tr);
  // fp32 on both sides; only the summation order differs.
  t.expectMatch(1e-4, 1e-5);
}

} // namespace

TEST_F(CudaOps, MatmulPlain) { matmulCase({33, 70}, {70, 45}, {33, 45}, false, false); }
TEST_F(CudaOps, MatmulTransposes) {
  matmulCase({70, 33}, {70, 45}, {33, 45}, true, false);
  matmulCase({33, 70}, {45, 70}, {33, 45}, false, true);
  matmulCase({70, 33}, {45, 70}, {33, 45}, true, true);
}
TEST_F(CudaOps, MatmulLinearLayerOverTokens) {
  // [B, S, H] x [H, F]: one taller product.
  matmulCase({4, 17, 64}, {64, 96}, {4, 17, 96}, false, false);
  matmulCase({4, 17, 64}, {96, 64}, {4, 17, 96}, false, true);
}
TEST_F(CudaOps, MatmulBatchedAttention) {
  // Scores [B, heads, S, D] x [B, heads, S, D]^T and the weighted sum.
  matmulCase({2, 4, 31, 16}, {2, 4, 31, 16}, {2, 4, 31, 31}, false, true);
  matmulCase({2, 4, 31, 31}, {2, 4, 31, 16}, {2, 4, 31, 16}, false, false);
  // A weight gradient: [B, S, H]^T x [B, S, F] summed over nothing (batched).
  matmulCase({3, 20, 8}, {3, 20, 12}, {3, 8, 12}, true, false);
}
TEST_F(CudaOps, MatmulSharedLhsAndBroadcastBatches) {
  matmulCase({5, 6}, {3, 6, 7}, {3, 5, 7}, false, false);
  matmulCase({2, 1, 5, 6}, {1, 3, 6, 7}, {2, 3, 5, 7}, false, false);
}
TEST_F(CudaOps, MatmulEmptyContraction) {
  matmulCase({4, 0}, {0, 5}, {4, 5}, false, false);
}

TEST_F(CudaOps, MatmulInBf16AndFp16AccumulatesInFp32) {
  // Rounded operands (8 and 11 significant bits), fp32 sums: close to the
  // CPU's fp32 product, not equal to it.
  for (int precision : {2, 3}) {
    OpCase t("graph.matmul");
    t.f32({4, 40, 64}, 1);
    t.f32({64, 48}, 2);
    t.output({4, 40, 48});
    t.setBool("transpose_lhs", false).setBool("transpose_rhs", false);
    bool gpu = setCudaGemmPrecision(precision);
    t.expectMatch(3e-2, 3e-2);
    if (gpu)
      setCudaGemmPrecision(0);
  }
}
