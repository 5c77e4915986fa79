//===- ProfileTest.cpp - Measured tables replace the formulas -------------===//
//
// Kernel times that follow a power law are straight lines in log space, so
// log-space interpolation must reproduce them exactly between grid points;
// that is the independent expectation the interpolation tests use.
//
//===----------------------------------------------------------------------===//

#include "cleave/cost_model/Profile.h"

#include "cleave/cost_model/Collectives.h"
#include "cleave/cost_model/OperatorCost.h"

#include "gtest/gtest.h"

#include <cmath>
#include <fstream>
#include <tuple>

using namespace cleave::cost;

namespace {

// A made-up kernel whose time is a power law in each dimension.
double powerLaw(double m, double n, double k) {
  return 1e-12 * std::pow(m, 0.9) * std::pow(n, 1.0) * std::pow(k, 1.1);
}

GemmTable powerLawTable() {
  std::vector<GemmSample> samples;
  for (int64_t m : {256, 1024, 4096})
    for (int64_t n : {256, 1024, 4096})
      for (int64_t k : {128, 2048})
        samples.push_back({m, n, k, powerLaw(m, n, k)});
  absl::StatusOr<GemmTable> table = GemmTable::create(samples);
  EXPECT_TRUE(table.ok()) << table.status();
  return *table;
}

Cluster a100() {
  absl::StatusOr<Cluster> c = parseCluster("dgx-a100-80g,nodes=2");
  EXPECT_TRUE(c.ok());
  return *c;
}

std::string errorOf(const std::string &text) {
  absl::StatusOr<Profile> profile = parseProfileText(text, "p.txt");
  EXPECT_FALSE(profile.ok()) << text;
  return profile.ok() ? "" : std::string(profile.status().message());
}

} // namespace

TEST(GemmTable, InterpolatesInLogSpace) {
  GemmTable table = powerLawTable();
  // On the grid and between grid points, in every axis at once.
  for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{1024, 256, 128},
                         {512, 700, 300},
                         {3000, 2000, 1000},
                         {4096, 4096, 2048}}) {
    double expected = powerLaw(m, n, k);
    EXPECT_NEAR(table.seconds(m, n, k), expected, expected * 1e-9)
        << m << "x" << n << "x" << k;
  }
}

TEST(GemmTable, KeepsTheFlopRateBeyondTheGrid) {
  GemmTable table = powerLawTable();
  // Twice the largest M: twice the time of the edge point.
  EXPECT_NEAR(table.seconds(8192, 1024, 2048), 2 * powerLaw(4096, 1024, 2048),
              1e-15);
  // Below the grid in two axes.
  EXPECT_NEAR(table.seconds(64, 128, 2048),
              powerLaw(256, 256, 2048) * (64.0 / 256) * (128.0 / 256), 1e-15);
}

TEST(GemmTable, RejectsIncompleteAndRepeatedGrids) {
  std::vector<GemmSample> samples = {
      {256, 256, 256, 1e-6}, {256, 512, 256, 2e-6}, {512, 256, 256, 2e-6}};
  absl::StatusOr<GemmTable> missing = GemmTable::create(samples);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(std::string(missing.status().message())
                .find("GEMM grid point 512x512x256 is missing"),
            std::string::npos)
      << missing.status();
  samples.push_back({512, 512, 256, 4e-6});
  EXPECT_TRUE(GemmTable::create(samples).ok());
  samples.push_back({512, 512, 256, 4e-6});
  EXPECT_FALSE(GemmTable::create(samples).ok());
  EXPECT_FALSE(GemmTable::create({{0, 1, 1, 1e-6}}).ok());
  EXPECT_FALSE(GemmTable::create({}).ok());
}

TEST(ProfiledCosts, GemmTableReplacesTheFormula) {
  Cluster c = a100();
  Profile profile;
  profile.gemm.emplace(DType::Bf16, powerLawTable());
  absl::StatusOr<OpCost> cost =
      estimateGemm(Gemm{512, 700, 300, 1, DType::Bf16}, c, &profile);
  ASSERT_TRUE(cost.ok());
  EXPECT_TRUE(cost->profiled);
  EXPECT_NEAR(cost->seconds, powerLaw(512, 700, 300), 1e-15);
  // A batch of 2 is looked up as 2 x M rows.
  absl::StatusOr<OpCost> batched =
      estimateGemm(Gemm{512, 700, 300, 2, DType::Bf16}, c, &profile);
  ASSERT_TRUE(batched.ok());
  EXPECT_NEAR(batched->seconds, powerLaw(1024, 700, 300), 1e-15);
  // Another dtype falls back to the formula.
  absl::StatusOr<OpCost> fp16 =
      estimateGemm(Gemm{512, 700, 300, 1, DType::Fp16}, c, &profile);
  ASSERT_TRUE(fp16.ok());
  EXPECT_FALSE(fp16->profiled);
}

TEST(ProfiledCosts, MeasuredBandwidthReplacesNominal) {
  Cluster c = a100();
  Profile profile;
  profile.memoryBandwidth = 1.5e12;
  profile.kernelOverhead = 3e-6;
  absl::StatusOr<OpCost> cost =
      estimateGeneric(GenericOp{0, 3e9, 0, DType::Fp32}, c, &profile);
  ASSERT_TRUE(cost.ok());
  EXPECT_NEAR(cost->seconds, 3e9 / 1.5e12 + 3e-6, 1e-15);
}

TEST(CollectiveCurve, InterpolatesAndExtends) {
  // Power law between samples; 10 us floor; 4 GB/s marginal at the end.
  std::vector<CollectiveSample> samples = {
      {1e3, 10e-6}, {1e6, 100e-6}, {1e9, 0.25}};
  absl::StatusOr<CollectiveCurve> curve = CollectiveCurve::create(samples);
  ASSERT_TRUE(curve.ok());
  // Between 1e3 and 1e6 the time is 10us x (bytes/1e3)^(1/3).
  EXPECT_NEAR(curve->seconds(1e4), 10e-6 * std::cbrt(10.0), 1e-15);
  EXPECT_NEAR(curve->seconds(1e6), 100e-6, 1e-15);
  EXPECT_DOUBLE_EQ(curve->seconds(10), 10e-6);
  double slope = (0.25 - 100e-6) / (1e9 - 1e6);
  EXPECT_NEAR(curve->seconds(3e9), 0.25 + 2e9 * slope, 1e-12);
  EXPECT_FALSE(CollectiveCurve::create({}).ok());
  EXPECT_FALSE(CollectiveCurve::create({{1e3, 1e-6}, {1e3, 2e-6}}).ok());
}

TEST(ProfiledCosts, CollectiveCurveReplacesTheFormula) {
  Cluster c = a100();
  Profile profile;
  absl::StatusOr<CollectiveCurve> curve =
      CollectiveCurve::create({{1e6, 50e-6}, {1e9, 5e-3}});
  ASSERT_TRUE(curve.ok());
  profile.collectives.emplace(CollectiveKey{Collective::AllReduce, 16, 8, 1},
                              *curve);
  Group all = Group::strided(0, 16);
  absl::StatusOr<CollectiveCost> cost =
      estimateCollective(Collective::AllReduce, 1e9, all, c, &profile);
  ASSERT_TRUE(cost.ok());
  EXPECT_TRUE(cost->profiled);
  EXPECT_DOUBLE_EQ(cost->seconds, 5e-3);
  // Another group shape, or a forced algorithm, uses the formulas.
  absl::StatusOr<CollectiveCost> half = estimateCollective(
      Collective::AllReduce, 1e9, Group::strided(0, 8), c, &profile);
  ASSERT_TRUE(half.ok());
  EXPECT_FALSE(half->profiled);
  CollectiveOptions ring;
  ring.algorithm = Algorithm::Ring;
  absl::StatusOr<CollectiveCost> forced =
      estimateCollective(Collective::AllReduce, 1e9, all, c, &profile, ring);
  ASSERT_TRUE(forced.ok());
  EXPECT_FALSE(forced->profiled);
}

TEST(ProfileFile, DocumentedExampleParses) {
  std::string path = std::string(CLEAVE_SOURCE_DIR) + "/docs/cluster-format.md";
  std::ifstream in(path);
  std::string line, text;
  int blocks = 0;
  bool inside = false;
  while (std::getline(in, line)) {
    if (line == "```ini") {
      inside = ++blocks == 2; // the second block is the profile
      continue;
    }
    if (line == "```")
      inside = false;
    else if (inside)
      text += line + "\n";
  }
  absl::StatusOr<Profile> profile = parseProfileText(text, path);
  ASSERT_TRUE(profile.ok()) << profile.status();
  EXPECT_DOUBLE_EQ(*profile->memoryBandwidth, 1.75e12);
  EXPECT_DOUBLE_EQ(*profile->intraNodeBusBandwidth, 228e9);
  EXPECT_DOUBLE_EQ(*profile->nicBandwidth, 23.6e9);
  EXPECT_DOUBLE_EQ(*profile->kernelOverhead, 2.5e-6);
  const GemmTable *gemm = profile->findGemm(DType::Bf16);
  ASSERT_NE(gemm, nullptr);
  EXPECT_NEAR(gemm->seconds(1024, 1024, 1024), 11e-6, 1e-15);
  EXPECT_NEAR(gemm->seconds(4096, 4096, 4096), 540e-6, 1e-15);
  const CollectiveCurve *curve =
      profile->findCollective(CollectiveKey{Collective::AllReduce, 16, 8, 1});
  ASSERT_NE(curve, nullptr);
  EXPECT_NEAR(curve->seconds(16.0 * 1024 * 1024), 230e-6, 1e-15);
}

TEST(ProfiledCosts, SharedCoresCostTheirMeasuredEfficiency) {
  // Four ranks on two cores: each op takes twice as long as alone, and
  // divided by the measured efficiency of cores running more ranks.
  absl::StatusOr<Cluster> c = parseCluster("cpu-local,devices=4,cores=2");
  ASSERT_TRUE(c.ok());
  Profile profile;
  profile.gemm.emplace(DType::Fp32, powerLawTable());
  Gemm gemm{512, 700, 300, 1, DType::Fp32};
  absl::StatusOr<OpCost> split = estimateGemm(gemm, *c, &profile);
  ASSERT_TRUE(split.ok());
  EXPECT_NEAR(split->seconds, 2 * powerLaw(512, 700, 300), 1e-15);
  profile.sharedCoreEfficiency = 0.8;
  absl::StatusOr<OpCost> shared = estimateGemm(gemm, *c, &profile);
  ASSERT_TRUE(shared.ok());
  EXPECT_NEAR(shared->seconds, 2 * powerLaw(512, 700, 300) / 0.8, 1e-15);
  absl::StatusOr<OpCost> generic =
      estimateGeneric(GenericOp{0, 3e9, 0, DType::Fp32}, *c, &profile);
  ASSERT_TRUE(generic.ok());
  profile.sharedCoreEfficiency.reset();
  absl::StatusOr<OpCost> plain =
      estimateGeneric(GenericOp{0, 3e9, 0, DType::Fp32}, *c, &profile);
  ASSERT_TRUE(plain.ok());
  EXPECT_NEAR(generic->memorySeconds, plain->memorySeconds / 0.8, 1e-15);
  // Ranks with a core each share nothing.
  absl::StatusOr<Cluster> own = parseCluster("cpu-local,devices=2,cores=2");
  ASSERT_TRUE(own.ok());
  profile.sharedCoreEfficiency = 0.8;
  absl::StatusOr<OpCost> alone = estimateGemm(gemm, *own, &profile);
  ASSERT_TRUE(alone.ok());
  EXPECT_NEAR(alone->seconds, powerLaw(512, 700, 300), 1e-15);
}

TEST(ProfileFile, SharedCoreEfficiencyReadsBack) {
  absl::StatusOr<Profile> p = parseProfileText(
      "[compute]\nshared_core_efficiency = 0.71\n", "p.txt");
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE(p->sharedCoreEfficiency);
  EXPECT_DOUBLE_EQ(*p->sharedCoreEfficiency, 0.71);
  absl::StatusOr<Profile> again = parseProfileText(formatProfile(*p), "q.txt");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_NEAR(*again->sharedCoreEfficiency, 0.71, 1e-12);
  EXPECT_NE(errorOf("[compute]\nshared_core_efficiency = 0\n")
                .find("p.txt:2: bad value '0' for key "
                      "'shared_core_efficiency'"),
            std::string::npos);
  EXPECT_NE(errorOf("[compute]\nflops = 1\n")
                .find("p.txt:2: unknown key 'compute.flops'"),
            std::string::npos);
}

TEST(ProfileFile, WaitingRankLoadReadsBack) {
  absl::StatusOr<Profile> p = parseProfileText(
      "[compute]\nshared_core_efficiency = 0.9\nwaiting_rank_load = 0.45\n",
      "p.txt");
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE(p->waitingRankLoad);
  EXPECT_DOUBLE_EQ(*p->waitingRankLoad, 0.45);
  absl::StatusOr<Profile> again = parseProfileText(formatProfile(*p), "q.txt");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_NEAR(*again->waitingRankLoad, 0.45, 1e-12);
  EXPECT_NEAR(*again->sharedCoreEfficiency, 0.9, 1e-12);
  // A share of one core: 0 is allowed (waits that sleep), above 1 is not.
  EXPECT_TRUE(parseProfileText("[compute]\nwaiting_rank_load = 0\n", "p.txt")
                  .ok());
  EXPECT_NE(errorOf("[compute]\nwaiting_rank_load = 1.5\n")
                .find("p.txt:2: bad value '1.5' for key 'waiting_rank_load': "
                      "expected a fraction from 0 to 1"),
            std::string::npos);
}

TEST(ProfileFile, InStepCollectiveSlowdownReadsBack) {
  absl::StatusOr<Profile> p = parseProfileText(
      "[compute]\nin_step_collective_slowdown = 2.5\n", "p.txt");
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE(p->inStepCollectiveSlowdown);
  EXPECT_DOUBLE_EQ(*p->inStepCollectiveSlowdown, 2.5);
  absl::StatusOr<Profile> again = parseProfileText(formatProfile(*p), "q.txt");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_NEAR(*again->inStepCollectiveSlowdown, 2.5, 1e-12);
  // A collective between compute takes at least its time alone.
  EXPECT_NE(errorOf("[compute]\nin_step_collective_slowdown = 0.5\n")
                .find("p.txt:2: bad value '0.5' for key "
                      "'in_step_collective_slowdown': expected a factor from "
                      "1 to 1000"),
            std::string::npos);
}

TEST(ProfileFile, CollectiveWindowHiddenReadsBack) {
  absl::StatusOr<Profile> p = parseProfileText(
      "[compute]\ncollective_window_hidden = 0.05\n", "p.txt");
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE(p->collectiveWindowHidden);
  EXPECT_DOUBLE_EQ(*p->collectiveWindowHidden, 0.05);
  absl::StatusOr<Profile> again = parseProfileText(formatProfile(*p), "q.txt");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_NEAR(*again->collectiveWindowHidden, 0.05, 1e-12);
  // A share of the window's time: 0 (all stalls) and 1 (all hidden) are
  // allowed, beyond them is not.
  EXPECT_TRUE(
      parseProfileText("[compute]\ncollective_window_hidden = 1\n", "p.txt")
          .ok());
  EXPECT_NE(errorOf("[compute]\ncollective_window_hidden = 1.2\n")
                .find("p.txt:2: bad value '1.2' for key "
                      "'collective_window_hidden': expected a fraction from "
                      "0 to 1"),
            std::string::npos);
}

TEST(ProfileFile, InStepCollectiveWaitReadsBack) {
  absl::StatusOr<Profile> p = parseProfileText(
      "[compute]\nin_step_collective_wait = 450 us\n", "p.txt");
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE(p->inStepCollectiveWait);
  EXPECT_DOUBLE_EQ(*p->inStepCollectiveWait, 450e-6);
  absl::StatusOr<Profile> again = parseProfileText(formatProfile(*p), "q.txt");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_NEAR(*again->inStepCollectiveWait, 450e-6, 1e-15);
  EXPECT_NE(errorOf("[compute]\nin_step_collective_wait = -1 ms\n")
                .find("p.txt:2: bad value '-1 ms' for key "
                      "'in_step_collective_wait': expected a time from 0 to "
                      "10 s"),
            std::string::npos);
}

TEST(ProfileFile, ErrorsNameFileAndLine) {
  EXPECT_NE(errorOf("[gemm bf16]\n1024x1024 = 1 us\n")
                .find("p.txt:2: bad GEMM shape '1024x1024'"),
            std::string::npos);
  EXPECT_NE(errorOf("[gemm bf17]\n8x8x8 = 1 us\n")
                .find("p.txt:1: unknown dtype 'bf17'"),
            std::string::npos);
  EXPECT_NE(errorOf("[gemm fp16]\n8x8x8 = 1 us\n16x8x8 = 2 us\n8x16x8 = 2 "
                    "us\n")
                .find("p.txt:1: GEMM grid point 16x16x8 is missing"),
            std::string::npos);
  EXPECT_NE(errorOf("[bandwidth]\nmemory = fast\n")
                .find("p.txt:2: bad value 'fast' for key 'memory'"),
            std::string::npos);
  EXPECT_NE(errorOf("[bandwidth]\nhbm = 1 TB/s\n")
                .find("p.txt:2: unknown key 'bandwidth.hbm'"),
            std::string::npos);
  EXPECT_NE(errorOf("[collective all-reduce ranks=8]\n1 MB = 1 us\n")
                .find("p.txt:1: a collective section needs"),
            std::string::npos);
  EXPECT_NE(errorOf("[collective all-sum ranks=8 ranks_per_node=8]\n"
                    "1 MB = 1 us\n")
                .find("p.txt:1: unknown collective 'all-sum'"),
            std::string::npos);
  EXPECT_NE(errorOf("[collective broadcast ranks=8 ranks_per_node=8]\n"
                    "1 MB = soon\n")
                .find("p.txt:2: expected 'SIZE = TIME'"),
            std::string::npos);
  // A bad or repeated sample is reported on its own line, not its table's
  // header.
  EXPECT_NE(errorOf("[gemm fp32]\n8x8x8 = 1 us\n16x8x8 = 0 us\n")
                .find("p.txt:3: GEMM sample 16x8x8 needs positive dimensions "
                      "and time"),
            std::string::npos);
  EXPECT_NE(errorOf("[gemm fp32]\n8x8x8 = 1 us\n\n8x8x8 = 2 us\n")
                .find("p.txt:4: GEMM sample 8x8x8 appears twice (first on "
                      "line 2)"),
            std::string::npos);
  EXPECT_NE(errorOf("[collective all-gather ranks=4 ranks_per_node=4]\n"
                    "1 KiB = 5 us\n1 MiB = 0 us\n")
                .find("p.txt:3: collective sample '1 MiB = 0 us' needs "
                      "positive size and time"),
            std::string::npos);
  EXPECT_NE(errorOf("[collective all-gather ranks=4 ranks_per_node=4]\n"
                    "1 KiB = 5 us\n1024 B = 6 us\n")
                .find("p.txt:3: collective sample of 1024 B appears twice in "
                      "this table (first on line 2)"),
            std::string::npos);
  EXPECT_NE(errorOf("[kernels]\nx = 1\n").find("p.txt:1: unknown section"),
            std::string::npos);
  EXPECT_NE(errorOf("memory = 1 TB/s\n").find("p.txt:1: a profile entry"),
            std::string::npos);
}
