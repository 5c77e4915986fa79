//===- PlanSearchTest.cpp - Knob-level plan search ------------------------===//

#include "cleave/cost_model/PlanKnobs.h"
#include "cleave/cost_model/PlanSearch.h"

#include "gtest/gtest.h"

#include <random>
#include <set>

using namespace cleave::cost;

namespace {

Cluster cluster(const std::string &spec) {
  auto c = parseCluster(spec);
  EXPECT_TRUE(c.ok()) << c.status();
  return *c;
}

TEST(PlanSearch, BranchAndBoundMatchesExhaustiveOnRandomModels) {
  // Small random transformers on small clusters, where every combination
  // can be simulated: the pruned search must find the same step time.
  std::mt19937 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    TransformerModel m;
    m.name = "random";
    m.layers = std::uniform_int_distribution<int>(2, 12)(rng);
    m.heads = 4 << std::uniform_int_distribution<int>(0, 2)(rng);
    m.hidden = m.heads * (32 << std::uniform_int_distribution<int>(0, 2)(rng));
    m.seq = 256 << std::uniform_int_distribution<int>(0, 3)(rng);
    m.vocab = 1000 * std::uniform_int_distribution<int>(1, 50)(rng);
    m.gatedMlp = trial % 2;
    int nodes = 1 + trial % 2;
    Cluster c = cluster("dgx-a100-40g,nodes=" + std::to_string(nodes));
    int64_t batch = 16 * nodes * (1 + trial % 3);
    PlanSearchOptions fast;
    auto pruned = searchTransformerPlans(m, c, batch, fast);
    PlanSearchOptions all;
    all.exhaustive = true;
    auto exhaustive = searchTransformerPlans(m, c, batch, all);
    ASSERT_TRUE(pruned.ok()) << pruned.status();
    ASSERT_TRUE(exhaustive.ok()) << exhaustive.status();
    EXPECT_NEAR(pruned->best[0].stepSeconds, exhaustive->best[0].stepSeconds,
                0.01 * exhaustive->best[0].stepSeconds)
        << "trial " << trial << ": "
        << planKnobsString(pruned->best[0].plan) << " vs "
        << planKnobsString(exhaustive->best[0].plan);
    EXPECT_LT(pruned->simulated, exhaustive->simulated);
  }
}

TEST(PlanSearch, BeatsMegatronsHandTunedPlanOnGpt3) {
  TransformerModel m;
  m.layers = 96;
  m.hidden = 12288;
  m.heads = 96;
  m.seq = 2048;
  m.vocab = 51200;
  Cluster c = cluster("dgx-a100-80g,nodes=128");
  ParallelConfig megatron;
  megatron.tp = 8;
  megatron.pp = 16;
  megatron.dp = 8;
  megatron.globalBatch = 1536;
  megatron.recompute = Recompute::Full;
  auto reference = scoreTransformerPlan(m, c, megatron);
  ASSERT_TRUE(reference.ok()) << reference.status();
  PlanSearchOptions o;
  o.topK = 3;
  auto found = searchTransformerPlans(m, c, 1536, o);
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_LE(found->best[0].stepSeconds, reference->stepSeconds);
  ASSERT_EQ(found->best.size(), 3u);
  EXPECT_LE(found->best[0].stepSeconds, found->best[1].stepSeconds);
  EXPECT_LE(found->best[0].peakMemoryBytes, c.device.memoryBytes);
  EXPECT_EQ(found->optimalityGap, 0);
}

TEST(PlanSearch, FixedKnobsAreKept) {
  TransformerModel m;
  m.layers = 24;
  m.hidden = 2048;
  m.heads = 16;
  m.seq = 2048;
  m.vocab = 51200;
  Cluster c = cluster("dgx-a100-80g,nodes=2");
  PlanSearchOptions o;
  o.fixed.tp = 2;
  o.fixed.recompute = Recompute::Full;
  o.fixedKnobs = {Knob::Tp, Knob::Recompute};
  auto found = searchTransformerPlans(m, c, 64, o);
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->best[0].plan.tp, 2);
  EXPECT_EQ(found->best[0].plan.recompute, Recompute::Full);
}

TEST(PlanSearch, MemoryLimitAndInfeasibleModels) {
  TransformerModel m;
  m.layers = 96;
  m.hidden = 12288;
  m.heads = 96;
  m.seq = 2048;
  m.vocab = 51200;
  // GPT-3 on one node: no plan fits; the error names the closest plan and
  // its memory breakdown.
  auto none = searchTransformerPlans(m, cluster("dgx-a100-80g"), 8, {});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), absl::StatusCode::kResourceExhausted);
  std::string message(none.status().message());
  EXPECT_NE(message.find("no plan fits in 80.0 GB per device"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("optimizer"), std::string::npos) << message;
  EXPECT_NE(message.find("More devices"), std::string::npos) << message;

  // A tighter memory limit changes the answer, never past the limit.
  TransformerModel small = m;
  small.layers = 24;
  small.hidden = 4096;
  small.heads = 32;
  Cluster c = cluster("dgx-a100-80g,nodes=2");
  PlanSearchOptions tight;
  tight.memoryLimit = 20e9;
  auto limited = searchTransformerPlans(small, c, 64, tight);
  ASSERT_TRUE(limited.ok()) << limited.status();
  EXPECT_LE(limited->best[0].peakMemoryBytes, 20e9);
}

/// A 16-layer GPT (hidden 4096) at sequence `seq` on 4 DGX A100 nodes,
/// every knob but recomputation held (`knobs`, 1F1B with microbatches of
/// one, global batch 64), searched under `memoryLimit`: the best plan, and
/// the same search's best when exhaustive.
struct RecomputeCase {
  TransformerModel m;
  Cluster c = cluster("dgx-a100-80g,nodes=4");
  ParallelConfig p;

  RecomputeCase(int64_t seq, const std::string &knobs) {
    m.layers = 16;
    m.hidden = 4096;
    m.heads = 32;
    m.seq = seq;
    m.vocab = 51200;
    EXPECT_TRUE(applyPlanKnobs(knobs + ",cp=1,sp=off,zero=0,microbatch=1,"
                                       "schedule=1f1b",
                               p)
                    .ok());
    p.globalBatch = 64;
  }
  absl::StatusOr<PlanPrediction> best(double memoryLimit,
                                      bool exhaustive = false) const {
    PlanSearchOptions o;
    o.fixed = p;
    o.fixedKnobs = {Knob::Dp,   Knob::Tp,         Knob::Pp,      Knob::Cp,
                    Knob::Sp,   Knob::Zero,       Knob::Microbatch,
                    Knob::Schedule};
    o.memoryLimit = memoryLimit;
    o.exhaustive = exhaustive;
    auto found = searchTransformerPlans(m, c, 64, o);
    if (!found.ok())
      return found.status();
    return found->best[0];
  }
  /// `q` scored with `memoryLimit` a device.
  absl::StatusOr<PlanPrediction> score(const ParallelConfig &q,
                                       double memoryLimit) const {
    Cluster capped = c;
    capped.device.memoryBytes = memoryLimit;
    return scoreTransformerPlan(m, capped, q);
  }
};

TEST(PlanSearch, RecomputesOnlyTheStagesThatNeedIt) {
  // Just below the memory that 1F1B's first stage needs without
  // recomputation: the search recomputes on the first stages only, which
  // beats every uniform mode that fits; the exhaustive search agrees.
  RecomputeCase r(2048, "dp=8,tp=1,pp=4");
  auto none = scoreTransformerPlan(r.m, r.c, r.p);
  ASSERT_TRUE(none.ok()) << none.status();
  double limit = none->peakMemoryBytes * 0.97;
  auto best = r.best(limit);
  ASSERT_TRUE(best.ok()) << best.status();
  EXPECT_LE(best->peakMemoryBytes, limit);
  ASSERT_EQ(best->plan.stageRecompute.size(), 4u)
      << planKnobsString(best->plan);
  EXPECT_NE(best->plan.recomputeOf(0), Recompute::None);
  EXPECT_EQ(best->plan.recomputeOf(3), Recompute::None);
  for (Recompute mode : {Recompute::Selective, Recompute::Full}) {
    ParallelConfig uniform = r.p;
    uniform.recompute = mode;
    auto scored = r.score(uniform, limit);
    if (scored.ok()) {
      EXPECT_LT(best->stepSeconds, scored->stepSeconds) << recomputeName(mode);
    }
  }
  auto all = r.best(limit, /*exhaustive=*/true);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_NEAR(all->stepSeconds, best->stepSeconds, 1e-9 * best->stepSeconds);
}

TEST(PlanSearch, RecomputesInThreeLevelsWhereTwoCostMore) {
  // Eight 1F1B stages at a 4096-token sequence, with 24 GB a device: the
  // first stage (eight microbatches in flight) needs full recomputation,
  // the next ones selective, the last ones none. That beats every plan of
  // one or two levels that fits, and the exhaustive search agrees.
  RecomputeCase r(4096, "dp=4,tp=1,pp=8");
  double limit = 24e9;
  auto best = r.best(limit);
  ASSERT_TRUE(best.ok()) << best.status();
  EXPECT_LE(best->peakMemoryBytes, limit);
  std::set<Recompute> levels(best->plan.stageRecompute.begin(),
                             best->plan.stageRecompute.end());
  EXPECT_EQ(levels.size(), 3u) << planKnobsString(best->plan);
  EXPECT_EQ(best->plan.recomputeOf(0), Recompute::Full);
  EXPECT_EQ(best->plan.recomputeOf(7), Recompute::None);

  double fewerLevels = HUGE_VAL;
  int fitting = 0;
  for (Recompute heavy : {Recompute::Selective, Recompute::Full})
    for (Recompute light : {Recompute::None, Recompute::Selective}) {
      if (light >= heavy)
        continue;
      for (int64_t k = 1; k <= 8; ++k) {
        ParallelConfig q = r.p;
        q.recompute = heavy;
        if (k < 8) {
          q.stageRecompute.assign(8, light);
          std::fill(q.stageRecompute.begin(), q.stageRecompute.begin() + k,
                    heavy);
        }
        auto scored = r.score(q, limit);
        if (scored.ok()) {
          ++fitting;
          fewerLevels = std::min(fewerLevels, scored->stepSeconds);
        }
      }
    }
  ASSERT_GT(fitting, 0);
  EXPECT_LT(best->stepSeconds, fewerLevels);
  auto all = r.best(limit, /*exhaustive=*/true);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_NEAR(all->stepSeconds, best->stepSeconds, 1e-9 * best->stepSeconds);
}

} // namespace

namespace {

TEST(PlanSearch, ZooShapesAtSmallScaleMatchExhaustive) {
  // The zoo families' shapes (GPT: GELU MLP, learned positions; LLaMA:
  // SwiGLU, grouped-query attention; Mixtral: top-2 of 8 experts), shrunk
  // so that every combination can be simulated.
  std::vector<TransformerModel> models(3);
  models[0].name = "gpt";
  models[0].layers = 8;
  models[0].hidden = 1024;
  models[0].heads = 16;
  models[0].seq = 1024;
  models[0].vocab = 50257;
  models[1] = models[0];
  models[1].name = "llama";
  models[1].gatedMlp = true;
  models[1].kvHeads = 4;
  models[1].ffn = 2816;
  models[1].learnedPositions = false;
  models[1].tiedEmbedding = false;
  models[1].vocab = 32000;
  models[2] = models[1];
  models[2].name = "mixtral";
  models[2].experts = 8;
  models[2].topK = 2;
  for (const TransformerModel &m : models) {
    SCOPED_TRACE(m.name);
    Cluster c = cluster("dgx-a100-80g,nodes=2");
    auto pruned = searchTransformerPlans(m, c, 64, {});
    PlanSearchOptions all;
    all.exhaustive = true;
    auto exhaustive = searchTransformerPlans(m, c, 64, all);
    ASSERT_TRUE(pruned.ok()) << pruned.status();
    ASSERT_TRUE(exhaustive.ok()) << exhaustive.status();
    EXPECT_NEAR(pruned->best[0].stepSeconds, exhaustive->best[0].stepSeconds,
                0.01 * exhaustive->best[0].stepSeconds);
  }
}

TEST(PlanSearch, InterleavesLayerCountsNoChunkCountDivides) {
  // Llama 3 405B's 126 layers on pp = 16: no pp x vpp divides them, yet
  // the interleaved schedule with uneven chunks is the fastest plan; the
  // search offers it unasked, and finds vpp itself when only the schedule
  // is fixed.
  TransformerModel m;
  m.layers = 126;
  m.hidden = 16384;
  m.heads = 128;
  m.kvHeads = 8;
  m.ffn = 53248;
  m.vocab = 128256;
  m.seq = 8192;
  m.gatedMlp = true;
  m.learnedPositions = false;
  m.tiedEmbedding = false;
  m.dropout = false;
  Cluster c = cluster("dgx-h100,nodes=128");
  auto search = [&](KnobSet fixed, ParallelConfig f) {
    PlanSearchOptions o;
    o.fixed = f;
    o.fixedKnobs = std::move(fixed);
    auto found = searchTransformerPlans(m, c, 1024, o);
    EXPECT_TRUE(found.ok()) << found.status();
    return *found;
  };
  ParallelConfig f;
  f.pp = 16;
  PlanSearchResult free = search({Knob::Pp}, f);
  f.schedule = ScheduleKind::Interleaved;
  PlanSearchResult interleaved = search({Knob::Pp, Knob::Schedule}, f);
  EXPECT_GE(interleaved.best[0].plan.chunks, 2);
  EXPECT_NE(m.layers % (16 * interleaved.best[0].plan.chunks), 0);
  f.chunks = 4;
  PlanSearchResult byHand = search({Knob::Pp, Knob::Schedule, Knob::Vpp}, f);
  f.schedule = ScheduleKind::OneFOneB;
  f.chunks = 1;
  PlanSearchResult oneF1B = search({Knob::Pp, Knob::Schedule}, f);
  EXPECT_LE(free.best[0].stepSeconds, byHand.best[0].stepSeconds * 1.0001);
  EXPECT_LE(free.best[0].stepSeconds,
            interleaved.best[0].stepSeconds * 1.0001);
  EXPECT_LT(byHand.best[0].stepSeconds, oneF1B.best[0].stepSeconds);
  EXPECT_EQ(free.best[0].plan.schedule, ScheduleKind::Interleaved)
      << planKnobsString(free.best[0].plan);
}

TEST(PlanSearch, InterleavedVppSearchMatchesExhaustiveOnRandomLayerCounts) {
  // The schedule fixed to interleaved, vpp free, on layer counts drawn at
  // random: the bounded search and --exhaustive find the same step time,
  // and some of the plans found cut chunks unevenly.
  std::mt19937 rng(11);
  int uneven = 0;
  for (int trial = 0; trial < 12; ++trial) {
    TransformerModel m;
    m.name = "random";
    m.layers = std::uniform_int_distribution<int>(5, 41)(rng);
    m.heads = 8 << std::uniform_int_distribution<int>(0, 1)(rng);
    m.hidden = m.heads * 64;
    m.seq = 1024 << std::uniform_int_distribution<int>(0, 1)(rng);
    m.vocab = 32000;
    m.gatedMlp = trial % 2;
    Cluster c = cluster("dgx-a100-40g,nodes=" + std::to_string(1 + trial % 2));
    int64_t batch = 64 * (1 + trial % 2);
    PlanSearchOptions fast;
    fast.fixed.schedule = ScheduleKind::Interleaved;
    fast.fixedKnobs = {Knob::Schedule};
    auto pruned = searchTransformerPlans(m, c, batch, fast);
    PlanSearchOptions all = fast;
    all.exhaustive = true;
    auto exhaustive = searchTransformerPlans(m, c, batch, all);
    ASSERT_TRUE(pruned.ok()) << "layers " << m.layers << ": "
                             << pruned.status();
    ASSERT_TRUE(exhaustive.ok()) << exhaustive.status();
    const ParallelConfig &p = pruned->best[0].plan;
    EXPECT_NEAR(pruned->best[0].stepSeconds, exhaustive->best[0].stepSeconds,
                0.01 * exhaustive->best[0].stepSeconds)
        << "layers " << m.layers << ": " << planKnobsString(p) << " vs "
        << planKnobsString(exhaustive->best[0].plan);
    EXPECT_EQ(p.schedule, ScheduleKind::Interleaved);
    EXPECT_GE(p.chunks, 2);
    if (m.layers % (p.pp * p.chunks) != 0)
      ++uneven;
  }
  EXPECT_GE(uneven, 3);
}

TEST(PlanSearch, BoundsHoldWhereRanksShareCores) {
  // Four CPU ranks on two cores: unsimulated, every task is priced at the
  // average sharing, but a pipeline's fill and drain run unshared, so only
  // the unshared bound holds. The pruned search must still find what the
  // exhaustive one does (it once kept a dp4 plan over a faster pp2 one).
  std::mt19937 rng(5);
  for (int trial = 0; trial < 8; ++trial) {
    TransformerModel m;
    m.name = "small";
    m.layers = std::uniform_int_distribution<int>(2, 6)(rng);
    m.heads = 4;
    m.hidden = 32 << std::uniform_int_distribution<int>(0, 2)(rng);
    m.seq = 16 << std::uniform_int_distribution<int>(0, 2)(rng);
    m.vocab = 64 << std::uniform_int_distribution<int>(0, 4)(rng);
    m.gatedMlp = trial % 2;
    Cluster c = cluster("cpu-local,devices=4");
    PlanSearchOptions fast;
    fast.fixed.precision = DType::Fp32;
    fast.fixedKnobs = {Knob::Precision};
    auto pruned = searchTransformerPlans(m, c, 8, fast);
    PlanSearchOptions all = fast;
    all.exhaustive = true;
    auto exhaustive = searchTransformerPlans(m, c, 8, all);
    ASSERT_TRUE(pruned.ok()) << pruned.status();
    ASSERT_TRUE(exhaustive.ok()) << exhaustive.status();
    EXPECT_NEAR(pruned->best[0].stepSeconds, exhaustive->best[0].stepSeconds,
                1e-9 * exhaustive->best[0].stepSeconds)
        << "trial " << trial << ": " << planKnobsString(pruned->best[0].plan)
        << " vs " << planKnobsString(exhaustive->best[0].plan);
  }
}

} // namespace
