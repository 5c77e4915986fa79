//===- StageWorkloadTest.cpp - Pipeline plans scored from chunks' work ----===//
//
// Expected values from the 1F1B schedule's own arithmetic: p stages of
// equal passes f + b run m microbatches in (m + p - 1)(f + b) at least
// m (f + b) plus the fill and drain, (m + p - 1)(f + b), and stage s holds
// the stashes of min(p - s, m) microbatches.
//
//===----------------------------------------------------------------------===//

#include "cleave/cost_model/StageWorkload.h"

#include "cleave/cost_model/Cluster.h"
#include "cleave/cost_model/PipelineSchedule.h"

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
  for (int64_t c = 0; c < p; ++c) {
    ChunkWorkload chunk;
    chunk.blocks = 3;
    chunk.forwardFlops = 1e12 / 3 / double(p);
    chunk.backwardFlops = 2e12 / 3 / double(p);
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
  EXPECT_NEAR(out->lowerBoundSeconds, double(m + p - 1) * passes, 1e-12);
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
  EXPECT_NEAR(out->modelFlops, 1e12 * double(m), 1e12 * 1e-12);
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

/// One stage of `params` parameters a device (AdamW).
StageWorkload oneStage(double params) {
  StageWorkload w;
  w.microbatches = 4;
  w.optimizerStates = 2;
  ChunkWorkload chunk;
  chunk.blocks = 8;
  chunk.forwardSeconds = 0.010;
  chunk.backwardSeconds = 0.020;
  chunk.params = params;
  chunk.paramTensors = 16;
  w.chunks.push_back(chunk);
  return w;
}

ParallelConfig replicas(int64_t dp, int64_t tp, int zero) {
  ParallelConfig plan = pipeline(1);
  plan.dp = dp;
  plan.tp = tp;
  plan.zero = zero;
  plan.globalBatch = 4 * dp;
  plan.precision = DType::Fp32;
  return plan;
}

TEST(StageWorkload, ModelStatesFollowZeroAndPrecision) {
  double params = 1e9;
  Cluster c = cluster();
  auto z0 = scoreStages(oneStage(params), c, replicas(8, 1, 0), nullptr);
  auto z1 = scoreStages(oneStage(params), c, replicas(8, 1, 1), nullptr);
  ParallelConfig half = replicas(8, 1, 1);
  half.precision = DType::Bf16;
  auto bf16 = scoreStages(oneStage(params), c, half, nullptr);
  ASSERT_TRUE(z0.ok() && z1.ok() && bf16.ok());
  // fp32: 4-byte weights and gradients, AdamW's two 4-byte moments.
  EXPECT_DOUBLE_EQ(z0->memory.params, 4 * params);
  EXPECT_DOUBLE_EQ(z0->memory.grads, 4 * params);
  EXPECT_DOUBLE_EQ(z0->memory.optimizer, 8 * params);
  // ZeRO-1 shards the moments over the 8 replicas (and keeps the updated
  // block of the weights and the reduce-scattered block of the gradient).
  EXPECT_DOUBLE_EQ(z1->memory.optimizer, 8 * params / 8 + 4 * params / 8);
  EXPECT_DOUBLE_EQ(z1->memory.grads, 4 * params + 4 * params / 8);
  // bf16 under ZeRO-1: 2-byte weights, fp32 gradients, and an fp32 master
  // copy beside the moments in each replica's block.
  EXPECT_DOUBLE_EQ(bf16->memory.params, 2 * params);
  EXPECT_DOUBLE_EQ(bf16->memory.grads, 4 * params + 4 * params / 8);
  EXPECT_DOUBLE_EQ(bf16->memory.optimizer, 12 * params / 8 + 2 * params / 8);
}

TEST(StageWorkload, GradientsReduceInOneBucketPerPieceUpToEight) {
  // On GPUs (collectives beside compute) the reduction of the gradients
  // starts as the last backward pass makes them: one bucket per piece
  // they come out of, at most 8; a chunk of no pieces is one bucket.
  auto buckets = [](int64_t pieces) {
    StageWorkload w = oneStage(1e8);
    w.chunks[0].gradientPieces = pieces;
    TaskGraph graph;
    ScoreOptions options;
    options.graphOut = &graph;
    auto out = scoreStages(w, cluster(), replicas(8, 1, 0), nullptr, options);
    EXPECT_TRUE(out.ok()) << out.status();
    int count = 0;
    for (const Task &t : graph.tasks())
      count += t.category == "grad-reduce";
    return count;
  };
  EXPECT_EQ(buckets(0), 1);
  EXPECT_EQ(buckets(3), 3);
  EXPECT_EQ(buckets(50), 8);
}

TEST(StageWorkload, ManyMicrobatchesPeakAsTheWholeWalk) {
  // The scoring walks a steady schedule's first microbatches only: its
  // activations must equal the walk of every microbatch, for uneven
  // stashes, deferred weight gradients and interleaved chunks.
  for (ScheduleKind kind :
       {ScheduleKind::GPipe, ScheduleKind::OneFOneB,
        ScheduleKind::ZeroBubbleH1, ScheduleKind::Interleaved})
    for (int64_t p : {1, 2, 3, 5, 8})
      for (int64_t v : {1, 2, 3}) {
        bool interleaved = kind == ScheduleKind::Interleaved;
        if (interleaved != (v > 1) || (interleaved && p < 2))
          continue;
        for (int64_t m : {int64_t(1), int64_t(7), int64_t(40), int64_t(333)}) {
          if (interleaved)
            m = (m + p - 1) / p * p;
          StageWorkload w;
          w.microbatches = m;
          for (int64_t c = 0; c < p * v; ++c) {
            ChunkWorkload chunk;
            chunk.blocks = 1;
            chunk.forwardSeconds = 0.001;
            chunk.backwardSeconds = 0.002;
            chunk.weightGradSeconds = 0.001;
            chunk.activationBytes = 1e6 * double(1 + (c * 7) % 5);
            chunk.weightGradBytes = 3e5 * double(1 + c % 3);
            w.chunks.push_back(chunk);
          }
          ParallelConfig plan = pipeline(p);
          plan.schedule = kind;
          plan.chunks = v;
          Cluster big = cluster();
          big.device.memoryBytes = 0;
          auto out = scoreStages(w, big, plan, nullptr);
          ASSERT_TRUE(out.ok()) << out.status();
          bool zeroBubble = kind == ScheduleKind::ZeroBubbleH1;
          for (int64_t s = 0; s < p; ++s) {
            std::vector<double> stash(v), pendingW(v);
            for (int64_t local = 0; local < v; ++local) {
              stash[local] = w.chunks[local * p + s].activationBytes;
              pendingW[local] =
                  local * p + s > 0 ? w.chunks[local * p + s].weightGradBytes
                                    : 0;
            }
            auto order = pipelineOrder(kind, int(p), int(s), int(m), int(v));
            ASSERT_TRUE(order.ok());
            double live = 0, peak = 0;
            for (const PipelineSlot &slot : *order) {
              double kept = stash[slot.chunk], pw = pendingW[slot.chunk];
              live += slot.pass == PassKind::Forward ? kept
                      : slot.pass == PassKind::Backward
                          ? (zeroBubble ? pw - kept : -kept)
                          : -pw;
              peak = std::max(peak, live);
            }
            if (v > 1)
              peak = planStashFrames(*order, stash).bytes;
            EXPECT_DOUBLE_EQ(out->stageMemory[s].activations, peak)
                << scheduleName(kind) << " p=" << p << " v=" << v
                << " m=" << m << " stage " << s;
          }
        }
      }
}

TEST(StageWorkload, ProducerMemoryReplacesTheWalk) {
  StageWorkload w = equalChunks(2, 4, 1e9);
  MemoryBreakdown analytic;
  analytic.activations = 7e9;
  analytic.workspace = 1e9;
  w.stageMemory = {analytic, analytic};
  auto out = scoreStages(w, cluster(), pipeline(2), nullptr);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_DOUBLE_EQ(out->stageMemory[0].activations, 7e9);
  EXPECT_DOUBLE_EQ(out->stageMemory[1].workspace, 1e9);
  w.stageMemory.pop_back();
  EXPECT_EQ(scoreStages(w, cluster(), pipeline(2), nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(StageWorkload, PlansAboveTheBoundAreNotSimulated) {
  ScoreOptions options;
  options.simulateBelow = 0.1;
  auto out = scoreStages(equalChunks(4, 8, 1e6), cluster(), pipeline(4),
                         nullptr, options);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_FALSE(out->simulated);
  EXPECT_DOUBLE_EQ(out->stepSeconds, out->lowerBoundSeconds);
}

} // namespace
