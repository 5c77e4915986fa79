//===- ServingPlanTest.cpp - Planning LLM inference for latency targets ---===//
//
// The key/value cache priced exactly from the model's shape; decode priced
// no faster than the HBM can stream the weights; latencies and throughput
// consistent with one another and with the batch; the search within its
// targets and, where none can be met, naming the limit that binds.
// Expected values come from the shapes here, not from the library.
//
//===----------------------------------------------------------------------===//

#include "LlamaShape.h"
#include "cleave/cost_model/ServingPlan.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace cleave::cost;

namespace {

/// Llama 3 70B's shape: 80 layers, hidden 8192, 64 heads (8 kv) of 128.
TransformerModel llama70b() {
  TransformerModel m = shapes::llama(80, 8192, 64, 28672, 8192);
  m.name = "llama3-70b";
  return m;
}

Cluster h100(int64_t nodes) {
  absl::StatusOr<Cluster> c =
      parseCluster("dgx-h100,nodes=" + std::to_string(nodes));
  EXPECT_TRUE(c.ok()) << c.status();
  return *c;
}

ServingWorkload chat() {
  ServingWorkload w;
  w.promptLen = 2048;
  w.outputLen = 256;
  return w;
}

} // namespace

// layers x 2 x kv_heads x head_dim x bytes a token, the kv heads split by
// tp and replicated (one a device) where tp exceeds them.
TEST(ServingPlan, KvCacheIsExact) {
  TransformerModel m = llama70b();
  EXPECT_EQ(kvCacheBytesPerToken(m, 80, 1, DType::Bf16), 80.0 * 2 * 8 * 128 * 2);
  EXPECT_EQ(kvCacheBytesPerToken(m, 80, 4, DType::Bf16), 80.0 * 2 * 2 * 128 * 2);
  EXPECT_EQ(kvCacheBytesPerToken(m, 80, 8, DType::Bf16), 80.0 * 2 * 1 * 128 * 2);
  EXPECT_EQ(kvCacheBytesPerToken(m, 80, 16, DType::Bf16),
            80.0 * 2 * 1 * 128 * 2);
  EXPECT_EQ(kvCacheBytesPerToken(m, 40, 8, DType::Fp32), 40.0 * 2 * 1 * 128 * 4);
}

// A decode step reads the stage's weights at least once: no TPOT beats
// the HBM streaming them; a prefill runs the model's FLOPs over every
// prompt token: no TTFT beats the dense peak.
TEST(ServingPlan, DecodeIsMemoryBoundAndPrefillComputeBound) {
  TransformerModel m = llama70b();
  Cluster c = h100(1);
  ServingWorkload w = chat();
  w.batch = 8;
  w.batching = Batching::Static;
  absl::StatusOr<ServingPrediction> p = scoreServingPlan(m, c, w, 8, 1);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_GE(p->tpotSeconds, p->weightBytes / c.device.memoryBandwidth);
  double flops = 2.0 * m.parameters() * w.promptLen * w.batch;
  EXPECT_GE(p->ttftSeconds, flops / (8 * c.device.peakFlops(DType::Bf16)));
  EXPECT_EQ(p->replicas, 1);
  EXPECT_NEAR(p->requestsPerSecond,
              8.0 / (p->ttftSeconds + 256 * p->tpotSeconds),
              1e-9 * p->requestsPerSecond);
  EXPECT_NEAR(p->outputTokensPerSecond, 256 * p->requestsPerSecond,
              1e-9 * p->outputTokensPerSecond);
  // The memory: 70B over 8 devices in bf16, the cache of 8 sequences.
  EXPECT_NEAR(p->weightBytes, 2 * m.parameters() / 8, 0.02 * p->weightBytes);
  EXPECT_DOUBLE_EQ(p->cacheBytes,
                   8 * kvCacheBytesPerToken(m, 80, 8, DType::Bf16) * 2304);
}

// Under static batching both latencies grow with the batch; past what
// memory holds, the plan is refused naming the bytes.
TEST(ServingPlan, BatchTradesLatencyAndMemory) {
  TransformerModel m = llama70b();
  Cluster c = h100(1);
  ServingWorkload w = chat();
  w.batching = Batching::Static;
  double ttft = 0, tpot = 0;
  for (int64_t b : {1, 4, 16, 64}) {
    w.batch = b;
    absl::StatusOr<ServingPrediction> p = scoreServingPlan(m, c, w, 8, 1);
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_GT(p->ttftSeconds, ttft);
    EXPECT_GE(p->tpotSeconds, tpot);
    ttft = p->ttftSeconds;
    tpot = p->tpotSeconds;
  }
  w.batch = 100000;
  absl::StatusOr<ServingPrediction> full = scoreServingPlan(m, c, w, 8, 1);
  ASSERT_FALSE(full.ok());
  EXPECT_NE(full.status().message().find("memory: tp=8 x pp=1 holds"),
            std::string::npos)
      << full.status();
  // One device cannot hold 141 GB of weights.
  w.batch = 1;
  EXPECT_FALSE(scoreServingPlan(m, c, w, 1, 1).ok());
  EXPECT_FALSE(scoreServingPlan(m, c, w, 3, 1).ok()); // not a divisor
}

// Every plan returned meets both targets; the first serves the most
// requests per second.
TEST(ServingPlan, SearchMeetsTheTargets) {
  TransformerModel m = llama70b();
  Cluster c = h100(2);
  ServingWorkload w = chat();
  w.ttft = 2;
  w.tpot = 0.05;
  absl::StatusOr<ServingSearchResult> r = searchServingPlans(m, c, w, 3);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_FALSE(r->best.empty());
  for (const ServingPrediction &p : r->best) {
    EXPECT_LE(p.ttftSeconds, w.ttft);
    EXPECT_LE(p.tpotSeconds, w.tpot);
    EXPECT_LE(p.batch, p.maxBatch);
    EXPECT_EQ(p.tp * p.pp * p.replicas, 16);
    EXPECT_LE(p.requestsPerSecond, r->best.front().requestsPerSecond);
  }
  // A TPOT no plan reaches: the error names it and the closest plan.
  w.tpot = 0.001;
  absl::StatusOr<ServingSearchResult> none = searchServingPlans(m, c, w);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("TPOT"), std::string::npos)
      << none.status();
}

// An MoE replica holds every expert; a decode step whose batch's top-k
// choices touch all of them reads them all (no TPOT beats streaming the
// stage's weights), while one sequence reads only its top-k experts.
TEST(ServingPlan, MoeDecodeReadsTheExpertsItTouches) {
  TransformerModel m = shapes::llama(32, 4096, 32, 14336, 4096);
  m.experts = 8;
  m.topK = 2;
  Cluster c = h100(1);
  ServingWorkload w = chat();
  w.batch = 64;
  absl::StatusOr<ServingPrediction> many = scoreServingPlan(m, c, w, 2, 1);
  ASSERT_TRUE(many.ok()) << many.status();
  EXPECT_GE(many->tpotSeconds, many->weightBytes / c.device.memoryBandwidth);
  w.batch = 1;
  absl::StatusOr<ServingPrediction> one = scoreServingPlan(m, c, w, 2, 1);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_LT(one->tpotSeconds, one->weightBytes / c.device.memoryBandwidth);
  // 8 experts of 3 x 4096 x 14336 in every layer.
  EXPECT_GT(one->weightBytes, 32 * 8 * 3.0 * 4096 * 14336 * 2 / 2);
}

// Continuous batching with chunked prefill: a step computes a row per
// sequence, and the rows the decoding sequences leave read prompts. In the
// steady state a request takes P + O - 1 rows, so with as many rows as
// sequences the rows bound the rate: R / (P + O - 1) requests a step, of
// whose rows R (O - 1) / (P + O - 1) decode. A prompt is read in
// ceil(P / free rows) steps after half a step's wait. Memory holds more
// sequences than static batching, which reads whole prompts at once.
TEST(ServingPlan, ChunkedPrefillSharesTheStepsRows) {
  TransformerModel m = llama70b();
  Cluster c = h100(1);
  ServingWorkload w = chat();
  w.batch = 32;
  absl::StatusOr<ServingPrediction> running = scoreServingPlan(m, c, w, 8, 1);
  ASSERT_TRUE(running.ok()) << running.status();
  double P = 2048, O = 256, rate = 32 / (P + O - 1);
  EXPECT_EQ(running->stepRows, 32);
  EXPECT_NEAR(running->decodeRowsPerStep, rate * (O - 1), 1e-9);
  EXPECT_NEAR(running->promptRowsPerStep, rate * P, 1e-9);
  EXPECT_EQ(running->prefillSteps,
            int64_t(std::ceil(P / (32 - rate * (O - 1)))));
  EXPECT_NEAR(running->ttftSeconds,
              (0.5 + double(running->prefillSteps)) * running->tpotSeconds,
              1e-12);
  EXPECT_NEAR(running->requestsPerSecond, rate / running->tpotSeconds,
              1e-9 * running->requestsPerSecond);
  // The step reads the weights once: no faster than the HBM streams them.
  EXPECT_GE(running->tpotSeconds,
            running->weightBytes / c.device.memoryBandwidth);

  // --step-tokens 512 for the same 32 sequences: the rows no longer bind
  // but the sequences do (Little's law: the decoding ones stay under 32),
  // so some rows go unused; a prompt is read in fewer, longer steps.
  w.stepTokens = 512;
  absl::StatusOr<ServingPrediction> wide = scoreServingPlan(m, c, w, 8, 1);
  ASSERT_TRUE(wide.ok()) << wide.status();
  EXPECT_EQ(wide->stepRows, 512);
  EXPECT_LT(wide->decodeRowsPerStep, 32);
  EXPECT_LT(wide->decodeRowsPerStep + wide->promptRowsPerStep, 512);
  EXPECT_LT(wide->prefillSteps, running->prefillSteps);
  EXPECT_GT(wide->tpotSeconds, running->tpotSeconds);
  EXPECT_LT(wide->ttftSeconds, running->ttftSeconds);
  // Each sequence holds its place for O - 1 decode steps and the steps
  // its prompt takes: rate x (O - 1 + P / free) sequences, all 32.
  double wideRate = wide->promptRowsPerStep / P;
  EXPECT_NEAR(wideRate * (O - 1 + P / (512 - wide->decodeRowsPerStep)), 32,
              1e-6);

  w.stepTokens = 0;
  w.batching = Batching::Static;
  absl::StatusOr<ServingPrediction> batched = scoreServingPlan(m, c, w, 8, 1);
  ASSERT_TRUE(batched.ok()) << batched.status();
  EXPECT_GT(running->maxBatch, batched->maxBatch);
}

// Separate pools: the devices split into whole replicas of each pool's
// shape; the plan serves the lesser pool's rate; its decode steps carry no
// prompt rows, so at the same batch and shape every row of a step yields a
// token and a decode replica finishes more requests a second than one
// whose rows also read prompts.
TEST(ServingPlan, DisaggregatedPoolsSplitTheDevices) {
  TransformerModel m = llama70b();
  Cluster c = h100(2);
  ServingWorkload w = chat();
  w.ttft = 2;
  w.tpot = 0.05;
  absl::StatusOr<DisaggregatedPrediction> r =
      searchDisaggregatedPlans(m, c, w);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->prefillReplicas * r->prefill.tp * r->prefill.pp +
                r->decodeReplicas * r->decode.tp * r->decode.pp,
            16);
  EXPECT_LE(r->ttftSeconds, w.ttft);
  EXPECT_LE(r->tpotSeconds, w.tpot);
  EXPECT_DOUBLE_EQ(r->requestsPerSecond,
                   std::min(r->prefillCapacity, r->decodeCapacity));
  EXPECT_GT(r->transferSeconds, 0);
  ServingWorkload d = w;
  d.batch = 128;
  d.batching = Batching::DecodeOnly;
  ServingWorkload mixed = d;
  mixed.batching = Batching::Continuous;
  Cluster replica = h100(1);
  int64_t tp = 4;
  absl::StatusOr<ServingPrediction> only =
      scoreServingPlan(m, replica, d, tp, 1);
  absl::StatusOr<ServingPrediction> both =
      scoreServingPlan(m, replica, mixed, tp, 1);
  ASSERT_TRUE(only.ok()) << only.status();
  ASSERT_TRUE(both.ok()) << both.status();
  EXPECT_GT(only->requestsPerSecond, both->requestsPerSecond);
  // A TTFT no prefill shape reaches: the error says so.
  w.ttft = 0.001;
  EXPECT_FALSE(searchDisaggregatedPlans(m, c, w).ok());
}
