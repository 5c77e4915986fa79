//===- StageBalanceTest.cpp - Layers per pipeline stage -------------------===//

#include "cleave/cost_model/StageBalance.h"
#include "cleave/cost_model/TransformerPlan.h"

#include "gtest/gtest.h"

#include <numeric>
#include <random>

using namespace cleave::cost;

namespace {

/// Every contiguous split of `layers` into `chunks` non-empty chunks.
void allSplits(int64_t layers, int64_t chunks, std::vector<int64_t> &prefix,
               std::vector<std::vector<int64_t>> &out) {
  if (chunks == 1) {
    prefix.push_back(layers);
    out.push_back(prefix);
    prefix.pop_back();
    return;
  }
  for (int64_t n = 1; n <= layers - (chunks - 1); ++n) {
    prefix.push_back(n);
    allSplits(layers - n, chunks - 1, prefix, out);
    prefix.pop_back();
  }
}

TEST(StageBalance, EvenSplitGivesSpareLayersToTheLastChunks) {
  EXPECT_EQ(evenLayerSplit(10, 4), (std::vector<int64_t>{2, 2, 3, 3}));
  EXPECT_EQ(evenLayerSplit(8, 4), (std::vector<int64_t>{2, 2, 2, 2}));
}

/// Against every split, on layers of unequal cost (dense and MoE layers
/// alternating) and heads of several sizes: the balanced split is optimal,
/// and it is the even one wherever that is optimal too.
TEST(StageBalance, OptimalAgainstEnumeration) {
  for (int64_t layers : {4, 7, 12}) {
    for (int64_t chunks : {2, 3, 4}) {
      for (double head : {0.0, 0.4, 1.0, 2.6, 7.0}) {
        std::vector<double> cost;
        for (int64_t l = 0; l < layers; ++l)
          cost.push_back(l % 2 ? 1.5 : 1.0);
        double embed = 0.1;
        std::vector<int64_t> got = balanceLayers(cost, embed, head, chunks);
        ASSERT_EQ(int64_t(got.size()), chunks);
        EXPECT_EQ(std::accumulate(got.begin(), got.end(), int64_t(0)), layers);
        for (int64_t n : got)
          EXPECT_GE(n, 1);
        std::vector<std::vector<int64_t>> splits;
        std::vector<int64_t> prefix;
        allSplits(layers, chunks, prefix, splits);
        double best = 1e300;
        for (const auto &s : splits)
          best = std::min(best, slowestChunk(cost, embed, head, s));
        double mine = slowestChunk(cost, embed, head, got);
        EXPECT_NEAR(mine, best, 1e-9 * best)
            << layers << " layers, " << chunks << " chunks, head " << head;
        std::vector<int64_t> even = evenLayerSplit(layers, chunks);
        if (slowestChunk(cost, embed, head, even) <= best * (1 + 1e-12))
          EXPECT_EQ(got, even);
      }
    }
  }
  EXPECT_TRUE(balanceLayers({1.0, 1.0}, 0, 0, 3).empty());
}

/// A Gemma-2B-like model: hidden 2048, 18 layers, vocabulary 256000.
TransformerModel gemmaLike() {
  TransformerModel m;
  m.name = "gemma";
  m.layers = 18;
  m.hidden = 2048;
  m.heads = 8;
  m.kvHeads = 8; // tensor parallelism splits the KV heads
  m.ffn = 16384;
  m.gatedMlp = true;
  m.seq = 8192;
  m.vocab = 256000;
  return m;
}

/// `p` for `m` on 32 A100s, with balanced stages and with the even split.
void scoreBothWays(const TransformerModel &m, ParallelConfig p,
                   PlanPrediction &balanced, PlanPrediction &even) {
  auto cluster = parseCluster("dgx-a100-80g,nodes=4");
  ASSERT_TRUE(cluster.ok());
  p.balanceStages = true;
  auto b = scoreTransformerPlan(m, *cluster, p);
  p.balanceStages = false;
  auto e = scoreTransformerPlan(m, *cluster, p);
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_TRUE(e.ok()) << e.status();
  balanced = *b;
  even = *e;
}

/// A Gemma-2B-like model (hidden 2048, vocabulary 256000) on 4 stages:
/// the head costs several layers, so the last stage gives up layers and the
/// predicted step is shorter than with the even split Megatron-LM would
/// use. A LLaMA-3-8B-like one (hidden 4096, vocabulary 128256), whose head
/// costs 0.7 of a layer here, keeps the even split: no whole layer moved
/// off the last stage would make it faster.
TEST(StageBalance, LargeVocabularyMovesLayersOffTheLastStage) {
  TransformerModel m = gemmaLike();
  ParallelConfig p;
  p.tp = 8;
  p.pp = 4;
  p.globalBatch = 64;
  PlanPrediction balanced, even;
  ASSERT_NO_FATAL_FAILURE(scoreBothWays(m, p, balanced, even));
  EXPECT_EQ(even.layersPerStage, (std::vector<int64_t>{4, 4, 5, 5}));
  EXPECT_LT(balanced.layersPerStage.back(), 4);
  EXPECT_EQ(balanced.layersPerChunk, balanced.layersPerStage);
  EXPECT_LT(balanced.stepSeconds, even.stepSeconds * 0.95);
  std::cout << "gemma-like, balanced";
  for (int64_t n : balanced.layersPerStage)
    std::cout << " " << n;
  std::cout << ": " << balanced.stepSeconds << " s, even " << even.stepSeconds
            << " s\n";

  auto cluster = parseCluster("dgx-a100-80g,nodes=4");
  ASSERT_TRUE(cluster.ok());

  m.layers = 32;
  m.hidden = 4096;
  m.heads = 32;
  m.kvHeads = 8;
  m.ffn = 14336;
  m.vocab = 128256;
  p.balanceStages = true;
  p.recompute = Recompute::Full;
  auto llama = scoreTransformerPlan(m, *cluster, p);
  ASSERT_TRUE(llama.ok());
  EXPECT_EQ(llama->layersPerStage, (std::vector<int64_t>{8, 8, 8, 8}));
}

/// Under the interleaved schedule the chunks are balanced too: the
/// Gemma-like model over 4 stages of 2 chunks gives the head's chunk fewer
/// layers than the even split's 3, and the busiest stage's work and the
/// predicted step go down. Refined for the busiest stage (refineForStages)
/// the chunks are 2 1 4 2 3 4 1 1: 2.874 s, against 3.138 s for the
/// slowest chunk's balance alone (2 1 3 3 3 3 2 1) and 3.623 s even.
TEST(StageBalance, InterleavedChunksBalanceAgainstTheHead) {
  TransformerModel m = gemmaLike();
  ParallelConfig p;
  p.tp = 8;
  p.pp = 4;
  p.chunks = 2;
  p.schedule = ScheduleKind::Interleaved;
  p.globalBatch = 64;
  PlanPrediction balanced, even;
  ASSERT_NO_FATAL_FAILURE(scoreBothWays(m, p, balanced, even));
  EXPECT_EQ(even.layersPerChunk,
            (std::vector<int64_t>{2, 2, 2, 2, 2, 2, 3, 3}));
  ASSERT_EQ(balanced.layersPerChunk.size(), 8u);
  EXPECT_EQ(std::accumulate(balanced.layersPerChunk.begin(),
                            balanced.layersPerChunk.end(), int64_t{0}),
            18);
  EXPECT_LT(balanced.layersPerChunk.back(), 3);
  EXPECT_LT(balanced.stepSeconds, even.stepSeconds * 0.85);
  std::cout << "gemma-like interleaved, balanced chunks";
  for (int64_t n : balanced.layersPerChunk)
    std::cout << " " << n;
  std::cout << ": " << balanced.stepSeconds << " s, even " << even.stepSeconds
            << " s\n";
}

/// The refinement for stages never ends worse than it starts, on random
/// layer costs: its busiest stage is at most the start's, and where equal
/// so is its slowest chunk; every chunk keeps a layer and the layers add
/// up. A case with a clear answer: 8 equal layers in 4 chunks over 2
/// stages with a head worth 2 layers on the last chunk (6 against 4 on
/// the even split) moves a layer from stage 1 to stage 0: 5 and 5.
TEST(StageBalance, RefineForStagesNeverWorse) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> cost(0.5, 2.0), extra(0.0, 6.0);
  for (int trial = 0; trial < 200; ++trial) {
    int64_t stages = 2 + trial % 3, v = 2 + trial % 2;
    int64_t chunks = stages * v, layers = chunks + trial % 7;
    std::vector<double> w(layers);
    for (double &x : w)
      x = cost(rng);
    double first = extra(rng), last = extra(rng);
    std::vector<int64_t> start = evenLayerSplit(layers, chunks);
    std::vector<int64_t> got = refineForStages(w, first, last, start, stages);
    ASSERT_EQ(got.size(), start.size());
    EXPECT_EQ(std::accumulate(got.begin(), got.end(), int64_t{0}), layers);
    for (int64_t n : got)
      EXPECT_GE(n, 1);
    double before = busiestStage(w, first, last, start, stages);
    double after = busiestStage(w, first, last, got, stages);
    EXPECT_LE(after, before * (1 + 1e-12));
    if (after >= before * (1 - 1e-12))
      EXPECT_LE(slowestChunk(w, first, last, got),
                slowestChunk(w, first, last, start) * (1 + 1e-12));
  }
  std::vector<double> four(8, 1.0);
  std::vector<int64_t> split =
      refineForStages(four, 0, 2, evenLayerSplit(8, 4), 2);
  // Stage 0 (chunks 0, 2) and stage 1 (chunks 1, 3 + head): 5 and 5.
  EXPECT_EQ(busiestStage(four, 0, 2, split, 2), 5.0);
}

} // namespace

TEST(StageBalance, ChunksThatCostMoreGetFewerLayers) {
  // Twenty equal layers on four stages; the first two stages recompute, so
  // their layers cost 4/3 as much: layers move to the last two stages
  // (4, 4, 6, 6: the slowest stage 18 against the even split's 20).
  std::vector<double> plain(20, 3.0), recomputed(20, 4.0);
  std::vector<std::vector<double>> byChunk = {recomputed, recomputed, plain,
                                              plain};
  std::vector<int64_t> even = evenLayerSplit(20, 4);
  std::vector<int64_t> split = refineForChunkCosts(byChunk, 0, 0, even, 4);
  ASSERT_EQ(split.size(), 4u);
  EXPECT_EQ(split, (std::vector<int64_t>{4, 4, 6, 6}));
  EXPECT_LT(split[0] + split[1], split[2] + split[3]);
  auto busiest = [&](const std::vector<int64_t> &s) {
    double worst = 0;
    size_t layer = 0;
    for (size_t c = 0; c < s.size(); ++c) {
      double t = 0;
      for (int64_t i = 0; i < s[c]; ++i)
        t += byChunk[c][layer++];
      worst = std::max(worst, t);
    }
    return worst;
  };
  EXPECT_LT(busiest(split), busiest(even));
  // A table without a row per chunk leaves the split as it is.
  EXPECT_EQ(refineForChunkCosts({plain}, 0, 0, even, 4), even);
}
