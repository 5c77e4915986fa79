//===- ProfileFormatTest.cpp - formatProfile reads back -------------------===//
//
// The writer lives in the cost model, next to the parser; the profiler is
// its first user, so its round trip is checked here on a profile with every
// field, including sizes that are not whole KiB.
//
//===----------------------------------------------------------------------===//

#include "cleave/cost_model/Profile.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace cleave::cost;

namespace {

void expectNear(double actual, double expected) {
  EXPECT_NEAR(actual, expected, 1e-11 * std::fabs(expected));
}

TEST(ProfileFormatTest, EveryFieldReadsBack) {
  Profile profile;
  profile.memoryBandwidth = 12.3456789e9;
  profile.intraNodeBusBandwidth = 3.21e9;
  profile.nicBandwidth = 23.6e9;
  profile.kernelOverhead = 41.7e-9;
  profile.sharedCoreEfficiency = 0.931;
  profile.waitingRankLoad = 0.237;
  profile.collectiveWindowHidden = 0.0625;
  std::vector<GemmSample> samples;
  for (int64_t m : {64, 256})
    for (int64_t n : {32, 512})
      for (int64_t k : {128, 1024, 2048})
        samples.push_back({m, n, k, 1e-11 * m * n * k + 1.234567e-6});
  absl::StatusOr<GemmTable> table = GemmTable::create(samples);
  ASSERT_TRUE(table.ok()) << table.status();
  profile.gemm.emplace(DType::Fp32, *table);
  absl::StatusOr<CollectiveCurve> curve =
      CollectiveCurve::create({{1020, 2.5e-6}, {64 << 20, 0.0123}, {3e9, 1.5}});
  ASSERT_TRUE(curve.ok()) << curve.status();
  profile.collectives.emplace(CollectiveKey{Collective::AllGather, 3, 3, 1},
                              *curve);
  profile.collectives.emplace(CollectiveKey{Collective::AllReduce, 16, 8, 2},
                              *curve);

  std::string text = formatProfile(profile, "first line\n\nthird # line");
  EXPECT_EQ(text.rfind("# first line\n#\n# third # line\n", 0), 0u) << text;
  EXPECT_NE(text.find("64 MiB = "), std::string::npos) << text;
  absl::StatusOr<Profile> read = parseProfileText(text, "written");
  ASSERT_TRUE(read.ok()) << read.status() << "\n" << text;

  expectNear(*read->memoryBandwidth, *profile.memoryBandwidth);
  expectNear(*read->intraNodeBusBandwidth, *profile.intraNodeBusBandwidth);
  expectNear(*read->nicBandwidth, *profile.nicBandwidth);
  expectNear(*read->kernelOverhead, *profile.kernelOverhead);
  expectNear(*read->sharedCoreEfficiency, *profile.sharedCoreEfficiency);
  expectNear(*read->waitingRankLoad, *profile.waitingRankLoad);
  expectNear(*read->collectiveWindowHidden, *profile.collectiveWindowHidden);
  const GemmTable *readTable = read->findGemm(DType::Fp32);
  ASSERT_NE(readTable, nullptr);
  for (const GemmSample &s : samples)
    expectNear(readTable->seconds(s.m, s.n, s.k), s.seconds);
  ASSERT_EQ(read->collectives.size(), 2u);
  for (const auto &[key, written] : profile.collectives) {
    const CollectiveCurve *readCurve = read->findCollective(key);
    ASSERT_NE(readCurve, nullptr) << collectiveName(key.kind);
    ASSERT_EQ(readCurve->samples().size(), written.samples().size());
    for (size_t i = 0; i < written.samples().size(); ++i) {
      expectNear(readCurve->samples()[i].bytes, written.samples()[i].bytes);
      expectNear(readCurve->samples()[i].seconds, written.samples()[i].seconds);
    }
  }
}

TEST(ProfileFormatTest, EmptyProfileIsEmptyText) {
  EXPECT_EQ(formatProfile(Profile()), "");
  absl::StatusOr<Profile> read = parseProfileText("", "empty");
  ASSERT_TRUE(read.ok()) << read.status();
}

} // namespace
