//===- TransformerPlanTest.cpp - Knob-level plan scoring -----------------===//

#include "cleave/cost_model/PlanKnobs.h"
#include "cleave/cost_model/Profile.h"
#include "cleave/cost_model/TransformerPlan.h"

#include "gtest/gtest.h"

using namespace cleave::cost;

namespace {

TransformerModel gpt(int64_t layers, int64_t hidden, int64_t heads) {
  TransformerModel m;
  m.name = "gpt";
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.seq = 2048;
  m.vocab = 51200;
  return m;
}

Cluster a100(int64_t nodes) {
  auto c = parseCluster("dgx-a100-80g,nodes=" + std::to_string(nodes));
  EXPECT_TRUE(c.ok()) << c.status();
  return *c;
}

TEST(TransformerPlan, ParameterCountMatchesGpt3) {
  TransformerModel m = gpt(96, 12288, 96);
  m.vocab = 50257;
  EXPECT_DOUBLE_EQ(m.parameters(), 174604259328.0);
}

TEST(TransformerPlan, FlopsFollowMegatronsFormula) {
  // Without recomputation: 72 B s l h^2 (1 + s/6h + V/12lh) model FLOPs;
  // with full recomputation the hardware runs Megatron's 96 B s l h^2 (...)
  // less the MLP output GEMM's forward, 8 B s l h^2, which cleave's
  // recomputation does not run again (its result is the stashed layer
  // output's only input).
  TransformerModel m = gpt(8, 2048, 16);
  ParallelConfig p;
  p.dp = 2;
  p.tp = 2;
  p.pp = 2;
  p.globalBatch = 16;
  p.microbatchSize = 2;
  p.recompute = Recompute::Full;
  auto r = scoreTransformerPlan(m, a100(1), p);
  ASSERT_TRUE(r.ok()) << r.status();
  double B = 16, s = 2048, l = 8, h = 2048, V = 51200;
  double model = 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
  EXPECT_NEAR(r->modelFlops / model, 1.0, 1e-9);
  EXPECT_NEAR(r->hardwareFlops /
                  (megatronFlopsPerStep(m, 16) - 8 * B * s * l * h * h),
              1.0, 1e-9);
  // Priced as Megatron-LM recomputes (recompute-scope=layer), exactly its
  // formula.
  ParallelConfig whole = p;
  whole.recomputeWholeLayer = true;
  auto w = scoreTransformerPlan(m, a100(1), whole);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_NEAR(w->hardwareFlops / megatronFlopsPerStep(m, 16), 1.0, 1e-9);
  EXPECT_GT(w->stepSeconds, r->stepSeconds);
  EXPECT_EQ(r->numMicrobatches, 4);
  // The head over 51200 words costs more than a layer: the last stage
  // gives one up (StageBalance.h).
  EXPECT_EQ(r->layersPerStage, (std::vector<int64_t>{5, 3}));
  EXPECT_GT(r->mfu, 0.2);
  EXPECT_LT(r->mfu, 0.8);
}

TEST(TransformerPlan, RecomputationTradesTimeForMemory) {
  TransformerModel m = gpt(24, 4096, 32);
  ParallelConfig p;
  p.tp = 8;
  p.globalBatch = 8;
  p.microbatchSize = 4;
  auto none = scoreTransformerPlan(m, a100(1), p);
  p.recompute = Recompute::Full;
  auto full = scoreTransformerPlan(m, a100(1), p);
  ASSERT_TRUE(none.ok() && full.ok());
  EXPECT_GT(full->stepSeconds, none->stepSeconds * 1.2);
  EXPECT_LT(full->memory.activations, none->memory.activations / 5);
  // Model FLOPs do not count recomputation.
  EXPECT_DOUBLE_EQ(full->modelFlops, none->modelFlops);
  EXPECT_LT(full->tflopsPerDevice, none->tflopsPerDevice);
}

TEST(TransformerPlan, FusedAttentionKeepsNoScoresAndSkipsMaskedBlocks) {
  // Sequence 8192: unfused, a layer's stash is dominated by the score-sized
  // softmax and dropout tensors (5 a s^2 b); fused, only the log-sum-exp of
  // each query row is kept, and the causal kernel skips half the blocks.
  TransformerModel m = gpt(8, 4096, 32);
  m.seq = 8192;
  ParallelConfig p;
  p.tp = 8;
  p.globalBatch = 8;
  p.microbatchSize = 1;
  p.precision = DType::Bf16;
  Cluster c = a100(1);
  c.device.memoryBytes = 1e15; // compare, do not refuse
  auto unfused = scoreTransformerPlan(m, c, p);
  p.fusedAttention = true;
  auto fused = scoreTransformerPlan(m, c, p);
  m.causal = false;
  auto bidirectional = scoreTransformerPlan(m, c, p);
  ASSERT_TRUE(unfused.ok() && fused.ok() && bidirectional.ok());
  // Per layer and microbatch, the scores held unfused: softmax output,
  // dropout output (2 bytes each) and mask (1 byte) over a/t heads.
  double scores = 5.0 * 32 / 8 * 8192.0 * 8192.0;
  EXPECT_GT(unfused->memory.activations - fused->memory.activations,
            0.9 * 8 * scores);
  EXPECT_LT(fused->memory.activations, unfused->memory.activations / 3);
  EXPECT_LT(fused->stepSeconds, unfused->stepSeconds);
  EXPECT_LT(fused->stepSeconds, bidirectional->stepSeconds);
  // The FLOPs counted are the model's whichever kernel runs them.
  EXPECT_DOUBLE_EQ(fused->modelFlops, unfused->modelFlops);
  EXPECT_DOUBLE_EQ(bidirectional->modelFlops, fused->modelFlops);
  // Knob text and parsing round-trip.
  EXPECT_NE(planKnobsString(fused->plan).find("attention=fused"),
            std::string::npos);
}

TEST(TransformerPlan, ZeroShardsOptimizerState) {
  TransformerModel m = gpt(12, 2048, 16);
  ParallelConfig p;
  p.dp = 8;
  p.globalBatch = 64;
  auto z0 = scoreTransformerPlan(m, a100(1), p);
  p.zero = 1;
  auto z1 = scoreTransformerPlan(m, a100(1), p);
  ASSERT_TRUE(z0.ok() && z1.ok());
  // bf16 (the default precision) without ZeRO: the parameters are the
  // fp32 masters (4 bytes) beside Adam's two moments (8). ZeRO-1: bf16
  // parameters (2 bytes), and split eight ways the fp32 masters, the
  // moments and the updated bf16 block kept until the next step gathers
  // it: 14 bytes a parameter.
  double params = z0->memory.params / 4;
  EXPECT_NEAR(z0->memory.optimizer, 8 * params, 1.0);
  EXPECT_NEAR(z1->memory.params, 2 * params, 1.0);
  EXPECT_NEAR(z1->memory.optimizer, 14 * params / 8, 1.0);
}

TEST(TransformerPlan, PipelineBubbleShrinksWithMicrobatches) {
  // A small vocabulary keeps the stages balanced (a large LM head makes
  // the last stage the bottleneck, which the next test shows).
  TransformerModel m = gpt(32, 4096, 32);
  m.vocab = 512;
  ParallelConfig p;
  p.pp = 8;
  p.globalBatch = 8;
  auto few = scoreTransformerPlan(m, a100(1), p);
  p.globalBatch = 64;
  auto many = scoreTransformerPlan(m, a100(1), p);
  ASSERT_TRUE(few.ok() && many.ok()) << few.status() << many.status();
  // 1F1B: the first stage idles about (p-1)/(m+p-1).
  EXPECT_NEAR(few->bubbleFraction, 7.0 / 15, 0.08);
  EXPECT_NEAR(many->bubbleFraction, 7.0 / 71, 0.03);
}

TEST(TransformerPlan, LargeHeadUnbalancesTheLastStage) {
  TransformerModel m = gpt(32, 4096, 32);
  ParallelConfig p;
  p.pp = 8;
  p.globalBatch = 64;
  auto big = scoreTransformerPlan(m, a100(1), p);
  m.vocab = 512;
  auto small = scoreTransformerPlan(m, a100(1), p);
  ASSERT_TRUE(big.ok() && small.ok());
  // The other stages wait for the one holding the 51200-way head.
  EXPECT_GT(big->bubbleFraction, small->bubbleFraction + 0.05);
}

TEST(TransformerPlan, InfeasiblePlansNameTheReason) {
  TransformerModel m = gpt(24, 4096, 32);
  ParallelConfig p;
  p.globalBatch = 8;
  p.dp = 4;
  auto devices = scoreTransformerPlan(m, a100(1), p);
  EXPECT_NE(devices.status().message().find("but the cluster has 8"),
            std::string::npos)
      << devices.status();
  p.dp = 1;
  p.tp = 8;
  p.globalBatch = 3;
  p.microbatchSize = 2;
  auto batch = scoreTransformerPlan(m, a100(1), p);
  EXPECT_NE(batch.status().message().find("not a multiple"), std::string::npos);

  TransformerModel big = gpt(96, 12288, 96);
  ParallelConfig q;
  q.tp = 8;
  q.globalBatch = 8;
  auto oom = scoreTransformerPlan(big, a100(1), q);
  ASSERT_FALSE(oom.ok());
  EXPECT_EQ(oom.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(oom.status().message().find("optimizer"), std::string::npos)
      << oom.status();
}

TEST(PlanKnobs, ParseAndPrint) {
  ParallelConfig p;
  auto given = applyPlanKnobs(
      "tp=8,pp=16,microbatch=2,schedule=interleaved,vpp=4,recompute="
      "selective,zero=1,sp=on,precision=fp16",
      p);
  ASSERT_TRUE(given.ok()) << given.status();
  EXPECT_TRUE(given->contains(Knob::Tp) && given->contains(Knob::Vpp) &&
              given->contains(Knob::Precision));
  EXPECT_FALSE(given->contains(Knob::Dp) || given->contains(Knob::Cp));
  for (size_t i = 0; i < kNumKnobs; ++i) {
    Knob k = static_cast<Knob>(i);
    EXPECT_EQ(knobNamed(knobName(k)), k) << knobName(k);
  }
  EXPECT_EQ(knobNamed("tq"), std::nullopt);
  ASSERT_TRUE(inferDataParallel(1024, false, p).ok());
  EXPECT_EQ(p.dp, 8);
  EXPECT_EQ(planKnobsString(p),
            "dp=8,tp=8,pp=16,cp=1,ep=1,sp=on,zero=1,microbatch=2,"
            "schedule=interleaved,vpp=4,recompute=selective,precision=fp16");
  ParallelConfig q;
  EXPECT_NE(applyPlanKnobs("tq=2", q).status().message().find(
                "unknown knob 'tq'"),
            std::string::npos);
  EXPECT_NE(applyPlanKnobs("zero=5", q).status().message().find("0, 1, 2 or 3"),
            std::string::npos);
  EXPECT_NE(applyPlanKnobs("schedule=pipedream", q).status().message().find(
                "unknown schedule"),
            std::string::npos);
  EXPECT_FALSE(inferDataParallel(1024, false, q = ParallelConfig{1, 3}).ok());
}

} // namespace

namespace {

Cluster cpu(int64_t devices, int64_t cores) {
  auto c = parseCluster("cpu-local,devices=" + std::to_string(devices) +
                        ",cores=" + std::to_string(cores));
  EXPECT_TRUE(c.ok()) << c.status();
  return *c;
}

/// A GPT as small as the CPU benches' (sequence 128, vocabulary 512).
TransformerModel smallGpt(int64_t layers, int64_t hidden, int64_t heads) {
  TransformerModel m = gpt(layers, hidden, heads);
  m.seq = 128;
  m.vocab = 512;
  return m;
}

/// `p` scored on four CPU ranks with four cores and with two: what sharing
/// the cores costs is the ratio of the two steps.
struct FourAndTwoCores {
  absl::StatusOr<PlanPrediction> four, two;
};
FourAndTwoCores scoreOnFourAndTwoCores(const TransformerModel &m,
                                       const ParallelConfig &p) {
  return {scoreTransformerPlan(m, cpu(4, 4), p),
          scoreTransformerPlan(m, cpu(4, 2), p)};
}

} // namespace

TEST(TransformerPlan, RanksBeyondTheCoresShareThem) {
  // Four data-parallel ranks on two cores keep all four busy: every op
  // takes twice as long as on four cores.
  TransformerModel m = smallGpt(2, 256, 4);
  ParallelConfig p;
  p.dp = 4;
  p.globalBatch = 8;
  p.precision = DType::Fp32;
  auto [four, two] = scoreOnFourAndTwoCores(m, p);
  ASSERT_TRUE(four.ok() && two.ok()) << four.status() << two.status();
  EXPECT_GT(two->stepSeconds, 1.8 * four->stepSeconds);
  EXPECT_LT(two->stepSeconds, 2.1 * four->stepSeconds);
}

TEST(TransformerPlan, RanksIdleInBubblesLeaveTheirCores) {
  // One microbatch through four stages: one rank is busy at a time, so
  // two cores are enough and sharing them costs nothing.
  TransformerModel m = smallGpt(4, 256, 4);
  ParallelConfig p;
  p.pp = 4;
  p.globalBatch = 1;
  p.precision = DType::Fp32;
  auto [four, two] = scoreOnFourAndTwoCores(m, p);
  ASSERT_TRUE(four.ok() && two.ok()) << four.status() << two.status();
  EXPECT_GT(four->bubbleFraction, 0.6);
  EXPECT_NEAR(two->stepSeconds, four->stepSeconds, 0.01 * four->stepSeconds);
}

TEST(TransformerPlan, PipelineSteadyStateSharesTheCoresFully) {
  // Sixteen microbatches through four stages on two cores: in the steady
  // state all four stages are busy, at half speed; in the fill and drain
  // fewer are, and each task runs at the sharing of its own span. So the
  // step lies between the steady state's share of it doubled and all of it
  // doubled, well above the step-averaged share, 4 (1 - bubble) / 2.
  TransformerModel m = smallGpt(4, 256, 4);
  ParallelConfig p;
  p.pp = 4;
  p.globalBatch = 16;
  p.precision = DType::Fp32;
  auto [four, two] = scoreOnFourAndTwoCores(m, p);
  ASSERT_TRUE(four.ok() && two.ok()) << four.status() << two.status();
  double bubble = four->bubbleFraction;
  EXPECT_GT(bubble, 0.1);
  EXPECT_GT(two->stepSeconds, 1.5 * four->stepSeconds);
  EXPECT_GT(two->stepSeconds, 2 * (1 - bubble) * four->stepSeconds);
  EXPECT_LT(two->stepSeconds, 1.95 * four->stepSeconds);
}

TEST(TransformerPlan, StagesTakingTurnsRunUnshared) {
  // Two stages of two data-parallel ranks each, one microbatch, on two
  // cores: the stages take turns, so two ranks compute at a time and have
  // a core each. Only the second stage's gradient reduction and optimizer
  // step overlap the first stage's backward pass. Slowing every op by the
  // sharing averaged over the work priced this plan 27% above its unshared
  // time, each task by its own span 15% (on the calibration GPT, measured:
  // forward 71 ms a stage, against 94 ms priced the first way).
  TransformerModel m = smallGpt(4, 256, 4);
  ParallelConfig p;
  p.pp = 2;
  p.dp = 2;
  p.globalBatch = 2;
  p.microbatchSize = 1;
  p.precision = DType::Fp32;
  auto [four, two] = scoreOnFourAndTwoCores(m, p);
  ASSERT_TRUE(four.ok() && two.ok()) << four.status() << two.status();
  EXPECT_GT(two->stepSeconds, 1.05 * four->stepSeconds);
  EXPECT_LT(two->stepSeconds, 1.2 * four->stepSeconds);
}

TEST(TransformerPlan, WaitingRanksTakeTheirMeasuredLoad) {
  // One microbatch through four stages on two cores: one rank works while
  // three wait. Waits that sleep cost nothing; waits that spin a whole core
  // each make four busy ranks on two cores, twice as slow.
  TransformerModel m = smallGpt(4, 256, 4);
  ParallelConfig p;
  p.pp = 4;
  p.globalBatch = 1;
  p.precision = DType::Fp32;
  Profile sleeping, spinning, third;
  sleeping.waitingRankLoad = 0;
  spinning.waitingRankLoad = 1;
  // 1 + 3 x 1/3 = two cores' worth while one rank computes; only the
  // moments when several are busy (transfers, the optimizer step) slow.
  third.waitingRankLoad = 1.0 / 3;
  auto own = scoreTransformerPlan(m, cpu(4, 4), p, &spinning);
  auto slept = scoreTransformerPlan(m, cpu(4, 2), p, &sleeping);
  auto spun = scoreTransformerPlan(m, cpu(4, 2), p, &spinning);
  auto thirds = scoreTransformerPlan(m, cpu(4, 2), p, &third);
  ASSERT_TRUE(own.ok() && slept.ok() && spun.ok() && thirds.ok());
  EXPECT_NEAR(slept->stepSeconds, own->stepSeconds, 0.01 * own->stepSeconds);
  EXPECT_GT(thirds->stepSeconds, slept->stepSeconds);
  EXPECT_LT(thirds->stepSeconds, 1.2 * own->stepSeconds);
  EXPECT_NEAR(spun->stepSeconds, 2 * own->stepSeconds,
              0.05 * own->stepSeconds);
}

TEST(TransformerPlan, LayerCollectivesOnSharedCoresTakeTheirMeasuredSlowdown) {
  // The profile's in_step_collective_wait adds to each
  // collective inside the layers (tensor parallelism's here) where ranks
  // share cores, and to nothing else: not where each rank has a core, not
  // to a plan without such collectives.
  TransformerModel m = smallGpt(4, 512, 8);
  ParallelConfig tp;
  tp.tp = 4;
  tp.globalBatch = 8;
  tp.microbatchSize = 8;
  tp.precision = DType::Fp32;
  ParallelConfig dp = tp;
  dp.tp = 1;
  dp.dp = 4;
  dp.microbatchSize = 2;
  Profile plain, slowed;
  slowed.inStepCollectiveWait = 0.5e-3;
  auto score = [&](const ParallelConfig &p, const Cluster &c,
                   const Profile &profile) {
    auto scored = scoreTransformerPlan(m, c, p, &profile);
    EXPECT_TRUE(scored.ok()) << scored.status();
    return scored.ok() ? scored->stepSeconds : 0.0;
  };
  double sharedPlain = score(tp, cpu(4, 2), plain);
  double sharedSlowed = score(tp, cpu(4, 2), slowed);
  // One microbatch through 4 layers: 2 all-reduces forward and 2 backward
  // each, then the embedding's all-reduce and the cross-entropy's three,
  // all on the critical path, each waiting the profile's 0.5 ms.
  double wait = inStepCollectiveWait(cpu(4, 2), &slowed);
  EXPECT_DOUBLE_EQ(wait, 0.5e-3);
  EXPECT_NEAR(sharedSlowed - sharedPlain, (4 * 4 + 1 + 3) * wait,
              1e-6 * sharedPlain);
  EXPECT_NEAR(score(tp, cpu(4, 4), slowed), score(tp, cpu(4, 4), plain),
              1e-12);
  EXPECT_NEAR(score(dp, cpu(4, 2), slowed), score(dp, cpu(4, 2), plain),
              1e-12);
}

/// The step of `p` on 4 ranks sharing 2 cores under two profiles.
std::pair<double, double> stepsOnTwoCores(const TransformerModel &m,
                                          const ParallelConfig &p,
                                          const Profile &a, const Profile &b) {
  auto first = scoreTransformerPlan(m, cpu(4, 2), p, &a);
  auto second = scoreTransformerPlan(m, cpu(4, 2), p, &b);
  EXPECT_TRUE(first.ok() && second.ok());
  if (!first.ok() || !second.ok())
    return {1.0, 1.0};
  return {first->stepSeconds, second->stepSeconds};
}

TEST(TransformerPlan, OlderProfilesSlowdownBecomesAWait) {
  // A profile from before in_step_collective_wait holds the factor on the
  // 1 MiB all-gather it was measured beside: (3 - 1) x that gather, as the
  // profile's own curve times it (a flat 1 ms here).
  Profile old;
  old.inStepCollectiveSlowdown = 3;
  auto curve = CollectiveCurve::create({{1.0, 1e-3}, {1e12, 1e-3}});
  ASSERT_TRUE(curve.ok());
  old.collectives.emplace(CollectiveKey{Collective::AllGather, 4, 4, 1},
                          *curve);
  EXPECT_NEAR(inStepCollectiveWait(cpu(4, 2), &old), 2e-3, 1e-12);
  // A measured wait is taken as it is; ranks with a core each never wait.
  old.inStepCollectiveWait = 0.25e-3;
  EXPECT_DOUBLE_EQ(inStepCollectiveWait(cpu(4, 2), &old), 0.25e-3);
  EXPECT_DOUBLE_EQ(inStepCollectiveWait(cpu(4, 4), &old), 0);
}

TEST(TransformerPlan, InStepWaitIsPerCollectiveNotPerByte) {
  // Time-sliced ranks wait for the slowest at every collective, however
  // small: the profile's measured wait each. tp=4 in
  // microbatches of 1 runs 8 times the calls of one microbatch of 8, each
  // an eighth of the bytes, so it waits 8 times as long.
  TransformerModel m = smallGpt(4, 512, 8);
  ParallelConfig p;
  p.tp = 4;
  p.globalBatch = 8;
  p.precision = DType::Fp32;
  Profile plain, slowed;
  slowed.inStepCollectiveWait = 0.5e-3;
  auto added = [&](int64_t microbatch) {
    p.microbatchSize = microbatch;
    auto [without, with] = stepsOnTwoCores(m, p, plain, slowed);
    return with - without;
  };
  double small = added(1), large = added(8);
  ASSERT_GT(large, 0);
  EXPECT_NEAR(small / large, 8.0, 0.8);
}

TEST(TransformerPlan, LayerCollectivesPayTheSlowdownAsFarAsBusyRanksShareCores) {
  // The in-step wait was measured with every rank busy. A pipeline of one
  // microbatch runs its stages in turn: two of four ranks busy on two
  // cores, so its tensor-parallel collectives are not slowed (beyond what
  // waiting ranks take); with 8 microbatches the stages overlap and they
  // are, though less than tp4's, whose ranks are always all busy.
  TransformerModel m = smallGpt(4, 512, 8);
  ParallelConfig p;
  p.tp = 2;
  p.pp = 2;
  p.globalBatch = 8;
  p.microbatchSize = 8;
  p.precision = DType::Fp32;
  ParallelConfig many = p;
  many.microbatchSize = 1;
  ParallelConfig tp4 = p;
  tp4.tp = 4;
  tp4.pp = 1;
  tp4.microbatchSize = 1;
  Profile plain, slowed;
  slowed.inStepCollectiveWait = 0.5e-3;
  slowed.waitingRankLoad = 0.01;
  plain.waitingRankLoad = 0.01;
  // How much the slowdown adds to a step, against the step.
  auto added = [&](const ParallelConfig &c) {
    auto [without, with] = stepsOnTwoCores(m, c, plain, slowed);
    return with / without - 1;
  };
  double one = added(p), eight = added(many), always = added(tp4);
  EXPECT_LT(one, 0.002) << "one microbatch: the stages take turns";
  EXPECT_GT(eight, 0.01);
  EXPECT_GT(always, eight);
}

/// How many collectives of `kind` over 4 ranks lie on a tensor-parallel
/// (tp=4) step's critical path: how much the step grows when a flat
/// profiled curve of that kind goes from t to 2t, in units of t. One rank
/// a core, so nothing else scales.
double collectivesOnPath(const TransformerModel &m, const ParallelConfig &p,
                         Collective kind) {
  const double t = 1e-3;
  auto flat = [&](double seconds) {
    Profile profile;
    auto curve = CollectiveCurve::create({{1.0, seconds}, {1e12, seconds}});
    EXPECT_TRUE(curve.ok());
    profile.collectives.emplace(CollectiveKey{kind, 4, 4, 1}, *curve);
    return profile;
  };
  Profile once = flat(t), twice = flat(2 * t);
  auto a = scoreTransformerPlan(m, cpu(4, 4), p, &once);
  auto b = scoreTransformerPlan(m, cpu(4, 4), p, &twice);
  EXPECT_TRUE(a.ok() && b.ok());
  return a.ok() && b.ok() ? (b->stepSeconds - a->stepSeconds) / t : -1.0;
}

ParallelConfig sequenceParallelTp4() {
  ParallelConfig p;
  p.tp = 4;
  p.sequenceParallel = true;
  p.globalBatch = 8;
  p.microbatchSize = 4; // two microbatches
  p.precision = DType::Fp32;
  return p;
}

TEST(TransformerPlan, SequenceParallelLayersGatherSixTimesPerMicrobatch) {
  // As the lowering emits them: forward, two all-gathers (before the
  // column-parallel GEMMs); backward, two of the output gradients and two
  // re-gathers of the norm outputs the weight gradients read. Full
  // recomputation gathers those in its forward instead: six either way,
  // and two more a microbatch: the embedding's backward (its lookup was
  // reduce-scattered onto the sequence) and the head's input.
  TransformerModel m = smallGpt(4, 512, 8);
  ParallelConfig p = sequenceParallelTp4();
  for (Recompute r : {Recompute::None, Recompute::Selective,
                      Recompute::Full}) {
    p.recompute = r;
    EXPECT_NEAR(collectivesOnPath(m, p, Collective::AllGather),
                (6 * m.layers + 2) * 2, 0.01)
        << static_cast<int>(r);
  }
}

TEST(TransformerPlan, SequenceParallelEmbeddingReduceScattersItsLookup) {
  // The vocabulary-parallel lookup's partial rows: with sequence
  // parallelism reduce-scattered onto the sequence blocks (and all-gathered
  // back in the backward), beside each layer's two reduce-scatters forward
  // and two backward and the head's input gradient; without it
  // all-reduced, and no reduce-scatter at all.
  TransformerModel m = smallGpt(4, 512, 8);
  ParallelConfig p = sequenceParallelTp4();
  EXPECT_NEAR(collectivesOnPath(m, p, Collective::ReduceScatter),
              (4 * m.layers + 2) * 2, 0.01);
  p.sequenceParallel = false;
  EXPECT_NEAR(collectivesOnPath(m, p, Collective::ReduceScatter), 0, 0.01);
}

TEST(TransformerPlan, CollectivesWithoutProgressFollowTheBackward) {
  // Where collectives move only when the device waits on them (CPU ranks
  // over MPI), the data-parallel reduction follows the backward pass
  // instead of hiding behind it in buckets.
  TransformerModel m = smallGpt(8, 512, 8);
  ParallelConfig p;
  p.dp = 4;
  p.globalBatch = 4;
  p.precision = DType::Fp32;
  Cluster overlapping = cpu(4, 4), blocking = cpu(4, 4);
  overlapping.commOverlapsCompute = 1;
  blocking.commOverlapsCompute = 0;
  auto hidden = scoreTransformerPlan(m, overlapping, p);
  auto exposed = scoreTransformerPlan(m, blocking, p);
  ASSERT_TRUE(hidden.ok() && exposed.ok());
  EXPECT_GT(exposed->gradReduceSeconds, 0);
  EXPECT_NEAR(exposed->stepSeconds - hidden->stepSeconds,
              exposed->gradReduceSeconds * 7 / 8,
              0.1 * exposed->gradReduceSeconds);
}

TEST(TransformerPlan, Fp32OptimizerStepMovesOnlyAdamsBytes) {
  // Mixed precision: about 52 bytes a parameter (half gradient to fp32,
  // unscaling, the norm, Adam, the half weight). In fp32 only Adam's reads
  // and writes remain, 28 bytes (the CPU runtime's adamwStep), which a
  // 4-stage pipeline measured at 2-6 ms a stage against 18-29 ms priced
  // at 52.
  TransformerModel m = gpt(4, 1024, 16);
  ParallelConfig p;
  p.dp = 8;
  p.globalBatch = 8;
  auto optimizerSeconds = [&](DType precision) {
    p.precision = precision;
    TaskGraph g;
    Timeline tl;
    auto plan = scoreTransformerPlan(m, a100(1), p, nullptr, &g, &tl);
    EXPECT_TRUE(plan.ok()) << plan.status();
    for (const Task &t : g.tasks())
      if (t.category == "optimizer")
        return t.seconds;
    ADD_FAILURE() << "no optimizer task";
    return 0.0;
  };
  double mixed = optimizerSeconds(DType::Bf16);
  double fp32 = optimizerSeconds(DType::Fp32);
  ASSERT_GT(mixed, 0);
  EXPECT_NEAR(fp32 / mixed, 28.0 / 52.0, 0.02);
}

TEST(TransformerPlan, ZeroGathersTheUpdatedShardsAfterTheOptimizer) {
  // Where communication overlaps compute, ZeRO-1's and 2's gather of the
  // updated parameter shards needs the optimizer's update: with
  // overlap-grad off it starts when the optimizer ends and ends the step.
  // ZeRO-1 reduce-scatters in buckets beside the backward pass, as ZeRO-0
  // all-reduces (the lowering starts each gradient's reduce-scatter as the
  // last backward pass finishes it). With overlap-grad on, the next test
  // carries the gather into the next step.
  TransformerModel m = smallGpt(8, 512, 8);
  Cluster c = cpu(4, 4);
  c.commOverlapsCompute = 1;
  ParallelConfig p;
  p.dp = 4;
  p.globalBatch = 4;
  p.precision = DType::Fp32;
  p.overlapGradReduce = false;
  for (int zero : {1, 2}) {
    p.zero = zero;
    TaskGraph g;
    Timeline tl;
    auto plan = scoreTransformerPlan(m, c, p, nullptr, &g, &tl);
    ASSERT_TRUE(plan.ok()) << plan.status();
    int optimizer = -1, gather = -1, reductions = 0;
    double firstReduction = 1e30, backwardEnd = 0;
    for (int i = 0; i < g.size(); ++i) {
      if (g.tasks()[i].category == "optimizer")
        optimizer = i;
      if (g.tasks()[i].category == "param-gather")
        gather = i;
      if (g.tasks()[i].category == "grad-reduce") {
        ++reductions;
        firstReduction = std::min(firstReduction, tl.start[i]);
      }
      if (g.tasks()[i].category == "backward")
        backwardEnd = std::max(backwardEnd, tl.end[i]);
    }
    ASSERT_GE(optimizer, 0);
    ASSERT_GE(gather, 0) << "zero " << zero;
    EXPECT_GT(g.tasks()[gather].seconds, 0);
    EXPECT_DOUBLE_EQ(tl.start[gather], tl.end[optimizer]);
    EXPECT_DOUBLE_EQ(tl.makespan, tl.end[gather]);
    EXPECT_GE(plan->lowerBoundSeconds,
              g.tasks()[optimizer].seconds + g.tasks()[gather].seconds);
    // With overlap-grad off the reductions wait for the backward pass:
    // one after it (ZeRO-1), or inside it (ZeRO-2).
    EXPECT_EQ(reductions, zero == 1 ? 1 : 0) << "zero " << zero;
    if (zero == 1)
      EXPECT_GE(firstReduction, backwardEnd);
  }
  // ZeRO-0 gathers nothing.
  p.zero = 0;
  TaskGraph g;
  Timeline tl;
  ASSERT_TRUE(scoreTransformerPlan(m, c, p, nullptr, &g, &tl).ok());
  for (const Task &t : g.tasks())
    EXPECT_NE(t.category, "param-gather");
}

TEST(TransformerPlan, ZeroCarriesTheGatherOfUpdatedShardsIntoTheNextStep) {
  // With overlap-grad on, ZeRO-1's and 2's gather of the updated shards
  // runs beside the next step's first forward pass (the lowering's
  // carryParameterGathers): it starts the step on the data-parallel
  // stream, the step ends with the optimizer, and the first forward pass
  // needs it before its last layer (its first 7 of 8 layers run beside
  // it). ZeRO-1 reduce-scatters in buckets beside the backward pass.
  TransformerModel m = smallGpt(8, 512, 8);
  Cluster c = cpu(4, 4);
  c.commOverlapsCompute = 1;
  ParallelConfig p;
  p.dp = 4;
  p.globalBatch = 16;
  p.microbatchSize = 2;
  p.precision = DType::Fp32;
  for (int zero : {1, 2}) {
    p.zero = zero;
    p.overlapGradReduce = false;
    auto off = scoreTransformerPlan(m, c, p);
    p.overlapGradReduce = true;
    TaskGraph g;
    Timeline tl;
    auto on = scoreTransformerPlan(m, c, p, nullptr, &g, &tl);
    ASSERT_TRUE(on.ok() && off.ok()) << on.status() << off.status();
    int optimizer = -1, gather = -1, head = -1, tail = -1, reductions = 0;
    double firstReduction = 1e30, backwardEnd = 0;
    for (int i = 0; i < g.size(); ++i) {
      const Task &t = g.tasks()[i];
      if (t.category == "optimizer")
        optimizer = i;
      if (t.category == "param-gather")
        gather = i;
      if (t.category == "grad-reduce") {
        ++reductions;
        firstReduction = std::min(firstReduction, tl.start[i]);
      }
      if (t.category == "backward")
        backwardEnd = std::max(backwardEnd, tl.end[i]);
      if (t.category == "forward" && t.microbatch == 0)
        (head < 0 ? head : tail) = i;
    }
    ASSERT_GE(optimizer, 0);
    ASSERT_GE(gather, 0) << "zero " << zero;
    ASSERT_GE(tail, 0) << "the first forward pass is not split";
    const Task &gt = g.tasks()[gather];
    EXPECT_GT(gt.seconds, 0);
    EXPECT_EQ(gt.stream, Stream::DataParallelComm);
    EXPECT_DOUBLE_EQ(tl.start[gather], 0);
    EXPECT_DOUBLE_EQ(tl.makespan, tl.end[optimizer]);
    double forward = g.tasks()[head].seconds + g.tasks()[tail].seconds;
    EXPECT_NEAR(g.tasks()[tail].seconds, forward / 8, 1e-12);
    EXPECT_NEAR(tl.end[tail],
                std::max(forward * 7 / 8, gt.seconds) + forward / 8, 1e-12)
        << "zero " << zero;
    EXPECT_LT(on->stepSeconds, off->stepSeconds) << "zero " << zero;
    EXPECT_EQ(reductions, zero == 1 ? 8 : 0) << "zero " << zero;
    if (zero == 1)
      EXPECT_LT(firstReduction, backwardEnd);
  }
  // Where collectives do not progress beside compute (CPU ranks over MPI)
  // the carried gather runs on the compute stream before the first forward
  // pass: on one stage the step costs what it did with the gather after
  // the optimizer.
  c.commOverlapsCompute = 0;
  p.zero = 1;
  p.overlapGradReduce = true;
  TaskGraph g;
  Timeline tl;
  auto on = scoreTransformerPlan(m, c, p, nullptr, &g, &tl);
  p.overlapGradReduce = false;
  auto off = scoreTransformerPlan(m, c, p);
  ASSERT_TRUE(on.ok() && off.ok());
  EXPECT_NEAR(on->stepSeconds, off->stepSeconds, 1e-9 * off->stepSeconds);
  for (int i = 0; i < g.size(); ++i)
    if (g.tasks()[i].category == "param-gather") {
      EXPECT_EQ(g.tasks()[i].stream, Stream::Compute);
      EXPECT_DOUBLE_EQ(tl.start[i], 0);
    }
}

TEST(TransformerPlan, ZeroCarriedGathersHideInThePipelineWarmUp) {
  // In a pipeline the later stages wait for their first activations; the
  // carried gathers run in that wait, so the step does not grow by one
  // gather per stage.
  TransformerModel m = smallGpt(8, 512, 8);
  Cluster c = cpu(8, 8);
  c.commOverlapsCompute = 1;
  ParallelConfig p;
  p.dp = 2;
  p.pp = 4;
  p.globalBatch = 32;
  p.microbatchSize = 2;
  p.precision = DType::Fp32;
  p.zero = 1;
  TaskGraph g;
  Timeline tl;
  auto on = scoreTransformerPlan(m, c, p, nullptr, &g, &tl);
  p.overlapGradReduce = false;
  auto off = scoreTransformerPlan(m, c, p);
  ASSERT_TRUE(on.ok() && off.ok()) << on.status() << off.status();
  EXPECT_LT(on->stepSeconds, off->stepSeconds);
  int gathers = 0;
  for (int i = 0; i < g.size(); ++i)
    if (g.tasks()[i].category == "param-gather") {
      ++gathers;
      EXPECT_DOUBLE_EQ(tl.start[i], 0);
      // Every stage after the first gets its gather done before its first
      // activations arrive.
      if (g.tasks()[i].stage > 0)
        for (int j = 0; j < g.size(); ++j)
          if (g.tasks()[j].stage == g.tasks()[i].stage &&
              g.tasks()[j].category == "forward" &&
              g.tasks()[j].microbatch == 0)
            EXPECT_LE(tl.end[i], tl.start[j] + 1e-12);
    }
  EXPECT_EQ(gathers, 4);
}

TEST(TransformerPlan, ZeroTwoAndThreeCollectivesRunBesideThePasses) {
  // ZeRO-2 reduce-scatters every microbatch's gradients as the backward
  // pass makes them, and ZeRO-3 also gathers the parameters before each
  // pass (the lowering keeps a window of them in flight): where
  // communication overlaps compute only what outlasts the pass and one
  // layer's share extend it; with overlap-grad=off all of it does. Where
  // it does not (MPI on CPU ranks) the forward pass's gathers stall it,
  // and the backward pass's window hides the share the profile measured
  // (collective_window_hidden), none without a profile.
  TransformerModel m = smallGpt(8, 512, 8);
  ParallelConfig p;
  p.dp = 4;
  p.globalBatch = 16;
  p.microbatchSize = 1;
  p.precision = DType::Fp32;
  Cluster overlapping = cpu(4, 4), blocking = cpu(4, 4);
  overlapping.commOverlapsCompute = 1;
  blocking.commOverlapsCompute = 0;
  Profile half, all;
  half.collectiveWindowHidden = 0.5;
  all.collectiveWindowHidden = 1.0;
  for (int zero : {2, 3}) {
    p.zero = zero;
    p.overlapGradReduce = true;
    auto hidden = scoreTransformerPlan(m, overlapping, p);
    auto exposed = scoreTransformerPlan(m, blocking, p);
    auto halfHidden = scoreTransformerPlan(m, blocking, p, &half);
    auto allHidden = scoreTransformerPlan(m, blocking, p, &all);
    p.overlapGradReduce = false;
    auto off = scoreTransformerPlan(m, overlapping, p);
    auto blockingOff = scoreTransformerPlan(m, blocking, p);
    auto blockingOffAll = scoreTransformerPlan(m, blocking, p, &all);
    ASSERT_TRUE(hidden.ok() && exposed.ok() && halfHidden.ok() &&
                allHidden.ok() && off.ok() && blockingOff.ok() &&
                blockingOffAll.ok())
        << "zero " << zero;
    EXPECT_LT(hidden->stepSeconds, off->stepSeconds) << "zero " << zero;
    EXPECT_DOUBLE_EQ(off->stepSeconds, blockingOff->stepSeconds)
        << "zero " << zero;
    // The measured share moves the backward pass from stalling to beside,
    // in proportion; overlap-grad=off keeps no window to hide.
    EXPECT_LT(allHidden->stepSeconds, halfHidden->stepSeconds);
    EXPECT_LT(halfHidden->stepSeconds, exposed->stepSeconds);
    // One stage: the step is a sum of the passes, linear in the share.
    EXPECT_NEAR(halfHidden->stepSeconds,
                0.5 * (exposed->stepSeconds + allHidden->stepSeconds),
                1e-9 * exposed->stepSeconds);
    EXPECT_DOUBLE_EQ(blockingOffAll->stepSeconds, blockingOff->stepSeconds)
        << "zero " << zero;
    // ZeRO-3's forward gathers stall a pass that cannot overlap them, even
    // where the backward pass's window hides all.
    if (zero == 3)
      EXPECT_LT(hidden->stepSeconds, allHidden->stepSeconds);
  }
}

TEST(TransformerPlan, RecomputationPerStage) {
  // 1F1B on 4 stages: stage i keeps 4 - i microbatches' activations, so the
  // first stages may recompute while the last do not. Each stage's memory
  // is that of the uniform plan with its mode, and the step lies between
  // the two uniform plans'.
  TransformerModel m = gpt(16, 4096, 32);
  ParallelConfig p;
  p.dp = 8;
  p.pp = 4;
  p.globalBatch = 64;
  p.microbatchSize = 1;
  p.balanceStages = false;
  auto none = scoreTransformerPlan(m, a100(4), p);
  p.recompute = Recompute::Full;
  auto full = scoreTransformerPlan(m, a100(4), p);
  p.stageRecompute = {Recompute::Full, Recompute::Full, Recompute::None,
                      Recompute::None};
  auto mixed = scoreTransformerPlan(m, a100(4), p);
  ASSERT_TRUE(none.ok() && full.ok() && mixed.ok()) << mixed.status();
  for (int st = 0; st < 4; ++st)
    EXPECT_DOUBLE_EQ(mixed->stageMemory[st].activations,
                     (st < 2 ? full : none)->stageMemory[st].activations)
        << "stage " << st;
  EXPECT_LT(mixed->peakMemoryBytes, none->peakMemoryBytes);
  EXPECT_LT(mixed->stepSeconds, full->stepSeconds);
  EXPECT_GT(mixed->stepSeconds, none->stepSeconds);
  // Recomputation runs again on the first two stages only.
  EXPECT_LT(mixed->hardwareFlops, full->hardwareFlops);
  EXPECT_GT(mixed->hardwareFlops, none->hardwareFlops);

  // Balanced over 8 microbatches, moving a layer off a recomputing stage
  // shortens the busiest stage but lengthens the fill and drain by more
  // (the balanced split alone: 3/4/5/4 layers, 0.814 s against the even
  // split's 0.810 s): the even split is kept.
  p.balanceStages = true;
  auto balanced = scoreTransformerPlan(m, a100(4), p);
  ASSERT_TRUE(balanced.ok()) << balanced.status();
  EXPECT_EQ(balanced->layersPerStage, (std::vector<int64_t>{4, 4, 4, 4}));
  EXPECT_DOUBLE_EQ(balanced->stepSeconds, mixed->stepSeconds);
  // With 8 layers a stage and 32 microbatches, where the busiest stage is
  // most of the step, the stages that recompute run fewer layers, and the
  // step is shorter than with the even split.
  TransformerModel deep = gpt(32, 4096, 32);
  p.globalBatch = 256;
  p.balanceStages = false;
  auto mixedLong = scoreTransformerPlan(deep, a100(4), p);
  p.balanceStages = true;
  auto balancedLong = scoreTransformerPlan(deep, a100(4), p);
  ASSERT_TRUE(mixedLong.ok() && balancedLong.ok()) << balancedLong.status();
  const std::vector<int64_t> &layers = balancedLong->layersPerStage;
  EXPECT_LT(layers[0] + layers[1], layers[2] + layers[3]);
  EXPECT_LT(balancedLong->stepSeconds, mixedLong->stepSeconds);
  p.globalBatch = 64;

  // The knobs print and parse one mode per stage.
  EXPECT_NE(planKnobsString(p).find("recompute=full/full/none/none"),
            std::string::npos);
  ParallelConfig parsed;
  ASSERT_TRUE(applyPlanKnobs("pp=4,recompute=full/selective/none/none",
                             parsed)
                  .ok());
  EXPECT_EQ(parsed.recompute, Recompute::Full);
  EXPECT_EQ(parsed.recomputeOf(1), Recompute::Selective);
  EXPECT_EQ(parsed.recomputeOf(3), Recompute::None);
  ASSERT_TRUE(applyPlanKnobs("recompute=selective", parsed).ok());
  EXPECT_TRUE(parsed.stageRecompute.empty());
  EXPECT_FALSE(applyPlanKnobs("recompute=full/most", parsed).ok());
  // A list that does not match the stages is an error naming both.
  p.stageRecompute = {Recompute::Full, Recompute::None};
  auto wrong = scoreTransformerPlan(m, a100(4), p);
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(std::string(wrong.status().message()).find("2 stages"),
            std::string::npos);
}

TEST(TransformerPlan, ZeroPaysACollectivePerParameterTensor) {
  // The lowering reduce-scatters (and gathers) every parameter tensor on
  // its own, so ZeRO-1's reductions cost the bytes of all of them plus the
  // latency of every further call: 8 GPT layers of 16 tensors, the token
  // and position embeddings and the final norm's 2 (the head is tied).
  EXPECT_EQ(gpt(1, 64, 4).parameterTensors(0), 16);
  TransformerModel llama = gpt(1, 64, 4);
  llama.gatedMlp = true;
  EXPECT_EQ(llama.parameterTensors(0), 9);
  llama.experts = 4;
  EXPECT_EQ(llama.parameterTensors(0), 10); // and its router

  TransformerModel m = smallGpt(8, 512, 8);
  Cluster c = a100(4);
  ParallelConfig p;
  p.dp = 32;
  p.globalBatch = 64;
  p.zero = 1;
  p.precision = DType::Fp32;
  TaskGraph g;
  Timeline tl;
  auto plan = scoreTransformerPlan(m, c, p, nullptr, &g, &tl);
  ASSERT_TRUE(plan.ok()) << plan.status();
  double reductions = 0;
  for (const Task &t : g.tasks())
    if (t.category == "grad-reduce")
      reductions += t.seconds;
  Group dp = Group::strided(0, 32, 1);
  auto all = estimateCollective(Collective::ReduceScatter, m.parameters() * 4,
                                dp, c);
  auto call = estimateCollective(Collective::ReduceScatter, 4.0 * 32, dp, c);
  ASSERT_TRUE(all.ok() && call.ok());
  // (The plan's parameter count differs from m.parameters() by a few
  // bytes.)
  EXPECT_NEAR(reductions, all->seconds + (8 * 16 + 4 - 1) * call->seconds,
              1e-4 * reductions);
  EXPECT_GT(call->seconds, 0);
}

namespace {
/// Calls of `kind` (within a node) a device of stage `stage` runs per step.
double callsOf(const PlanPrediction &p, int64_t stage, Collective kind) {
  const auto &byKind = p.stageCollectives.at(stage).byKind;
  auto it = byKind.find({kind, false});
  return it == byKind.end() ? 0 : it->second.calls;
}
} // namespace

TEST(TransformerPlan, VocabularyThatTpDoesNotDivideIsPricedAsLowered) {
  // 4001 classes at tp=2 cannot be split by rows: the table is split along
  // the hidden dimension, so a microbatch's whole logits are reduced (all-
  // reduced; reduce-scattered with sequence parallelism) and their
  // gradient gathered, in place of the vocabulary-parallel cross-entropy's
  // three small all-reduces and the lookup's reduction of its rows. 4000
  // classes split.
  TransformerModel m = smallGpt(2, 256, 4);
  ParallelConfig p;
  p.tp = 2;
  p.globalBatch = 4;
  p.microbatchSize = 2;
  p.precision = DType::Fp32;
  const double logits = 2 * 128 * 4001 * 4.0;
  for (bool sp : {false, true}) {
    p.sequenceParallel = sp;
    m.vocab = 4000;
    auto splits = scoreTransformerPlan(m, cpu(2, 2), p);
    m.vocab = 4001;
    auto whole = scoreTransformerPlan(m, cpu(2, 2), p);
    ASSERT_TRUE(splits.ok() && whole.ok()) << "sp " << sp;
    EXPECT_GT(whole->stepSeconds, splits->stepSeconds) << "sp " << sp;
    Collective reduce = sp ? Collective::ReduceScatter : Collective::AllReduce;
    auto bytes = [](const PlanPrediction &r, Collective kind) {
      const auto &kinds = r.stageCollectives[0].byKind;
      auto it = kinds.find({kind, false});
      return it == kinds.end() ? 0.0 : it->second.bytes;
    };
    // Two microbatches each reduce and gather their logits once; what the
    // split vocabulary's embedding and head moved instead is at most a
    // quarter of that here.
    EXPECT_GT(bytes(*whole, reduce) - bytes(*splits, reduce), 1.5 * logits)
        << "sp " << sp;
    EXPECT_GT(bytes(*whole, Collective::AllGather) -
                  bytes(*splits, Collective::AllGather),
              1.5 * logits)
        << "sp " << sp;
    // Sequence parallelism moves the lookup's and the head's columns onto
    // the sequence blocks and back with all-to-alls.
    EXPECT_EQ(bytes(*whole, Collective::AllToAll) > 0, sp) << "sp " << sp;
    EXPECT_EQ(bytes(*splits, Collective::AllToAll), 0.0) << "sp " << sp;
  }
}

TEST(TransformerPlan, TalliesTheCollectivesItPrices) {
  // tp=4 with sequence parallelism, 4 microbatches of 2: per layer and
  // microbatch 2 all-gathers and 2 reduce-scatters forward, 4 and 2
  // backward (the norm outputs gathered again); the embedding's lookup
  // reduce-scatters forward and all-gathers backward, the head gathers its
  // input forward and reduce-scatters its gradient backward, and the
  // cross-entropy all-reduces three statistics a token forward.
  TransformerModel m = smallGpt(4, 512, 8);
  ParallelConfig p;
  p.tp = 4;
  p.sequenceParallel = true;
  p.globalBatch = 8;
  p.microbatchSize = 2;
  p.precision = DType::Fp32;
  auto tp = scoreTransformerPlan(m, cpu(4, 4), p);
  ASSERT_TRUE(tp.ok()) << tp.status();
  ASSERT_EQ(tp->stageCollectives.size(), 1u);
  EXPECT_DOUBLE_EQ(callsOf(*tp, 0, Collective::AllGather), 4 * 4 * 6 + 8);
  EXPECT_DOUBLE_EQ(callsOf(*tp, 0, Collective::ReduceScatter), 4 * 4 * 4 + 8);
  EXPECT_DOUBLE_EQ(callsOf(*tp, 0, Collective::AllReduce), 3 * 4);
  const auto &stats = tp->stageCollectives[0].byKind.at(
      {Collective::AllReduce, false});
  EXPECT_DOUBLE_EQ(stats.bytes, stats.calls * 2 * 128 * 4);
  // Each call moves a microbatch's activations (2 x 128 x 512 fp32).
  const auto &gathers = tp->stageCollectives[0].byKind.at(
      {Collective::AllGather, false});
  EXPECT_DOUBLE_EQ(gathers.bytes, gathers.calls * 2 * 128 * 512 * 4);
  // Full recomputation runs the forward's again, less the re-gathers and
  // the reduce-scatter after the MLP's output GEMM (whose result only the
  // stashed layer output reads: cleave-recompute does not run it again).
  p.recompute = Recompute::Full;
  auto full = scoreTransformerPlan(m, cpu(4, 4), p);
  ASSERT_TRUE(full.ok()) << full.status();
  EXPECT_DOUBLE_EQ(callsOf(*full, 0, Collective::AllGather), 4 * 4 * 6 + 8);
  EXPECT_DOUBLE_EQ(callsOf(*full, 0, Collective::ReduceScatter),
                   4 * 4 * 5 + 8);

  // pp=2 x dp=2 with ZeRO-3, 2 microbatches a replica: each stage's device
  // sends its activations or gradients and receives the others (4
  // messages), and per parameter tensor reduce-scatters each microbatch's
  // gradient and gathers the parameter before its forward and backward.
  ParallelConfig z;
  z.pp = 2;
  z.dp = 2;
  z.zero = 3;
  z.globalBatch = 8;
  z.microbatchSize = 2;
  z.precision = DType::Fp32;
  auto zero = scoreTransformerPlan(m, cpu(4, 4), z);
  ASSERT_TRUE(zero.ok()) << zero.status();
  ASSERT_EQ(zero->stageCollectives.size(), 2u);
  for (int64_t st = 0; st < 2; ++st) {
    EXPECT_DOUBLE_EQ(callsOf(*zero, st, Collective::SendRecv), 2 * 2);
    double tensors = callsOf(*zero, st, Collective::ReduceScatter) / 2;
    EXPECT_GT(tensors, 2 * m.parameterTensors(0) - 1);
    EXPECT_DOUBLE_EQ(callsOf(*zero, st, Collective::AllGather),
                     2 * 2 * tensors);
    EXPECT_DOUBLE_EQ(callsOf(*zero, st, Collective::AllReduce), 0);
  }
}

TEST(TransformerPlan, ExpertWeightsSplitOverEpAndShardOverItsDataGroup) {
  // A Mixtral-like stack on 8 GPUs, dp = 8, ep = 4: each rank holds the
  // attention, norms and router of every layer and 8 / 4 experts' MLPs.
  // ZeRO-1 shards the dense part's optimizer state over all 8
  // data-parallel ranks, the experts' over the 2 that hold the same
  // experts.
  TransformerModel m = gpt(4, 1024, 16);
  m.gatedMlp = true;
  m.ffn = 2816;
  m.kvHeads = 4;
  m.tiedEmbedding = false;
  m.learnedPositions = false;
  m.vocab = 32000;
  m.seq = 1024;
  m.experts = 8;
  m.topK = 2;
  m.moeEvery = 1;
  auto c = parseCluster("dgx-h100");
  ASSERT_TRUE(c.ok()) << c.status();
  ParallelConfig p;
  p.dp = 8;
  p.ep = 4;
  p.zero = 1;
  p.globalBatch = 16;
  p.precision = DType::Fp32;
  auto plan = scoreTransformerPlan(m, *c, p);
  ASSERT_TRUE(plan.ok()) << plan.status();
  double experts = 4 * 8 * m.mlpParameters();
  double dense = m.parameters() - experts;
  double held = dense + experts / 4;
  const MemoryBreakdown &mem = plan->stageMemory.at(0);
  // (The plan's parameter count differs from m.parameters() by a few
  // bytes.)
  EXPECT_NEAR(mem.params, 4 * held, 1e-4 * mem.params);
  // Adam's two fp32 moments and the updated fp32 block ZeRO-1 keeps until
  // it is gathered: 12 bytes a sharded parameter.
  EXPECT_NEAR(mem.optimizer, 12 * (dense / 8 + experts / 4 / 2),
              1e-4 * mem.optimizer);
}

namespace {

Cluster h100(int64_t nodes) {
  auto c = parseCluster("dgx-h100,nodes=" + std::to_string(nodes));
  EXPECT_TRUE(c.ok()) << c.status();
  return *c;
}

/// Megatron-Core's 32B weak-scaling row: tp=8 inside a node, dp=48.
ParallelConfig megatronCore32b() {
  ParallelConfig p;
  p.tp = 8;
  p.dp = 48;
  p.sequenceParallel = true;
  p.zero = 1;
  p.globalBatch = 192;
  p.fusedAttention = true;
  return p;
}

TransformerModel gpt32b() {
  TransformerModel m = gpt(48, 7168, 56);
  m.seq = 4096;
  m.vocab = 131072;
  return m;
}

} // namespace

TEST(TransformerPlan, OverlappedTensorParallelismHidesItsCollectives) {
  TransformerModel m = gpt32b();
  ParallelConfig off = megatronCore32b();
  ParallelConfig on = off;
  on.overlapTpComm = true;
  auto a = scoreTransformerPlan(m, h100(48), off);
  auto b = scoreTransformerPlan(m, h100(48), on);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  // Each collective hides behind its GEMM but for the ring's first chunk:
  // the layer's forward shrinks by most of its tensor-parallel time.
  EXPECT_GT(b->layerTensorCommSeconds, 0);
  EXPECT_LT(b->layerTensorCommSeconds, 0.5 * a->layerTensorCommSeconds);
  EXPECT_DOUBLE_EQ(b->layerGemmSeconds, a->layerGemmSeconds);
  EXPECT_LT(b->stepSeconds, a->stepSeconds);
  // The same collectives run: only their time is hidden.
  EXPECT_NEAR(b->hardwareFlops, a->hardwareFlops, 1e-6 * a->hardwareFlops);

  // Without sequence parallelism there is nothing to split into a ring.
  ParallelConfig noSp = on;
  noSp.sequenceParallel = false;
  auto c = scoreTransformerPlan(m, h100(48), noSp);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("overlap-tp=on needs sp=on"),
            std::string::npos);
  // At tp = 1 the knob changes nothing.
  ParallelConfig tp1 = off;
  tp1.tp = 1;
  tp1.dp = 384;
  tp1.sequenceParallel = false;
  tp1.globalBatch = 384;
  ParallelConfig tp1On = tp1;
  tp1On.overlapTpComm = true;
  auto d = scoreTransformerPlan(gpt(24, 2048, 16), h100(48), tp1);
  auto e = scoreTransformerPlan(gpt(24, 2048, 16), h100(48), tp1On);
  ASSERT_TRUE(d.ok() && e.ok());
  EXPECT_DOUBLE_EQ(d->stepSeconds, e->stepSeconds);
}

TEST(TransformerPlan, ZeroBucketsPayOneLatencyPerBucket) {
  // 772 parameter tensors each pay a ring's latency over 48 nodes; packed
  // in 40 M-element buckets about a hundred do.
  TransformerModel m = gpt32b();
  ParallelConfig perTensor = megatronCore32b();
  ParallelConfig bucketed = perTensor;
  bucketed.zeroBucketElements = 40000000;
  auto a = scoreTransformerPlan(m, h100(48), perTensor);
  auto b = scoreTransformerPlan(m, h100(48), bucketed);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_LT(b->stepSeconds, a->stepSeconds);
  // The bytes reduce-scattered are the same; the calls are fewer.
  // Reduce-scatters over the network: calls and bytes.
  auto scatters = [](const PlanPrediction &p) {
    CollectiveTally::Volume sum;
    for (const auto &[key, v] : p.stageCollectives[0].byKind)
      if (key.first == Collective::ReduceScatter && key.second) {
        sum.calls += v.calls;
        sum.bytes += v.bytes;
      }
    return sum;
  };
  EXPECT_LT(scatters(*b).calls, scatters(*a).calls / 5);
  EXPECT_NEAR(scatters(*b).bytes, scatters(*a).bytes,
              1e-6 * scatters(*a).bytes);
  ParallelConfig bad = perTensor;
  bad.zeroBucketElements = -1;
  EXPECT_FALSE(scoreTransformerPlan(m, h100(48), bad).ok());
}

TEST(TransformerPlan, HalfStorageReducesFp32Gradients) {
  // Weight gradients stay fp32 under bf16 and fp16 storage (the lowering
  // keeps them so), so the data-parallel reduction moves 4 bytes a
  // parameter; grad-reduce=half (Megatron-LM's fp16 runs) reduces 2.
  TransformerModel m = gpt32b();
  m.layers = 8;
  ParallelConfig p = megatronCore32b();
  p.zero = 0;
  auto bytes = [&](DType precision, bool halfGrads) {
    ParallelConfig q = p;
    q.precision = precision;
    q.halfGradReduce = halfGrads;
    auto r = scoreTransformerPlan(m, h100(48), q);
    EXPECT_TRUE(r.ok()) << r.status();
    double n = 0;
    for (const auto &[key, v] : r->stageCollectives[0].byKind)
      if (key.first == Collective::AllReduce && key.second)
        n += v.bytes;
    return n;
  };
  EXPECT_NEAR(bytes(DType::Bf16, false) / bytes(DType::Fp16, false), 1.0,
              1e-9);
  EXPECT_NEAR(bytes(DType::Fp16, false) / bytes(DType::Fp16, true), 2.0,
              1e-9);
  EXPECT_NEAR(bytes(DType::Bf16, false) / bytes(DType::Bf16, true), 2.0,
              1e-9);
}

TEST(PlanKnobs, MegatronPricingKnobs) {
  ParallelConfig p;
  auto given = applyPlanKnobs("overlap-tp=on,zero-bucket=40", p);
  ASSERT_TRUE(given.ok()) << given.status();
  EXPECT_TRUE(p.overlapTpComm);
  EXPECT_EQ(p.zeroBucketElements, 40000000);
  EXPECT_TRUE(given->contains(Knob::OverlapTp));
  EXPECT_NE(planKnobsString(p).find(",overlap-tp=on,zero-bucket=40"),
            std::string::npos);
  ParallelConfig q;
  ASSERT_TRUE(applyPlanKnobs("zero-bucket=tensor", q).ok());
  EXPECT_EQ(q.zeroBucketElements, 0);
  auto bad = applyPlanKnobs("zero-bucket=0", q);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("zero-bucket"), std::string::npos);
  EXPECT_FALSE(applyPlanKnobs("overlap-tp=maybe", q).ok());
  ParallelConfig g;
  ASSERT_TRUE(applyPlanKnobs("grad-reduce=half", g).ok());
  EXPECT_TRUE(g.halfGradReduce);
  EXPECT_NE(planKnobsString(g).find(",grad-reduce=half"), std::string::npos);
  EXPECT_FALSE(applyPlanKnobs("grad-reduce=fp8", g).ok());
}
