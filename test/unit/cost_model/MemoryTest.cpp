//===- MemoryTest.cpp - The memory model against the papers' formulas -----===//
//
// Each expected value is the closed form printed in the paper (Korthikanti
// et al. 2022, section 4; Rajbhandari et al. 2020, section 3; Narayanan et
// al. 2021), evaluated here; the model must match within 2%.
//
//===----------------------------------------------------------------------===//

#include "cleave/cost_model/Memory.h"
#include "cleave/cost_model/PipelineSchedule.h"

#include "gtest/gtest.h"

#include <cmath>
#include <set>

using namespace cleave::cost;

namespace {

// GPT-3 175B, one of the configurations Korthikanti et al. evaluate.
TransformerMemoryConfig gpt3(int64_t tp, bool sp, Recompute recompute) {
  TransformerMemoryConfig c;
  c.seqLength = 2048;
  c.microBatch = 1;
  c.hidden = 12288;
  c.heads = 96;
  c.layersPerStage = 12;
  c.vocab = 51200;
  c.tp = tp;
  c.sequenceParallel = sp;
  c.recompute = recompute;
  return c;
}

void expectWithin2Percent(double actual, double expected, const char *what) {
  EXPECT_NEAR(actual, expected, 0.02 * expected) << what;
}

} // namespace

TEST(ActivationMemory, MatchesKorthikantiPerLayer) {
  for (int64_t t : {1, 2, 4, 8}) {
    double s = 2048, b = 1, h = 12288, a = 96, tp = static_cast<double>(t);
    double sbh = s * b * h;

    // No parallelism (t = 1) and tensor parallelism: sbh(10 + 24/t + 5as/ht).
    double tensor = sbh * (10 + 24 / tp + 5 * a * s / (h * tp));
    expectWithin2Percent(layerActivationBytes(gpt3(t, false, Recompute::None)),
                         tensor, "tp");
    if (t == 1)
      expectWithin2Percent(
          layerActivationBytes(gpt3(t, false, Recompute::None)),
          sbh * (34 + 5 * a * s / h), "no parallelism");

    // Tensor + sequence parallel: sbh/t (34 + 5as/h).
    expectWithin2Percent(layerActivationBytes(gpt3(t, true, Recompute::None)),
                         sbh / tp * (34 + 5 * a * s / h), "tp+sp");

    // ... with selective recomputation: 34 sbh / t.
    expectWithin2Percent(
        layerActivationBytes(gpt3(t, true, Recompute::Selective)),
        34 * sbh / tp, "tp+sp+selective");

    // Tensor parallel with selective recomputation: sbh(10 + 24/t).
    expectWithin2Percent(
        layerActivationBytes(gpt3(t, false, Recompute::Selective)),
        sbh * (10 + 24 / tp), "tp+selective");

    // Full recomputation keeps the layer input only: 2 sbh.
    expectWithin2Percent(layerActivationBytes(gpt3(t, false, Recompute::Full)),
                         2 * sbh, "full");
  }
}

TEST(ActivationMemory, GatedMlpAndGroupedQueryAttention) {
  // LLaMA-2 70B's layer: SwiGLU of width f = 28672 keeps gate, its SiLU,
  // up and their product (cleave runs SiLU and the product as separate
  // ops); 8 of 64 heads for keys and values. In bytes of 16-bit elements,
  // the tensor-parallel part is 2 sbh (2 + 2 kv/a + 4 f/h) instead of the
  // GPT layer's 24 sbh; the rest is unchanged.
  TransformerMemoryConfig c;
  c.seqLength = 4096;
  c.microBatch = 1;
  c.hidden = 8192;
  c.heads = 64;
  c.kvHeads = 8;
  c.ffn = 28672;
  c.gatedMlp = true;
  c.layersPerStage = 1;
  c.tp = 8;
  c.recompute = Recompute::Selective;
  double sbh = 4096.0 * 8192, t = 8;
  double expected = sbh * (10 + 2 * (2 + 2.0 * 8 / 64 + 4.0 * 28672 / 8192) / t);
  expectWithin2Percent(layerActivationBytes(c), expected, "llama2-70b layer");
  // The same layer read as a GPT layer would be 10 + 24/t.
  EXPECT_GT(layerActivationBytes(c), sbh * (10 + 24 / t));
}

TEST(ActivationMemory, ElementSizeScalesTheSixteenBitTerms) {
  // fp32 activations: the 16-bit tensors double, the 1-byte masks do not.
  TransformerMemoryConfig c = gpt3(1, false, Recompute::None);
  c.activationBytes = 4;
  double s = 2048, b = 1, h = 12288, a = 96;
  // 34 sbh = 32 sbh of 2-byte tensors + 2 sbh of masks; 5as^2b = 4 + 1.
  double expected = (2 * 32 + 2) * s * b * h + (2 * 4 + 1) * a * s * s * b;
  expectWithin2Percent(layerActivationBytes(c), expected, "fp32");
}

TEST(ModelStates, MatchZeroPaper) {
  // ZeRO Figure 1: a 7.5B model on 64 GPUs holds 120, 31.4, 16.6 and
  // 1.9 GB per GPU with no ZeRO, ZeRO-1, ZeRO-2 and ZeRO-3.
  double psi = 7.5e9, n = 64;
  // ZeRO-1 also holds the reduce-scattered block its update reads, and
  // ZeRO-1 and 2 the updated block of the parameters until the next step
  // gathers it (2 psi / n each, which the paper leaves out: 1.5% and 1.7%
  // here).
  double expected[] = {16 * psi, 4 * psi + 16 * psi / n,
                       2 * psi + 16 * psi / n, 16 * psi / n};
  double published[] = {120e9, 31.4e9, 16.6e9, 1.9e9};
  for (int stage = 0; stage <= 3; ++stage) {
    double bytes = modelStateBytes(psi, stage, 64).total();
    expectWithin2Percent(bytes, expected[stage], "formula");
    expectWithin2Percent(bytes, published[stage], "published");
  }
  // Where the bytes go at stage 2: fp16 weights whole, the rest sharded.
  ModelStateBytes zero2 = modelStateBytes(psi, 2, 64);
  EXPECT_DOUBLE_EQ(zero2.params, 2 * psi);
  EXPECT_DOUBLE_EQ(zero2.grads, 2 * psi / n);
  EXPECT_DOUBLE_EQ(zero2.optimizer, 12 * psi / n + 2 * psi / n);
}

TEST(PipelineMemory, ZeroBubbleHoldsWeightGradientInputsAfterTheFirstStage) {
  // ZB-H1 keeps, until each deferred W, its weight GEMMs' inputs and output
  // gradients; the first stage sends no gradient back and runs its whole
  // backward as B (the lowering's split), so it holds what 1F1B holds.
  TransformerMemoryConfig c = gpt3(8, true, Recompute::Selective);
  c.pp = 8;
  c.microbatches = 64;
  c.layersPerStage = 12;
  for (int64_t stage : {0, 3}) {
    c.stage = stage;
    c.schedule = PipelineSchedule::OneFOneB;
    auto oneF = estimateTransformerMemory(c);
    c.schedule = PipelineSchedule::ZeroBubbleH1;
    auto zb = estimateTransformerMemory(c);
    ASSERT_TRUE(oneF.ok() && zb.ok());
    if (stage == 0)
      EXPECT_DOUBLE_EQ(zb->activations, oneF->activations);
    else
      EXPECT_GT(zb->activations, oneF->activations);
  }
}

TEST(PipelineMemory, MicrobatchesInFlightPerSchedule) {
  TransformerMemoryConfig c = gpt3(8, true, Recompute::Selective);
  c.pp = 8;
  c.microbatches = 64;
  for (int64_t i = 0; i < 8; ++i) {
    c.stage = i;
    c.schedule = PipelineSchedule::OneFOneB;
    EXPECT_DOUBLE_EQ(microbatchesInFlight(c), 8 - i); // p - i
    c.schedule = PipelineSchedule::ZeroBubbleH1;
    EXPECT_DOUBLE_EQ(microbatchesInFlight(c), 8 - i);
    c.schedule = PipelineSchedule::GPipe;
    EXPECT_DOUBLE_EQ(microbatchesInFlight(c), 64);
  }
  // Interleaved, v = 3 chunks: the first stage holds p(1 + (p-1)/(p v)).
  c.schedule = PipelineSchedule::Interleaved1F1B;
  c.virtualStages = 3;
  c.stage = 0;
  double p = 8, v = 3;
  EXPECT_NEAR(microbatchesInFlight(c), p * (1 + (p - 1) / (p * v)), 1e-12);
  // Other stages: Megatron's warm-up 2(p-i-1) + (v-1)p, plus the one in
  // its steady state, in chunks of 1/v of the stage.
  c.stage = 5;
  EXPECT_NEAR(microbatchesInFlight(c), (2 * (p - 5 - 1) + (v - 1) * p + 1) / v,
              1e-12);
  // Few microbatches cap what is in flight.
  c.schedule = PipelineSchedule::OneFOneB;
  c.virtualStages = 1;
  c.stage = 0;
  c.microbatches = 3;
  EXPECT_DOUBLE_EQ(microbatchesInFlight(c), 3);
  // Without pipelining, gradient accumulation holds one at a time.
  c.pp = 1;
  c.schedule = PipelineSchedule::GPipe;
  EXPECT_DOUBLE_EQ(microbatchesInFlight(c), 1);
}

TEST(PipelineMemory, FirstStageHoldsTheWholeModelsActivations) {
  // Korthikanti 4.2.3: with 1F1B the first stage holds p microbatches of
  // L/p layers, sbhL 34 / t in total with TP + SP + selective
  // recomputation.
  TransformerMemoryConfig c = gpt3(8, true, Recompute::Selective);
  c.pp = 8;
  c.microbatches = 64;
  c.vocab = 0; // the transformer layers only
  double s = 2048, b = 1, h = 12288, a = 96, t = 8, layers = 96;
  absl::StatusOr<MemoryBreakdown> memory = estimateTransformerMemory(c);
  ASSERT_TRUE(memory.ok()) << memory.status();
  // Recomputing one layer's attention core adds its 5as^2b/t once.
  double recomputeWorkingSet = 5 * a * s * s * b / t;
  expectWithin2Percent(memory->activations - recomputeWorkingSet,
                       s * b * h * layers * 34 / t, "first stage");
}

TEST(MemoryBreakdown, Gpt3OnAThousandGpus) {
  // GPT-3 175B, t = 8, p = 8 (12 layers a stage), d = 16, ZeRO-1, 1F1B with
  // 64 microbatches, TP + SP + selective recomputation: the first stage.
  TransformerMemoryConfig c = gpt3(8, true, Recompute::Selective);
  c.pp = 8;
  c.dp = 16;
  c.zeroStage = 1;
  c.microbatches = 64;
  double s = 2048, b = 1, h = 12288, a = 96, v = 51200, t = 8;
  double sbh = s * b * h;

  // Parameters: 12 layers of (12h^2 + 7h)/t + 6h, and the word embedding.
  double params = 12 * ((12 * h * h + 7 * h) / t + 6 * h) + v * h / t;
  // ZeRO-1 keeps the reduce-scattered gradient block its update reads,
  // and the updated parameter block until the next step gathers it.
  double weights = 2 * params, grads = 2 * params + 2 * params / 16,
         optimizer = 12 * params / 16 + 2 * params / 16;
  // Activations: 8 microbatches x 12 layers x 34 sbh / t, one layer's
  // recomputed attention core, the embedding dropout mask per microbatch.
  double activations =
      8 * 12 * 34 * sbh / t + 5 * a * s * s * b / t + 8 * sbh / t;
  // Three NCCL communicators (tp, pp, dp), the activations sent to the
  // next stage in two slots (the first stage sends no gradient back), two
  // 25 MiB gradient buckets.
  double mib = 1024.0 * 1024;
  double comm = 3 * 128 * mib + 2 * 2 * sbh / t + 50 * mib;
  double allocated = weights + grads + optimizer + activations + comm;

  absl::StatusOr<MemoryBreakdown> memory = estimateTransformerMemory(c);
  ASSERT_TRUE(memory.ok()) << memory.status();
  expectWithin2Percent(memory->params, weights, "params");
  expectWithin2Percent(memory->grads, grads, "grads");
  expectWithin2Percent(memory->optimizer, optimizer, "optimizer");
  expectWithin2Percent(memory->activations, activations, "activations");
  expectWithin2Percent(memory->commBuffers, comm, "comm");
  expectWithin2Percent(memory->fragmentation, 0.1 * allocated, "frag");
  expectWithin2Percent(memory->total, 1.1 * allocated, "total");
  // It fits an 80 GB A100.
  EXPECT_LT(memory->total, 80e9);

  std::vector<std::pair<std::string_view, double>> items = memory->items();
  ASSERT_EQ(items.size(), 8u);
  EXPECT_EQ(items.front().first, "params");
  EXPECT_EQ(items[4].first, "comm_buffers");
  EXPECT_EQ(items.back().first, "total");
  double sum = 0;
  for (size_t i = 0; i + 1 < items.size(); ++i)
    sum += items[i].second;
  EXPECT_NEAR(sum, memory->total, memory->total * 1e-12);
}

TEST(MemoryBreakdown, LastStageAddsTheOutputLayer) {
  TransformerMemoryConfig c = gpt3(8, true, Recompute::Selective);
  c.pp = 8;
  c.microbatches = 64;
  c.stage = 7;
  double s = 2048, b = 1, h = 12288, v = 51200, t = 8;
  TransformerMemoryConfig noVocab = c;
  noVocab.vocab = 0;
  absl::StatusOr<MemoryBreakdown> with = estimateTransformerMemory(c);
  absl::StatusOr<MemoryBreakdown> without = estimateTransformerMemory(noVocab);
  ASSERT_TRUE(with.ok() && without.ok());
  // Korthikanti 4.3: 4sbh/t (1 + v/h) for one microbatch in flight, plus
  // the one-byte mask of each label's column that the decomposed
  // vocab-parallel cross entropy stashes (the paper's fused kernel has
  // none).
  expectWithin2Percent(with->activations - without->activations,
                       4 * s * b * h / t * (1 + v / h) + s * b * v / t,
                       "output layer");
  // The copy of the tied embedding and the final layer norm, in fp16.
  expectWithin2Percent(with->params - without->params, 2 * (v * h / t + 2 * h),
                       "output params");
}

TEST(MemoryBreakdown, VocabularyThatTpDoesNotDivideKeepsWholeLogits) {
  // GPT-2's 50257 rows over tp = 4: the table is split along the hidden
  // dimension, so every rank holds each microbatch's whole fp32 logits.
  TransformerMemoryConfig c = gpt3(1, false, Recompute::None);
  c.layersPerStage = 0;
  c.dropout = false; // no embedding dropout mask beside the head's terms
  c.hidden = 768;
  c.heads = 12;
  c.seqLength = 1024;
  c.microBatch = 4;
  c.tp = 4;
  c.vocab = 50257;
  double s = 1024, b = 4, h = 768, v = 50257, t = 4;
  double whole = 4 * s * b * v;
  absl::StatusOr<MemoryBreakdown> unsplit = estimateTransformerMemory(c);
  ASSERT_TRUE(unsplit.ok()) << unsplit.status();
  expectWithin2Percent(unsplit->activations, 2 * c.activationBytes * s * b * h +
                                                 whole,
                       "whole logits");
  // Their gradient beside the table gradient's two partial sums.
  EXPECT_NEAR(unsplit->workspace, whole + 2 * c.gradBytes * v * h / t, 1.0);

  // With sequence parallelism the stash keeps the token block the logits
  // are reduce-scattered to; the whole gradient is gathered beside it.
  c.sequenceParallel = true;
  absl::StatusOr<MemoryBreakdown> sp = estimateTransformerMemory(c);
  ASSERT_TRUE(sp.ok()) << sp.status();
  expectWithin2Percent(sp->activations,
                       2 * c.activationBytes * s * b * h / t + whole / t,
                       "token block");
  EXPECT_NEAR(sp->workspace, whole + whole / t, 1.0);

  // Padded to 50260 rows the vocabulary splits: a block of the logits and
  // the label mask, and the backward holds three block-sized gradients at
  // once.
  c.sequenceParallel = false;
  c.vocab = 50260;
  absl::StatusOr<MemoryBreakdown> split = estimateTransformerMemory(c);
  ASSERT_TRUE(split.ok()) << split.status();
  expectWithin2Percent(split->activations,
                       2 * c.activationBytes * s * b * h +
                           5 * s * b * 50260 / t,
                       "split logits");
  EXPECT_NEAR(split->workspace, 3 * 4 * s * b * 50260 / t, 1.0);
}

TEST(MemoryBreakdown, ZeroThreeShardsEverythingButGathersALayer) {
  TransformerMemoryConfig c = gpt3(1, false, Recompute::Full);
  c.layersPerStage = 4;
  c.vocab = 0;
  c.dp = 8;
  c.zeroStage = 3;
  double h = 12288;
  double layer = 12 * h * h + 13 * h;
  absl::StatusOr<MemoryBreakdown> memory = estimateTransformerMemory(c);
  ASSERT_TRUE(memory.ok());
  expectWithin2Percent(memory->params + memory->grads + memory->optimizer,
                       16 * 4 * layer / 8, "states");
  // Two layers' gathered fp16 weights and one layer's fp16 gradients, on
  // top of one NCCL communicator and the gradient buckets.
  double mib = 1024.0 * 1024;
  expectWithin2Percent(memory->commBuffers,
                       (2 * 2 + 2) * layer + 128 * mib + 50 * mib, "gather");
}

TEST(MemoryConfig, ErrorsNameTheField) {
  TransformerMemoryConfig c = gpt3(5, false, Recompute::None);
  absl::StatusOr<MemoryBreakdown> bad = estimateTransformerMemory(c);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(std::string(bad.status().message())
                .find("heads must be a multiple of tp"),
            std::string::npos)
      << bad.status();
  c = gpt3(8, false, Recompute::None);
  c.stage = 1;
  EXPECT_NE(std::string(validateMemoryConfig(c).message())
                .find("stage must be in [0, pp)"),
            std::string::npos);
  c.stage = 0;
  c.zeroStage = 4;
  EXPECT_FALSE(validateMemoryConfig(c).ok());
  c.zeroStage = 0;
  c.virtualStages = 2;
  EXPECT_NE(std::string(validateMemoryConfig(c).message())
                .find("interleaved schedule"),
            std::string::npos);
  c.virtualStages = 1;
  c.fragmentation = 1.5;
  EXPECT_FALSE(validateMemoryConfig(c).ok());
  c.fragmentation = 0.1;
  EXPECT_TRUE(validateMemoryConfig(c).ok());
}

TEST(MemoryNames, AreDistinct) {
  std::set<std::string_view> names;
  for (PipelineSchedule s :
       {PipelineSchedule::GPipe, PipelineSchedule::OneFOneB,
        PipelineSchedule::Interleaved1F1B, PipelineSchedule::ZeroBubbleH1})
    names.insert(pipelineScheduleName(s));
  for (Recompute r : {Recompute::None, Recompute::Selective, Recompute::Full})
    names.insert(recomputeName(r));
  EXPECT_EQ(names.size(), 7u);
}

TEST(MemoryBreakdown, InterleavedStashesAreThePlannedFrames) {
  // The first of 2 stages, 2 chunks of 3 and 4 layers, 8 microbatches:
  // the lowering keeps the chunks' stashes in frames (planStashFrames),
  // so a stage holds frames of its larger chunk, more than the average
  // chunk in flight. Even chunks price as before.
  TransformerMemoryConfig c = gpt3(8, true, Recompute::None);
  c.vocab = 0;
  c.pp = 2;
  c.stage = 0;
  c.schedule = PipelineSchedule::Interleaved1F1B;
  c.virtualStages = 2;
  c.microbatches = 8;
  c.layersPerStage = 8;
  absl::StatusOr<MemoryBreakdown> averaged = estimateTransformerMemory(c);
  c.chunkLayers = {4, 4};
  absl::StatusOr<MemoryBreakdown> even = estimateTransformerMemory(c);
  ASSERT_TRUE(averaged.ok() && even.ok());
  EXPECT_NEAR(even->activations, averaged->activations,
              1e-9 * averaged->activations);

  c.layersPerStage = 7;
  c.chunkLayers = {3, 4};
  absl::StatusOr<MemoryBreakdown> uneven = estimateTransformerMemory(c);
  ASSERT_TRUE(uneven.ok());
  absl::StatusOr<std::vector<PipelineSlot>> order =
      pipelineOrder(ScheduleKind::Interleaved, 2, 0, 8, 2);
  ASSERT_TRUE(order.ok());
  double layer = layerActivationBytes(c);
  double frames = planStashFrames(*order, {3 * layer, 4 * layer}).bytes;
  EXPECT_NEAR(uneven->activations, frames, 1e-9 * frames);
  EXPECT_GT(uneven->activations,
            7 * layer * microbatchesInFlight(c) * 1.05);
}

TEST(MemoryBreakdown, ExpertLayersStashTheirCapacitySlots) {
  // Mixtral-like layer at 1024 tokens: 8 experts, top-2, capacity factor
  // 1.25, so 320 slots an expert. Tensor parallelism splits the experts;
  // each keeps the SwiGLU MLP's four ffn-wide tensors over its slots, the
  // dispatched tokens and the expert outputs, where the dense layer keeps
  // the four over the tokens.
  TransformerMemoryConfig c;
  c.seqLength = 1024;
  c.microBatch = 1;
  c.hidden = 1024;
  c.heads = 16;
  c.kvHeads = 4;
  c.ffn = 2816;
  c.gatedMlp = true;
  c.activationBytes = 4;
  c.experts = 8;
  c.topK = 2;
  c.capacityFactor = 1.25;
  double tokens = 1024, h = 1024, f = 2816, slots = 8 * 320;
  for (int64_t t : {1, 2}) {
    c.tp = t;
    c.sequenceParallel = t > 1;
    double extra = 4 * slots / t * (4 * f + 2 * h) - 4 * tokens * 4 * f / t +
                   4 * tokens * h * (1 - 1.0 / t) + tokens * (8 * 4 + 2 * 4 + 16);
    EXPECT_NEAR(moeLayerExtraBytes(c), extra, 1.0) << "tp " << t;
  }
  // Full recomputation keeps only each layer's input.
  c.recompute = Recompute::Full;
  EXPECT_EQ(moeLayerExtraBytes(c), 0);
  c.recompute = Recompute::None;
  c.experts = 0;
  EXPECT_EQ(moeLayerExtraBytes(c), 0);
}
