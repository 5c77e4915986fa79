//===- OperatorCostTest.cpp - Roofline, GEMM efficiency, backward helpers -===//
//
// Expected times are computed here from the documented formulas and the
// datasheet figures (312 TFLOP/s, 2.039 TB/s), not read from the library.
//
//===----------------------------------------------------------------------===//

#include "cleave/cost_model/OperatorCost.h"

#include "cleave/cost_model/Profile.h"

#include "gtest/gtest.h"

#include <algorithm>

using namespace cleave::cost;

namespace {

Cluster a100() {
  absl::StatusOr<Cluster> c = parseCluster("dgx-a100-80g");
  EXPECT_TRUE(c.ok());
  return *c;
}

constexpr double kA100Bf16 = 312e12;
constexpr double kA100Bandwidth = 2.039e12 * 0.85; // achieved HBM
constexpr double kOverhead = 2e-6;

// OperatorCost.h's curve, written out with the A100 preset's parameters
// (gemm_max 0.82, half dim 32, a quarter of the memory time not overlapped).
double expectedEfficiency(double m, double n, double k, double bytesPerElem,
                          double peak) {
  double smallest = std::min({m, n, k});
  double size = smallest / (smallest + 32);
  double intensity = 2 * m * n * k / (bytesPerElem * (m * k + k * n + m * n));
  double balance = peak / kA100Bandwidth;
  return 1 / (1 / (0.82 * size) + 0.25 * balance / intensity);
}

OpCost mustEstimate(const Operator &op, const Cluster &cluster,
                    const Profile *profile = nullptr) {
  absl::StatusOr<OpCost> cost = estimateOperator(op, cluster, profile);
  EXPECT_TRUE(cost.ok()) << cost.status();
  return cost.ok() ? *cost : OpCost();
}

} // namespace

TEST(GemmCost, LargeBf16SaturatesBetween75And85PercentOfPeak) {
  Cluster c = a100();
  for (int64_t n : {8192, 16384}) {
    Gemm gemm{n, n, n, 1, DType::Bf16};
    OpCost cost = mustEstimate(gemm, c);
    double achieved = 2.0 * n * n * n / cost.seconds / kA100Bf16;
    EXPECT_GE(achieved, 0.75) << n;
    EXPECT_LE(achieved, 0.85) << n;
    EXPECT_FALSE(cost.memoryBound());
  }
}

TEST(GemmCost, ComputeBoundTimeIsTheRooflineFormula) {
  Cluster c = a100();
  double m = 4096, n = 8192, k = 2048;
  OpCost cost = mustEstimate(Gemm{4096, 8192, 2048, 1, DType::Bf16}, c);
  double efficiency = expectedEfficiency(m, n, k, 2, kA100Bf16);
  EXPECT_NEAR(cost.efficiency, efficiency, 1e-12);
  double expected = 2 * m * n * k / (kA100Bf16 * efficiency) + kOverhead;
  EXPECT_NEAR(cost.seconds, expected, expected * 1e-12);
}

TEST(GemmCost, EfficiencyRisesWithTheSmallestDimension) {
  Cluster c = a100();
  double previous = 0;
  for (int64_t small : {1, 8, 32, 128, 512, 2048, 8192}) {
    double e = gemmEfficiency(Gemm{small, 8192, 8192, 1, DType::Bf16}, c);
    EXPECT_GT(e, previous) << small;
    EXPECT_LE(e, c.efficiency.gemmMax);
    previous = e;
  }
  // A 1024^3 GEMM runs well below the large-GEMM rate.
  OpCost mid = mustEstimate(Gemm{1024, 1024, 1024, 1, DType::Bf16}, c);
  double achieved = 2.0 * 1024 * 1024 * 1024 / mid.seconds / kA100Bf16;
  EXPECT_GT(achieved, 0.4);
  EXPECT_LT(achieved, 0.7);
}

TEST(GemmCost, SkinnyGemmIsBandwidthBound) {
  Cluster c = a100();
  for (int64_t m : {1, 4, 16}) {
    Gemm gemm{m, 8192, 8192, 1, DType::Bf16};
    OpCost cost = mustEstimate(gemm, c);
    EXPECT_TRUE(cost.memoryBound()) << m;
    double bytes = 2.0 * (m * 8192.0 + 8192.0 * 8192 + m * 8192.0);
    double expected = bytes / kA100Bandwidth + kOverhead;
    EXPECT_NEAR(cost.seconds, expected, expected * 1e-12) << m;
  }
}

TEST(GemmCost, BatchMultipliesTheWork) {
  Cluster c = a100();
  OpCost one = mustEstimate(Gemm{2048, 2048, 2048, 1, DType::Bf16}, c);
  OpCost four = mustEstimate(Gemm{2048, 2048, 2048, 4, DType::Bf16}, c);
  EXPECT_NEAR(four.computeSeconds, 4 * one.computeSeconds,
              one.computeSeconds * 1e-12);
  EXPECT_NEAR(four.memorySeconds, 4 * one.memorySeconds,
              one.memorySeconds * 1e-12);
}

TEST(GemmCost, UnsupportedTypeAndBadShapeAreErrors) {
  Cluster c = a100();
  absl::StatusOr<OpCost> fp8 =
      estimateGemm(Gemm{1024, 1024, 1024, 1, DType::Fp8}, c);
  ASSERT_FALSE(fp8.ok());
  EXPECT_NE(std::string(fp8.status().message()).find("does not support fp8"),
            std::string::npos)
      << fp8.status();
  EXPECT_FALSE(estimateGemm(Gemm{0, 1024, 1024, 1, DType::Bf16}, c).ok());
  EXPECT_FALSE(estimateGemm(Gemm{8, 8, 8, -1, DType::Bf16}, c).ok());

  absl::StatusOr<Cluster> h100 = parseCluster("dgx-h100");
  ASSERT_TRUE(h100.ok());
  absl::StatusOr<OpCost> fp8OnH100 =
      estimateGemm(Gemm{8192, 8192, 8192, 1, DType::Fp8}, *h100);
  absl::StatusOr<OpCost> bf16OnH100 =
      estimateGemm(Gemm{8192, 8192, 8192, 1, DType::Bf16}, *h100);
  ASSERT_TRUE(fp8OnH100.ok() && bf16OnH100.ok());
  EXPECT_LT(fp8OnH100->seconds, 0.6 * bf16OnH100->seconds);
}

TEST(GenericCost, ElementwiseIsBandwidthBound) {
  Cluster c = a100();
  GenericOp add{/*flops=*/1e8, /*bytesRead=*/8e8, /*bytesWritten=*/4e8,
                DType::Fp32};
  OpCost cost = mustEstimate(add, c);
  EXPECT_TRUE(cost.memoryBound());
  double expected = 1.2e9 / kA100Bandwidth + kOverhead;
  EXPECT_NEAR(cost.seconds, expected, expected * 1e-12);
  EXPECT_NEAR(cost.computeSeconds, 1e8 / 19.5e12, 1e-18);
}

TEST(GenericCost, TensorCoreKernelsUseTheTypesPeak) {
  Cluster c = a100();
  GenericOp attention{/*flops=*/1e12, /*bytesRead=*/1e8,
                      /*bytesWritten=*/1e8, DType::Bf16,
                      /*tensorCores=*/true};
  OpCost cost = mustEstimate(attention, c);
  EXPECT_NEAR(cost.computeSeconds, 1e12 / (kA100Bf16 * 0.82), 1e-15);
  EXPECT_FALSE(estimateGeneric(GenericOp{1, 1, 1, DType::Fp8, true}, c).ok());
  EXPECT_FALSE(estimateGeneric(GenericOp{-1, 0, 0}, c).ok());
}

TEST(GemmBackward, TwoTransposedGemmsOfEqualWork) {
  Gemm forward{512, 1024, 2048, 3, DType::Bf16};
  std::array<Gemm, 2> backward = gemmBackward(forward);
  // dX[M,K] = dY[M,N] x W^T[N,K]
  EXPECT_EQ(backward[0].m, 512);
  EXPECT_EQ(backward[0].n, 2048);
  EXPECT_EQ(backward[0].k, 1024);
  // dW[K,N] = X^T[K,M] x dY[M,N]
  EXPECT_EQ(backward[1].m, 2048);
  EXPECT_EQ(backward[1].n, 1024);
  EXPECT_EQ(backward[1].k, 512);
  for (const Gemm &g : backward) {
    EXPECT_EQ(g.batch, 3);
    EXPECT_EQ(g.dtype, DType::Bf16);
    EXPECT_DOUBLE_EQ(g.flops(), forward.flops());
  }
}

TEST(GemmBackward, TrainingAddsBackwardAndRecomputation) {
  Cluster c = a100();
  Gemm square{4096, 4096, 4096, 1, DType::Bf16};
  OpCost forward = mustEstimate(square, c);
  absl::StatusOr<GemmTrainingCost> plain =
      estimateGemmTraining(square, /*recompute=*/false, c);
  absl::StatusOr<GemmTrainingCost> recomputed =
      estimateGemmTraining(square, /*recompute=*/true, c);
  ASSERT_TRUE(plain.ok() && recomputed.ok());
  // A square GEMM's transposes are the same shape: 3x and 4x the forward.
  EXPECT_NEAR(plain->seconds, 3 * forward.seconds, 1e-15);
  EXPECT_NEAR(recomputed->seconds, 4 * forward.seconds, 1e-15);
  EXPECT_EQ(plain->recompute.seconds, 0);

  Gemm skinny{16, 4096, 8192, 1, DType::Bf16};
  absl::StatusOr<GemmTrainingCost> training =
      estimateGemmTraining(skinny, false, c);
  ASSERT_TRUE(training.ok());
  double sum = 0;
  for (const Gemm &g : gemmBackward(skinny))
    sum += mustEstimate(g, c).seconds;
  EXPECT_NEAR(training->seconds, mustEstimate(skinny, c).seconds + sum, 1e-15);
}
