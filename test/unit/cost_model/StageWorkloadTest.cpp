//===- StageWorkloadTest.cpp - Pipeline plans scored from chunks' work ----===//
//
// Expected values from the 1F1B schedule's own arithmetic: p stages of
// equal passes f + b run m microbatches in (m + p - 1)(f + b) at least
// m (f + b), and stage s holds the stashes of min(p - s, m) microbatches.
//
//===----------------------------------------------------------------------===//

#include "cleave/cost_model/StageWorkload.h"

#include "cleave/cost_model/Cluster.h"

#include <gtest/gtest.h>

using namespace cleave::cost;

namespace {

Cluster cluster() {
  absl::StatusOr<Cluster> c = parseCluster("dgx-a100-80g");
  EXPECT_TRUE(c.ok());
  return *c;
}

/// p stages of one chunk each, equal passes, nothing sent or reduced.
StageWorkload equalChunks(int64_t p, int64_t m, double stash) {
  StageWorkload w;
  w.microbatches = m;
  w.trainingFlops = 1e12;
  for (int64_t c = 0; c < p; ++c) {
    ChunkWorkload chunk;
    chunk.blocks = 3;
    chunk.forwardSeconds = 0.010;
    chunk.backwardSeconds = 0.020;
    chunk.activationBytes = stash;
    w.chunks.push_back(chunk);
  }
  return w;
}

ParallelConfig pipeline(int64_t p) {
  ParallelConfig plan;
  plan.pp = p;
  plan.dp = 1;
  plan.tp = 1;
  plan.schedule = ScheduleKind::OneFOneB;
  return plan;
}

TEST(StageWorkload, OneFOneBTimesAndStashes) {
  int64_t p = 4, m = 8;
  double stash = 1e9;
  absl::StatusOr<PlanPrediction> out =
      scoreStages(equalChunks(p, m, stash), cluster(), pipeline(p), nullptr);
  ASSERT_TRUE(out.ok()) << out.status();
  double passes = 0.030;
  EXPECT_DOUBLE_EQ(out->lowerBoundSeconds, double(m) * passes);
  EXPECT_GE(out->stepSeconds, double(m + p - 1) * passes * (1 - 1e-9));
  // The update of no parameters costs at most a kernel launch.
  EXPECT_LE(out->stepSeconds, double(m + p - 1) * passes + 1e-3);
  EXPECT_NEAR(out->bubbleFraction, double(p - 1) / double(m + p - 1), 0.02);
  ASSERT_EQ(out->stageMemory.size(), size_t(p));
  for (int64_t s = 0; s < p; ++s)
    EXPECT_DOUBLE_EQ(out->stageMemory[s].activations,
                     double(std::min(p - s, m)) * stash)
        << "stage " << s;
  EXPECT_EQ(out->peakMemoryStage, 0);
  EXPECT_EQ(out->layersPerChunk, std::vector<int64_t>(p, 3));
  EXPECT_EQ(out->layersPerStage, std::vector<int64_t>(p, 3));
  EXPECT_DOUBLE_EQ(out->modelFlops, 1e12 * double(m));
}

TEST(StageWorkload, TooMuchMemoryNamesTheStage) {
  absl::StatusOr<PlanPrediction> out = scoreStages(
      equalChunks(2, 4, 50e9), cluster(), pipeline(2), nullptr);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(std::string(out.status().message()).find("stage 0 needs"),
            std::string::npos)
      << out.status();
}

TEST(StageWorkload, ChunksMustDivideOverTheStages) {
  absl::StatusOr<PlanPrediction> out =
      scoreStages(equalChunks(3, 4, 1e6), cluster(), pipeline(2), nullptr);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(StageWorkload, SendsBetweenStagesLengthenTheStep) {
  StageWorkload w = equalChunks(2, 4, 1e6);
  absl::StatusOr<PlanPrediction> quiet =
      scoreStages(w, cluster(), pipeline(2), nullptr);
  w.chunks[0].outBytes = w.chunks[1].inBytes = 512e6;
  absl::StatusOr<PlanPrediction> sending =
      scoreStages(w, cluster(), pipeline(2), nullptr);
  ASSERT_TRUE(quiet.ok() && sending.ok());
  EXPECT_GT(sending->pipelineSendSeconds, 0);
  EXPECT_GT(sending->stepSeconds, quiet->stepSeconds);
}

} // namespace
