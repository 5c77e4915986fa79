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
#include <cmath>

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

namespace {

Cluster h100() {
  absl::StatusOr<Cluster> c = parseCluster("dgx-h100");
  EXPECT_TRUE(c.ok());
  return *c;
}

/// TFLOP/s a fused attention kernel of the H100 preset reaches forward
/// (compute-bound: bytes left out).
double attentionRate(const Cluster &c, double seq, double headDim,
                     bool causal, bool backward = false) {
  GenericOp op;
  op.flops = 1e15;
  op.dtype = DType::Bf16;
  op.tensorCores = true;
  op.backwardPass = backward;
  op.attentionSeq = seq;
  op.attentionHeadDim = headDim;
  op.attentionCausal = causal;
  OpCost cost = mustEstimate(op, c);
  return op.flops / cost.seconds / 1e12;
}

} // namespace

// The preset's attention curve against the points it was fitted to, the
// cuDNN rows of the FlashAttention-3 paper's forward figure (H100 SXM5,
// bf16, TFLOP/s at sequence 512 ... 16k): within 12% everywhere, 5% on
// average, rising with the sequence, lower for causal masks and small heads.
TEST(AttentionCost, HopperCurveFollowsPublishedCudnnRates) {
  Cluster c = h100();
  const double seqs[] = {512, 1024, 2048, 4096, 8192, 16384};
  struct Row {
    double headDim;
    bool causal;
    double tflops[6];
  } rows[] = {{128, true, {315, 410, 484, 518, 529, 539}},
              {128, false, {497, 574, 617, 609, 600, 595}},
              {64, true, {225, 288, 334, 363, 379, 388}},
              {64, false, {335, 373, 395, 408, 412, 413}},
              {256, true, {308, 391, 450, 483, 497, 509}},
              {256, false, {470, 546, 580, 581, 580, 581}}};
  double sum = 0;
  int count = 0;
  for (const Row &row : rows) {
    double previous = 0;
    for (int i = 0; i < 6; ++i) {
      double rate = attentionRate(c, seqs[i], row.headDim, row.causal);
      double error = std::abs(rate - row.tflops[i]) / row.tflops[i];
      EXPECT_LT(error, 0.12) << "head " << row.headDim << " causal "
                             << row.causal << " seq " << seqs[i] << ": "
                             << rate << " against " << row.tflops[i];
      EXPECT_GT(rate, previous);
      previous = rate;
      sum += error;
      ++count;
    }
  }
  EXPECT_LT(sum / count, 0.05);
  EXPECT_LT(attentionRate(c, 4096, 128, true), attentionRate(c, 4096, 128, false));
  EXPECT_LT(attentionRate(c, 4096, 64, true), attentionRate(c, 4096, 128, true));
  // Backward: 0.82 of forward (cuDNN 9.1's ratio).
  EXPECT_NEAR(attentionRate(c, 4096, 128, true, true) /
                  attentionRate(c, 4096, 128, true),
              0.82, 1e-5);
  // Without a shape (a cluster file's single rate) the rate is flat.
  EXPECT_NEAR(attentionRate(c, 0, 0, true), 585, 0.01); // + kernel overhead
}

// The H100 preset's GEMM curve against published kernel times: 16 of the
// 375 bf16 shapes of OpenXLA's H100 table (xla/service/gpu/model/
// matmul_interpolator_data.h, "sm_90": CUPTI kernel durations, so the
// launch gap, kernel_overhead, is not in them), from the best-fed to
// latency-bound ones. The preset's curve was fitted to the whole table
// (mean error 6.9%); the hand-chosen curve before priced these 2.6x too
// fast on average (the 256^3 GEMM 39x).
TEST(GemmCost, HopperCurveFollowsPublishedKernelTimes) {
  Cluster c = h100();
  struct Shape {
    int64_t batch, m, n, k;
    double tflops;
  } shapes[] = {{1, 4096, 4096, 4096, 783.3}, {2, 4096, 2048, 4096, 783.2},
                {4, 2048, 2048, 2048, 725.7}, {1, 2048, 2048, 2048, 632.0},
                {1, 1024, 2048, 2048, 524.3}, {1, 4096, 512, 1024, 370.8},
                {1, 256, 4096, 2048, 324.6},  {1, 1024, 1024, 2048, 350.0},
                {4, 4096, 4096, 256, 503.9},  {1, 4096, 4096, 256, 392.2},
                {2, 512, 512, 2048, 216.5},   {1, 512, 256, 4096, 91.1},
                {4, 256, 256, 4096, 171.6},   {1, 1024, 256, 1024, 68.3},
                {1, 256, 256, 256, 6.5},      {4, 1024, 256, 1024, 218.2}};
  double sum = 0;
  for (const Shape &s : shapes) {
    Gemm gemm{s.m, s.n, s.k, s.batch, DType::Bf16};
    OpCost cost = mustEstimate(gemm, c);
    double kernel = cost.seconds - c.efficiency.kernelOverhead;
    double rate = gemm.flops() / kernel / 1e12;
    double error = std::abs(rate - s.tflops) / s.tflops;
    EXPECT_LT(error, 0.45) << s.batch << " x " << s.m << " x " << s.n << " x "
                           << s.k << ": " << rate << " against " << s.tflops;
    sum += error;
  }
  EXPECT_LT(sum / std::size(shapes), 0.10);
}

// A 16-bit GEMM whose inner or output dimension is not a multiple of 8
// runs at 272.73/398.38 of its aligned neighbour on the H100 preset
// (ml-engineering's K = 10922 against 10944); fp32 and the A100 preset
// (no published figure) are not penalised.
TEST(GemmCost, MisalignedSixteenBitGemmIsSlowerOnHopper) {
  Cluster c = h100();
  auto rate = [&](const Cluster &cluster, int64_t k, DType t) {
    Gemm gemm{4096, 4096, k, 4, t};
    return gemm.flops() / mustEstimate(gemm, cluster).seconds;
  };
  double aligned = rate(c, 10944, DType::Fp16);
  double misaligned = rate(c, 10922, DType::Fp16);
  EXPECT_NEAR(misaligned / aligned, 272.73 / 398.38, 0.01);
  Gemm vocab{4096, 50257, 768, 1, DType::Bf16}, padded{4096, 50304, 768, 1,
                                                      DType::Bf16};
  EXPECT_LT(vocab.flops() / mustEstimate(vocab, c).seconds,
            0.75 * padded.flops() / mustEstimate(padded, c).seconds);
  EXPECT_NEAR(rate(c, 10922, DType::Fp32) / rate(c, 10944, DType::Fp32), 1,
              0.01);
  EXPECT_NEAR(rate(a100(), 10922, DType::Fp16) / rate(a100(), 10944, DType::Fp16),
              1, 0.01);
}
