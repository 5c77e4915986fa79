//===- WorkerOutputTest.cpp - Reading the MPI worker's results ------------===//

#include "Measurements.h"

#include "gtest/gtest.h"

using namespace cleave;
using namespace cleave::profiler;

namespace {

TEST(WorkerOutputTest, ParsesResultLines) {
  absl::StatusOr<std::optional<WorkerResult>> result =
      parseWorkerLine("result reduce-scatter 65536 1.25e-05");
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_TRUE(result->has_value());
  EXPECT_EQ((*result)->kind, cost::Collective::ReduceScatter);
  EXPECT_EQ((*result)->bytes, 65536);
  EXPECT_DOUBLE_EQ((*result)->seconds, 1.25e-5);
}

TEST(WorkerOutputTest, IgnoresOtherLines) {
  for (const char *line :
       {"", "WARNING: There was an error initializing an OpenFabrics device.",
        "  results are below"}) {
    absl::StatusOr<std::optional<WorkerResult>> result = parseWorkerLine(line);
    ASSERT_TRUE(result.ok()) << line;
    EXPECT_FALSE(result->has_value()) << line;
  }
}

TEST(WorkerOutputTest, RejectsBadResultLines) {
  for (const char *line :
       {"result all-reduce 1024", "result gather 1024 1e-6",
        "result all-reduce 1 KiB 1e-6", "result all-reduce 1024 fast"}) {
    absl::StatusOr<std::optional<WorkerResult>> result = parseWorkerLine(line);
    ASSERT_FALSE(result.ok()) << line;
    EXPECT_NE(result.status().message().find("MPI worker"),
              absl::string_view::npos);
  }
}

std::vector<WorkerResult> oneOfEach(double bytes, double seconds) {
  std::vector<WorkerResult> results;
  for (cost::Collective kind :
       {cost::Collective::AllReduce, cost::Collective::AllGather,
        cost::Collective::ReduceScatter, cost::Collective::AllToAll,
        cost::Collective::Broadcast, cost::Collective::SendRecv})
    results.push_back({kind, bytes, seconds});
  return results;
}

TEST(WorkerOutputTest, KeysCurvesByGroupOnOneNode) {
  absl::StatusOr<std::map<cost::CollectiveKey, cost::CollectiveCurve>> curves =
      curvesFromResults(oneOfEach(1024, 1e-6), 4);
  ASSERT_TRUE(curves.ok()) << curves.status();
  EXPECT_EQ(curves->size(), 6u);
  EXPECT_TRUE(curves->count({cost::Collective::AllReduce, 4, 4, 1}));
  EXPECT_TRUE(curves->count({cost::Collective::AllToAll, 4, 4, 1}));
  // A send-recv is between two ranks whatever the number that ran.
  EXPECT_TRUE(curves->count({cost::Collective::SendRecv, 2, 2, 1}));
}

TEST(WorkerOutputTest, TakesTheMedianOfEachSizesRounds) {
  // Three rounds: 1 KiB at 2, 5 and 3 us, 4 KiB at 9, 3 and 4 us (odd
  // counts: the middle one); 16 KiB twice, at 10 and 20 us (the mean of
  // the two).
  std::vector<WorkerResult> results;
  for (double seconds : {2e-6, 5e-6, 3e-6})
    for (const WorkerResult &r : oneOfEach(1024, seconds))
      results.push_back(r);
  for (double seconds : {9e-6, 3e-6, 4e-6})
    for (const WorkerResult &r : oneOfEach(4096, seconds))
      results.push_back(r);
  for (double seconds : {10e-6, 20e-6})
    for (const WorkerResult &r : oneOfEach(16384, seconds))
      results.push_back(r);
  absl::StatusOr<std::map<cost::CollectiveKey, cost::CollectiveCurve>> curves =
      curvesFromResults(results, 4);
  ASSERT_TRUE(curves.ok()) << curves.status();
  const cost::CollectiveCurve &curve =
      curves->at({cost::Collective::ReduceScatter, 4, 4, 1});
  ASSERT_EQ(curve.samples().size(), 3u);
  EXPECT_DOUBLE_EQ(curve.seconds(1024), 3e-6);
  EXPECT_DOUBLE_EQ(curve.seconds(4096), 4e-6);
  EXPECT_DOUBLE_EQ(curve.seconds(16384), 15e-6);
}

TEST(WorkerOutputTest, MissingCollectiveIsAnError) {
  std::vector<WorkerResult> results = oneOfEach(1024, 1e-6);
  results.erase(results.begin() + 1); // all-gather
  absl::StatusOr<std::map<cost::CollectiveKey, cost::CollectiveCurve>> curves =
      curvesFromResults(results, 2);
  ASSERT_FALSE(curves.ok());
  EXPECT_NE(curves.status().message().find("all-gather"),
            absl::string_view::npos);
}

TEST(WorkerOutputTest, WaitingRankLoadFromTheWaitingGemms) {
  // Two multiplying ranks on two cores, two waiting: polling waits that
  // slow the multipliers by half take half a core each.
  EXPECT_DOUBLE_EQ(waitingRankLoad(1.5e-3, 1e-3, 4, 2), 0.5);
  // Three waiting beside one multiplier on one core: 1.3x is 0.1 each.
  EXPECT_NEAR(waitingRankLoad(1.3e-3, 1e-3, 4, 1), 0.1, 1e-12);
  // Noise either way stays within one core.
  EXPECT_DOUBLE_EQ(waitingRankLoad(0.9e-3, 1e-3, 4, 2), 0.0);
  EXPECT_DOUBLE_EQ(waitingRankLoad(9e-3, 1e-3, 4, 2), 1.0);
  // Nobody waits: nothing to take.
  EXPECT_DOUBLE_EQ(waitingRankLoad(2e-3, 1e-3, 2, 2), 0.0);
}

TEST(WorkerOutputTest, InStepWaitFromThePairedSteps) {
  // A 5 ms GEMM and a 0.2 ms gather took 5.7 ms together: the gather
  // waited 0.5 ms for the slowest rank. Noise below the two alone is no
  // wait.
  EXPECT_NEAR(inStepCollectiveWait(5.7e-3, 5e-3, 0.2e-3), 0.5e-3, 1e-12);
  EXPECT_DOUBLE_EQ(inStepCollectiveWait(5.1e-3, 5e-3, 0.2e-3), 0.0);
}

TEST(WorkerOutputTest, WindowHiddenShareFromTheWindowedSteps) {
  // 6 ms of GEMMs and a 2 ms reduce-scatter took 7 ms a step in the
  // window: half the reduce-scatter was hidden. As long as both alone (or
  // longer): none; as long as the GEMMs alone: all.
  EXPECT_NEAR(collectiveWindowHidden(7e-3, 6e-3, 2e-3), 0.5, 1e-12);
  EXPECT_DOUBLE_EQ(collectiveWindowHidden(8.5e-3, 6e-3, 2e-3), 0.0);
  EXPECT_DOUBLE_EQ(collectiveWindowHidden(5.9e-3, 6e-3, 2e-3), 1.0);
  // Nothing measured: nothing hidden.
  EXPECT_DOUBLE_EQ(collectiveWindowHidden(7e-3, 6e-3, 0), 0.0);
}

} // namespace
