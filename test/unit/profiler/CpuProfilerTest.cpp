//===- CpuProfilerTest.cpp - Quick real profiles of this machine ----------===//
//
// These measure for real, on the quick grid and with short measurements, so
// they check what holds on any machine however loaded: every point is
// measured, times grow with the work by far more than noise (the quick
// grid's corners differ 4096-fold in FLOPs, its collective sizes 256-fold),
// and what is measured reads back from the text format.
//
//===----------------------------------------------------------------------===//

#include "cleave/runtime/profiler/CpuProfiler.h"

#include "cleave/cost_model/Collectives.h"
#include "cleave/cost_model/Profile.h"

#include "gtest/gtest.h"

#include <chrono>
#include <cmath>
#include <thread>
#include <cstdlib>
#include <sstream>
#include <unistd.h>

using namespace cleave;
using namespace cleave::profiler;

namespace {

CpuProfileOptions quickOptions() {
  CpuProfileOptions options;
  options.quick = true;
  options.ranks = 0;
  // Enough repeats per point that the median skips a batch another
  // process interrupted.
  options.secondsPerMeasurement = 0.01;
  return options;
}

bool mpirunOnPath() {
  const char *path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':'))
    if (!dir.empty() && access((dir + "/mpirun").c_str(), X_OK) == 0)
      return true;
  return false;
}

void expectReadsBack(const cost::Profile &profile,
                     const CpuProfileOptions &options) {
  std::string text = cost::formatProfile(profile, cpuProfileComment(options));
  absl::StatusOr<cost::Profile> read = cost::parseProfileText(text, "profile");
  ASSERT_TRUE(read.ok()) << read.status() << "\n" << text;
  auto near = [](double a, double b) {
    return std::fabs(a - b) <= 1e-11 * std::fabs(b);
  };
  ASSERT_EQ(read->memoryBandwidth.has_value(),
            profile.memoryBandwidth.has_value());
  if (profile.memoryBandwidth) {
    EXPECT_TRUE(near(*read->memoryBandwidth, *profile.memoryBandwidth));
  }
  ASSERT_EQ(read->sharedCoreEfficiency.has_value(),
            profile.sharedCoreEfficiency.has_value());
  if (profile.sharedCoreEfficiency) {
    EXPECT_TRUE(
        near(*read->sharedCoreEfficiency, *profile.sharedCoreEfficiency));
  }
  ASSERT_EQ(read->waitingRankLoad.has_value(),
            profile.waitingRankLoad.has_value());
  if (profile.waitingRankLoad) {
    EXPECT_NEAR(*read->waitingRankLoad, *profile.waitingRankLoad, 1e-11);
  }
  ASSERT_EQ(read->inStepCollectiveWait.has_value(),
            profile.inStepCollectiveWait.has_value());
  if (profile.inStepCollectiveWait) {
    EXPECT_TRUE(near(*read->inStepCollectiveWait,
                     *profile.inStepCollectiveWait));
  }
  ASSERT_EQ(read->collectiveWindowHidden.has_value(),
            profile.collectiveWindowHidden.has_value());
  if (profile.collectiveWindowHidden) {
    EXPECT_NEAR(*read->collectiveWindowHidden,
                *profile.collectiveWindowHidden, 1e-11);
  }
  ASSERT_EQ(read->intraNodeBusBandwidth.has_value(),
            profile.intraNodeBusBandwidth.has_value());
  if (profile.intraNodeBusBandwidth) {
    EXPECT_TRUE(
        near(*read->intraNodeBusBandwidth, *profile.intraNodeBusBandwidth));
  }
  const cost::GemmTable &table = profile.gemm.at(cost::DType::Fp32);
  const cost::GemmTable *readTable = read->findGemm(cost::DType::Fp32);
  ASSERT_NE(readTable, nullptr);
  EXPECT_EQ(readTable->ms(), table.ms());
  for (int64_t m : table.ms())
    for (int64_t n : table.ns())
      for (int64_t k : table.ks())
        EXPECT_TRUE(near(readTable->seconds(m, n, k), table.seconds(m, n, k)))
            << m << "x" << n << "x" << k;
  ASSERT_EQ(read->collectives.size(), profile.collectives.size());
  for (const auto &[key, curve] : profile.collectives) {
    const cost::CollectiveCurve *readCurve = read->findCollective(key);
    ASSERT_NE(readCurve, nullptr) << cost::collectiveName(key.kind);
    for (const cost::CollectiveSample &s : curve.samples())
      EXPECT_TRUE(near(readCurve->seconds(s.bytes), s.seconds));
  }
}

TEST(CpuProfilerTest, QuickProfileWithoutCollectives) {
  CpuProfileOptions options = quickOptions();
  int gemmLines = 0;
  options.progress = [&](const std::string &line) {
    if (line.rfind("gemm ", 0) == 0)
      ++gemmLines;
  };
  absl::StatusOr<cost::Profile> profile = profileCpu(options);
  ASSERT_TRUE(profile.ok()) << profile.status();

  const cost::GemmTable *table = profile->findGemm(cost::DType::Fp32);
  ASSERT_NE(table, nullptr);
  EXPECT_EQ(table->ms().size(), 3u);
  EXPECT_EQ(table->ns().size(), 3u);
  EXPECT_EQ(table->ks().size(), 3u);
  // Two rounds over the 27 shapes (a slow spell slows one round only).
  EXPECT_EQ(gemmLines, 2 * 27);
  // Measured times are noisy on a shared machine, so only what the table
  // guarantees is checked: every grid time is positive and finite, and a
  // point between two grid points interpolates between their times.
  auto grid = [&](int64_t d) { return table->seconds(d, d, d); };
  for (int64_t d : {32, 64, 128, 256, 512, 1024}) {
    double seconds = grid(d);
    EXPECT_GT(seconds, 0) << d;
    EXPECT_TRUE(std::isfinite(seconds)) << d;
  }
  int64_t lo = table->ms()[0], hi = table->ms()[1];
  double between = table->seconds((lo + hi) / 2, lo, lo);
  double a = table->seconds(lo, lo, lo), b = table->seconds(hi, lo, lo);
  EXPECT_GE(between, std::min(a, b) * (1 - 1e-9));
  EXPECT_LE(between, std::max(a, b) * (1 + 1e-9));

  ASSERT_TRUE(profile->memoryBandwidth.has_value());
  EXPECT_GT(*profile->memoryBandwidth, 0);
  ASSERT_TRUE(profile->kernelOverhead.has_value());
  EXPECT_GT(*profile->kernelOverhead, 0);
  EXPECT_FALSE(profile->intraNodeBusBandwidth.has_value());
  EXPECT_TRUE(profile->collectives.empty());
  expectReadsBack(*profile, options);
}

TEST(CpuProfilerTest, QuickProfileWithTwoMpiRanks) {
  if (!mpirunOnPath())
    GTEST_SKIP() << "mpirun is not on PATH; collectives are not measured";
  CpuProfileOptions options = quickOptions();
  options.ranks = 2;
  options.mpiWorker = CLEAVE_PROFILE_MPI_WORKER;
  std::vector<std::string> lines;
  options.progress = [&](const std::string &line) { lines.push_back(line); };
  absl::StatusOr<cost::Profile> profile = profileCpu(options);
  ASSERT_TRUE(profile.ok()) << profile.status();

  EXPECT_EQ(profile->collectives.size(), 6u);
  const cost::CollectiveCurve *allReduce =
      profile->findCollective({cost::Collective::AllReduce, 2, 2, 1});
  ASSERT_NE(allReduce, nullptr);
  const std::vector<cost::CollectiveSample> &samples = allReduce->samples();
  ASSERT_EQ(samples.size(), 3u); // 1 KiB, 16 KiB, 256 KiB
  EXPECT_EQ(samples.front().bytes, 1024);
  EXPECT_EQ(samples.back().bytes, 256 * 1024);
  EXPECT_LT(samples.front().seconds, samples.back().seconds);
  EXPECT_LT(allReduce->seconds(2048), allReduce->seconds(1 << 20));
  EXPECT_TRUE(profile->findCollective({cost::Collective::SendRecv, 2, 2, 1}));
  ASSERT_TRUE(profile->intraNodeBusBandwidth.has_value());
  EXPECT_GT(*profile->intraNodeBusBandwidth, 0);
  bool sawAllReduce = false;
  for (const std::string &line : lines)
    sawAllReduce |= line.rfind("all-reduce 256 KiB: ", 0) == 0;
  EXPECT_TRUE(sawAllReduce);
  // MPI has no progress engine on CPU ranks, with a core each or not: the
  // share of ZeRO's window the compute hides is measured either way.
  ASSERT_TRUE(profile->collectiveWindowHidden.has_value());
  EXPECT_GE(*profile->collectiveWindowHidden, 0.0);
  EXPECT_LE(*profile->collectiveWindowHidden, 1.0);
  expectReadsBack(*profile, options);
}

TEST(CpuProfilerTest, RanksBeyondTheCoresMeasureSharing) {
  if (!mpirunOnPath())
    GTEST_SKIP() << "mpirun is not on PATH; collectives are not measured";
  int cores = static_cast<int>(std::thread::hardware_concurrency());
  if (cores < 1 || cores > 4)
    GTEST_SKIP() << "a rank more than the " << cores
                 << " cores would make this test slow";
  CpuProfileOptions options = quickOptions();
  options.ranks = cores + 1;
  options.mpiWorker = CLEAVE_PROFILE_MPI_WORKER;
  absl::StatusOr<cost::Profile> profile = profileCpu(options);
  ASSERT_TRUE(profile.ok()) << profile.status();
  ASSERT_TRUE(profile->sharedCoreEfficiency.has_value());
  // Sharing cannot beat the cores running alone by much, nor (on an idle
  // machine) cost most of them.
  EXPECT_GT(*profile->sharedCoreEfficiency, 0.2);
  EXPECT_LT(*profile->sharedCoreEfficiency, 1.5);
  ASSERT_TRUE(profile->waitingRankLoad.has_value());
  EXPECT_GE(*profile->waitingRankLoad, 0.0);
  EXPECT_LE(*profile->waitingRankLoad, 1.0);
  // A collective between compute takes at least its time alone.
  ASSERT_TRUE(profile->inStepCollectiveWait.has_value());
  EXPECT_GE(*profile->inStepCollectiveWait, 0.0);
  EXPECT_FALSE(profile->inStepCollectiveSlowdown.has_value());
  ASSERT_TRUE(profile->collectiveWindowHidden.has_value());
  expectReadsBack(*profile, options);

  // With a core each there is nothing to share.
  if (cores >= 2) {
    options.ranks = 2;
    absl::StatusOr<cost::Profile> own = profileCpu(options);
    ASSERT_TRUE(own.ok()) << own.status();
    EXPECT_FALSE(own->sharedCoreEfficiency.has_value());
    EXPECT_FALSE(own->waitingRankLoad.has_value());
    EXPECT_FALSE(own->inStepCollectiveWait.has_value());
  }
}

TEST(CpuProfilerTest, MissingWorkerIsNamed) {
  CpuProfileOptions options = quickOptions();
  options.ranks = 2;
  options.mpiWorker = "/nonexistent/cleave-profile-mpi";
  absl::StatusOr<cost::Profile> profile = profileCpu(options);
  ASSERT_FALSE(profile.ok());
  EXPECT_EQ(profile.status().code(), absl::StatusCode::kNotFound);
  std::string message(profile.status().message());
  EXPECT_NE(message.find("/nonexistent/cleave-profile-mpi"), std::string::npos)
      << message;
  EXPECT_NE(message.find("build the cleave-profile-mpi target"),
            std::string::npos)
      << message;
}

TEST(CpuProfilerTest, MissingMpirunIsNamed) {
  CpuProfileOptions options = quickOptions();
  options.ranks = 2;
  options.mpiWorker = CLEAVE_PROFILE_MPI_WORKER;
  options.mpirun = "/nonexistent/mpirun";
  absl::StatusOr<cost::Profile> profile = profileCpu(options);
  ASSERT_FALSE(profile.ok());
  std::string message(profile.status().message());
  EXPECT_NE(message.find("/nonexistent/mpirun"), std::string::npos) << message;
}

TEST(CpuProfilerTest, StuckWorkerTimesOut) {
  if (!mpirunOnPath())
    GTEST_SKIP() << "mpirun is not on PATH; collectives are not measured";
  CpuProfileOptions options;
  options.ranks = 2;
  options.mpiWorker = CLEAVE_PROFILE_MPI_WORKER;
  // The full size range at a second a point cannot finish in 0.5 s.
  options.secondsPerMeasurement = 1;
  options.mpiTimeoutSeconds = 0.5;
  auto start = std::chrono::steady_clock::now();
  absl::StatusOr<cost::Profile> profile = profileCpu(options);
  double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  ASSERT_FALSE(profile.ok());
  EXPECT_EQ(profile.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_NE(profile.status().message().find(CLEAVE_PROFILE_MPI_WORKER),
            absl::string_view::npos)
      << profile.status();
  EXPECT_LT(elapsed, 10);
}

TEST(CpuProfilerTest, RejectsOneRank) {
  CpuProfileOptions options = quickOptions();
  options.ranks = 1;
  absl::StatusOr<cost::Profile> profile = profileCpu(options);
  ASSERT_FALSE(profile.ok());
  EXPECT_EQ(profile.status().code(), absl::StatusCode::kInvalidArgument);
}

} // namespace
