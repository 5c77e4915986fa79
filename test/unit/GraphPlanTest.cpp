//===- GraphPlanTest.cpp - Graph plans with tensor parallelism ------------===//
//
// A graph without transformer layers priced for tp devices takes the
// intra-operator search's sharding (GraphPlan.h): each device holds its
// share of the parameters, within the limit the lowering uses, and the
// plan's degrees must match the pricing.
//
//===----------------------------------------------------------------------===//

#include "SearchTestUtil.h"

#include "cleave/Dialect/Graph/IR/GraphAttrs.h"
#include "cleave/Lowering/ActivationEstimate.h"
#include "cleave/Search/GraphPlan.h"
#include "cleave/Transforms/Autodiff.h"

#include "mlir/AsmParser/AsmParser.h"

#include <map>

using namespace mlir;
using namespace cleave;
using namespace cleave::search;
using namespace cleave::search::testutil;

namespace {

constexpr const char *kResNet =
    "wideresnet,depth=50,width=1,image=64,classes=10,batch=4";

/// Whether `scored` failed with a message that names `why`.
bool refusedWith(const absl::StatusOr<cost::PlanPrediction> &scored,
                 llvm::StringRef why) {
  return !scored.ok() && std::string(scored.status().message())
                                 .find(why.str()) != std::string::npos;
}

TEST(GraphPlan, TensorParallelWorkIsOneDevicesShare) {
  Model m = load(kResNet);
  ASSERT_TRUE(m.module);
  // Two CPU ranks, where splitting the work pays for its collectives (on
  // A100s over NVLink this small network is faster whole: the limit then
  // forces the split).
  auto cpu = cost::parseCluster("cpu-local,devices=2");
  ASSERT_TRUE(cpu.ok());
  cost::Cluster cluster = *cpu;
  auto whole = measureGraphWork(*m.module, 4, cluster, nullptr);
  auto split = measureGraphWork(*m.module, 4, cluster, nullptr, /*tp=*/2);
  ASSERT_TRUE(whole.ok() && split.ok()) << split.status();
  EXPECT_EQ(whole->tp, 1);
  EXPECT_EQ(split->tp, 2);
  // The same pieces (stem, 16 blocks, head).
  ASSERT_EQ(split->pieces.size(), whole->pieces.size());
  EXPECT_EQ(split->numBlocks(), 16);
  // Parameters: each device's share, within the lowering's strict limit
  // (every divisible matrix split, vectors whole), summing over pieces.
  TensorParallelLimits limits = tensorParallelLimits(m.forward, 2);
  EXPECT_LE(split->paramBytes, limits.strict);
  EXPECT_LT(split->paramBytes, 0.6 * whole->paramBytes);
  double pieces = 0;
  for (const GraphPiece &p : split->pieces)
    pieces += p.paramBytes;
  EXPECT_NEAR(pieces, split->paramBytes, 1);
  // The search's choice beats running every op whole, and the passes
  // shrink with it; the activations a device keeps too.
  EXPECT_LT(split->tpSearchSeconds, split->tpWholeSeconds);
  EXPECT_LT(split->forwardSeconds + split->backwardSeconds,
            whole->forwardSeconds + whole->backwardSeconds);
  EXPECT_LT(split->activationBytes, whole->activationBytes);
  EXPECT_GT(split->tpStrategies["conv.out"], 0);
  // The choice itself, one verified sharding per op of @forward in order
  // (what the artifact writes on the ops for the lowering to keep), and
  // the same strategies the counts say.
  EXPECT_TRUE(whole->tpShardings.empty());
  auto ops = m.forward.getBody().front().without_terminator();
  ASSERT_EQ(split->tpShardings.size(),
            size_t(std::distance(ops.begin(), ops.end())));
  std::map<std::string, int64_t> counts;
  for (const std::string &text : split->tpShardings) {
    auto attr = dyn_cast_or_null<graph::OpShardingAttr>(
        parseAttribute(text, m.forward.getContext()));
    ASSERT_TRUE(attr) << text;
    ++counts[attr.getStrategy().str()];
  }
  EXPECT_EQ(counts, split->tpStrategies);
  // The whole model's FLOPs are what a replica does, split or not.
  EXPECT_DOUBLE_EQ(split->trainingFlops, whole->trainingFlops);
}

TEST(GraphPlan, PlanDegreesMustMatchThePricing) {
  Model m = load(kResNet);
  ASSERT_TRUE(m.module);
  cost::Cluster cluster = dgx(); // 8 devices
  auto split = measureGraphWork(*m.module, 4, cluster, nullptr, 2);
  ASSERT_TRUE(split.ok());
  cost::ParallelConfig plan;
  plan.dp = 4;
  plan.tp = 2;
  plan.microbatchSize = 4;
  plan.globalBatch = 16;
  plan.precision = cost::DType::Bf16;
  auto scored = scoreGraphPlan(*split, cluster, plan, Optimizer::Sgd, nullptr);
  ASSERT_TRUE(scored.ok()) << scored.status();
  EXPECT_GT(scored->stepSeconds, 0);
  auto refused = [&](const cost::ParallelConfig &p, llvm::StringRef why) {
    return refusedWith(scoreGraphPlan(*split, cluster, p, Optimizer::Sgd, nullptr),
                       why);
  };
  // Priced for tp=2, asked for tp=1.
  plan.tp = 1;
  plan.dp = 8;
  EXPECT_TRUE(refused(plan, "priced for tp=2"));
  // dp x tp short of the devices.
  plan.tp = 2;
  plan.dp = 2;
  plan.globalBatch = 8;
  EXPECT_TRUE(refused(plan, "dp x tp must be every device (8)"));
  // Pipelined: dp x pp x tp.
  plan.pp = 2;
  plan.dp = 1;
  EXPECT_TRUE(refused(plan, "dp x pp x tp must be every device (8)"));
}

TEST(GraphPlan, GradientReductionsHideOnlyWhereCollectivesOverlapCompute) {
  // ZeRO 0's all-reduce, ZeRO 1's reduce-scatter, ZeRO 2's per-microbatch
  // reduce-scatters and ZeRO 3's gathers too run beside the passes where
  // the device's collectives progress beside its compute; on CPU ranks
  // over MPI they stall them, in one stage and in a pipeline alike.
  Model m = load(kResNet);
  ASSERT_TRUE(m.module);
  cost::Cluster overlapping = dgx(), blocking = dgx();
  overlapping.commOverlapsCompute = 1;
  blocking.commOverlapsCompute = 0;
  auto work = measureGraphWork(*m.module, 1, overlapping, nullptr);
  ASSERT_TRUE(work.ok()) << work.status();
  for (int pp : {1, 2})
    for (int zero : {0, 1, 2, 3}) {
      cost::ParallelConfig plan;
      plan.pp = pp;
      plan.dp = 8 / pp;
      plan.zero = zero;
      plan.microbatchSize = 1;
      plan.globalBatch = 4 * plan.dp;
      plan.precision = cost::DType::Bf16;
      auto hidden = scoreGraphPlan(*work, overlapping, plan, Optimizer::Sgd, nullptr);
      auto exposed = scoreGraphPlan(*work, blocking, plan, Optimizer::Sgd, nullptr);
      ASSERT_TRUE(hidden.ok() && exposed.ok()) << "pp " << pp;
      EXPECT_LT(hidden->stepSeconds, exposed->stepSeconds)
          << "pp " << pp << " zero " << zero;
      // Where a profile measured the backward pass's window of ZeRO-2/3
      // collectives hidden on CPU ranks (collective_window_hidden), that
      // share runs beside the pass; ZeRO-3's forward gathers still stall.
      if (zero >= 2) {
        cost::Profile allHidden;
        allHidden.collectiveWindowHidden = 1.0;
        auto measured =
            scoreGraphPlan(*work, blocking, plan, Optimizer::Sgd, &allHidden);
        ASSERT_TRUE(measured.ok()) << measured.status();
        // Never dearer than stalling; cheaper here in one stage (in the
        // pipeline ZeRO-3's collectives outlast a chunk's short backward
        // pass, and what outlasts it plus one block's share is all).
        EXPECT_LE(measured->stepSeconds, exposed->stepSeconds)
            << "pp " << pp << " zero " << zero;
        if (pp == 1 || zero == 2)
          EXPECT_LT(measured->stepSeconds, exposed->stepSeconds)
              << "pp " << pp << " zero " << zero;
        if (zero == 3)
          EXPECT_GT(measured->stepSeconds, hidden->stepSeconds)
              << "pp " << pp;
      }
      // ZeRO 1 and 2's gather of the updated blocks, carried into the next
      // step's forward pass, costs less than after the update (beside the
      // pass, or in the pipeline's warm-up); on one stage where nothing
      // overlaps it costs the same.
      if (zero == 1 || zero == 2) {
        plan.overlapGradReduce = false;
        auto after = scoreGraphPlan(*work, overlapping, plan, Optimizer::Sgd, nullptr);
        auto afterBlocking =
            scoreGraphPlan(*work, blocking, plan, Optimizer::Sgd, nullptr);
        ASSERT_TRUE(after.ok() && afterBlocking.ok());
        EXPECT_LT(hidden->stepSeconds, after->stepSeconds)
            << "pp " << pp << " zero " << zero;
        if (pp == 1)
          EXPECT_NEAR(exposed->stepSeconds, afterBlocking->stepSeconds,
                      1e-9 * exposed->stepSeconds)
              << "zero " << zero;
      }
    }
}

TEST(GraphPlan, ZeroPaysACollectivePerParameterTensor) {
  // The lowering reduce-scatters and gathers every parameter tensor on its
  // own: on one stage where nothing overlaps, ZeRO-2's step costs, beyond
  // the same plan priced as one collective of all the bytes, the latency
  // of every further call (a reduce-scatter per microbatch, a gather of the
  // updated blocks per step).
  Model m = load(kResNet);
  ASSERT_TRUE(m.module);
  cost::Cluster c = dgx();
  c.commOverlapsCompute = 0;
  auto work = measureGraphWork(*m.module, 1, c, nullptr);
  ASSERT_TRUE(work.ok()) << work.status();
  // Wide ResNet-50: 53 convolutions, 53 batch norms (scale and shift),
  // the classifier's weight and bias.
  double tensors = 0;
  for (const GraphPiece &piece : work->pieces)
    tensors += piece.paramTensors;
  EXPECT_EQ(tensors, 53 + 2 * 53 + 2);
  cost::ParallelConfig plan;
  plan.dp = 8;
  plan.zero = 2;
  plan.microbatchSize = 1;
  plan.globalBatch = 4 * plan.dp;
  plan.precision = cost::DType::Bf16;
  auto perTensor = scoreGraphPlan(*work, c, plan, Optimizer::Sgd, nullptr);
  GraphWork lumped = *work;
  for (GraphPiece &piece : lumped.pieces)
    piece.paramTensors = 0;
  auto once = scoreGraphPlan(lumped, c, plan, Optimizer::Sgd, nullptr);
  ASSERT_TRUE(perTensor.ok() && once.ok());
  cost::Group group = cost::Group::strided(0, 8, 1);
  auto rs = cost::estimateCollective(cost::Collective::ReduceScatter, 4.0 * 8,
                                     group, c);
  auto ag = cost::estimateCollective(cost::Collective::AllGather, 4.0 * 8,
                                     group, c);
  ASSERT_TRUE(rs.ok() && ag.ok());
  double expected = (tensors - 1) * (4 * rs->seconds + ag->seconds);
  EXPECT_GT(expected, 0);
  EXPECT_NEAR(perTensor->stepSeconds - once->stepSeconds, expected,
              1e-6 * perTensor->stepSeconds);
}

TEST(GraphPlan, RecomputationTradesAForwardPassForTheBlocksStash) {
  // Full recomputation of a graph without transformer layers checkpoints
  // its residual blocks: each keeps its input and output, and runs its
  // forward pass again before its backward pass. The stash per block is
  // read off the training step cleave-recompute rewrote, as `compile`
  // fills it.
  Model m = load(kResNet);
  ASSERT_TRUE(m.module);
  cost::Cluster c = dgx();
  auto measured = measureGraphWork(*m.module, 4, c, nullptr);
  ASSERT_TRUE(measured.ok()) << measured.status();
  GraphWork work = *measured;
  {
    DialectRegistry registry; // the training step's derivative rules
    registerAutodiffExternalModels(registry);
    m.ctx->appendDialectRegistry(registry);
  }
  auto none = lowering::stashedActivationBytesByBlock(*m.module, Optimizer::Sgd);
  auto full =
      lowering::stashedActivationBytesByBlock(*m.module, Optimizer::Sgd, true);
  ASSERT_TRUE(succeeded(none) && succeeded(full));
  ASSERT_EQ(none->size(), work.pieces.size());
  ASSERT_EQ(full->size(), work.pieces.size());
  work.activationBytes = 0;
  for (size_t k = 0; k < work.pieces.size(); ++k) {
    work.pieces[k].activationBytes = (*none)[k];
    work.pieces[k].recomputedActivationBytes = (*full)[k];
    work.activationBytes += (*none)[k];
    bool block = k > 0 && k + 1 < work.pieces.size();
    // Blocks keep less; the stem and head are not recomputed.
    if (block)
      EXPECT_LT((*full)[k], 0.5 * (*none)[k]) << "block " << k - 1;
    else
      EXPECT_EQ((*full)[k], (*none)[k]) << "piece " << k;
  }

  cost::ParallelConfig plan;
  plan.dp = 8;
  plan.microbatchSize = 4;
  plan.globalBatch = 64;
  plan.precision = cost::DType::Bf16;
  auto score = [&](cost::ParallelConfig p) {
    return scoreGraphPlan(work, c, p, Optimizer::Sgd, nullptr);
  };
  double blocksForward = 0, blocksFlops = 0;
  for (int64_t k = 0; k < work.numBlocks(); ++k) {
    blocksForward += work.pieces[k + 1].forwardSeconds;
    blocksFlops += work.pieces[k + 1].forwardFlops;
  }
  ASSERT_GT(blocksForward, 0);
  ASSERT_GT(blocksFlops, 0);
  {
    auto stashing = score(plan);
    plan.recompute = cost::Recompute::Full;
    auto recomputing = score(plan);
    plan.recompute = cost::Recompute::None;
    ASSERT_TRUE(stashing.ok() && recomputing.ok()) << recomputing.status();
    // One stage, priced by formula: two microbatches a replica, each
    // running the blocks' forward pass once more.
    EXPECT_NEAR(recomputing->stepSeconds - stashing->stepSeconds,
                2 * blocksForward, 1e-3 * recomputing->stepSeconds);
    EXPECT_LT(recomputing->memory.activations,
              0.5 * stashing->memory.activations);
    EXPECT_DOUBLE_EQ(recomputing->modelFlops, stashing->modelFlops);
    EXPECT_NEAR(recomputing->hardwareFlops - recomputing->modelFlops,
                blocksFlops * 2 * 8, 1e-9 * recomputing->hardwareFlops);
    EXPECT_GT(recomputing->hwTflopsPerDevice, recomputing->tflopsPerDevice);
  }

  // Two stages of 1F1B: recomputing on the first only (which holds two
  // microbatches in flight) lowers its memory, costs less than
  // recomputing on both, and gives that stage fewer blocks.
  plan.pp = 2;
  plan.dp = 4;
  plan.globalBatch = 32;
  auto stashing = score(plan);
  plan.recompute = cost::Recompute::Full;
  auto everywhere = score(plan);
  plan.stageRecompute = {cost::Recompute::Full, cost::Recompute::None};
  auto first = score(plan);
  ASSERT_TRUE(stashing.ok() && everywhere.ok() && first.ok())
      << first.status();
  EXPECT_LT(first->stageMemory[0].activations,
            0.5 * stashing->stageMemory[0].activations);
  // The second stage, which does not recompute, takes the blocks the
  // first gives up, and their stash.
  EXPECT_GT(first->stageMemory[1].activations,
            stashing->stageMemory[1].activations);
  EXPECT_GT(first->stepSeconds, stashing->stepSeconds);
  EXPECT_LT(first->stepSeconds, everywhere->stepSeconds);
  ASSERT_EQ(first->layersPerStage.size(), 2u);
  EXPECT_LT(first->layersPerStage[0], stashing->layersPerStage[0]);

  // What a graph plan cannot recompute is refused, with why.
  auto refused = [&](const cost::ParallelConfig &p, llvm::StringRef why) {
    return refusedWith(score(p), why);
  };
  cost::ParallelConfig selective = plan;
  selective.stageRecompute = {cost::Recompute::Selective,
                              cost::Recompute::None};
  EXPECT_TRUE(refused(selective, "attention cores"));
  cost::ParallelConfig short_ = plan;
  short_.stageRecompute = {cost::Recompute::Full};
  EXPECT_TRUE(refused(short_, "given for 1 stages, but pp = 2"));
  GraphWork unknown = work;
  for (GraphPiece &piece : unknown.pieces)
    piece.recomputedActivationBytes = -1;
  auto r = scoreGraphPlan(unknown, c, plan, Optimizer::Sgd, nullptr);
  EXPECT_FALSE(r.ok());
}

TEST(GraphPlan, InterleavedAndZeroBubbleSchedulesShortenTheBubble) {
  // Four stages of the ResNet's blocks, eight microbatches: v chunks per
  // stage cut the warm-up and cool-down by v (Narayanan et al.), and
  // splitting the weight gradients off (ZB-H1) lets a stage send its
  // input gradient before computing them.
  Model m = load(kResNet);
  ASSERT_TRUE(m.module);
  cost::Cluster c = dgx();
  auto work = measureGraphWork(*m.module, 4, c, nullptr);
  ASSERT_TRUE(work.ok()) << work.status();
  double weightGrad = 0, backward = 0;
  for (const GraphPiece &piece : work->pieces) {
    weightGrad += piece.weightGradSeconds;
    backward += piece.backwardSeconds;
    EXPECT_LE(piece.weightGradSeconds, piece.backwardSeconds);
  }
  // A convolution's weight gradient is half its backward; the
  // normalisations and activations between them (memory-bound on a GPU)
  // have none.
  EXPECT_GT(weightGrad, 0.1 * backward);
  EXPECT_LT(weightGrad, 0.5 * backward);

  cost::ParallelConfig plan;
  plan.pp = 4;
  plan.dp = 2;
  plan.microbatchSize = 4;
  plan.globalBatch = 64;
  plan.precision = cost::DType::Bf16;
  auto score = [&](cost::ScheduleKind schedule, int64_t chunks) {
    cost::ParallelConfig p = plan;
    p.schedule = schedule;
    p.chunks = chunks;
    return scoreGraphPlan(*work, c, p, Optimizer::Sgd, nullptr);
  };
  auto oneF = score(cost::ScheduleKind::OneFOneB, 1);
  auto interleaved = score(cost::ScheduleKind::Interleaved, 2);
  auto zb = score(cost::ScheduleKind::ZeroBubbleH1, 1);
  ASSERT_TRUE(oneF.ok() && interleaved.ok() && zb.ok())
      << interleaved.status() << zb.status();
  EXPECT_LT(interleaved->bubbleFraction, oneF->bubbleFraction);
  EXPECT_LT(zb->bubbleFraction, oneF->bubbleFraction);
  EXPECT_LT(zb->stepSeconds, oneF->stepSeconds);
  // Eight chunks of the 16 blocks, chunk c on stage c % 4.
  ASSERT_EQ(interleaved->layersPerChunk.size(), 8u);
  int64_t blocks = 0;
  for (int64_t n : interleaved->layersPerChunk) {
    EXPECT_GE(n, 1);
    blocks += n;
  }
  EXPECT_EQ(blocks, work->numBlocks());
  // The first stage sends no gradient back and holds what 1F1B holds; a
  // later one keeps its deferred weight gradients' inputs a while longer.
  EXPECT_DOUBLE_EQ(zb->stageMemory[0].activations,
                   oneF->stageMemory[0].activations);
  EXPECT_GT(zb->stageMemory[1].activations,
            oneF->stageMemory[1].activations);

  // What the schedules need is refused, with why.
  auto refused = [&](cost::ScheduleKind schedule, int64_t chunks,
                     int64_t globalBatch, llvm::StringRef why) {
    cost::ParallelConfig p = plan;
    p.schedule = schedule;
    p.chunks = chunks;
    p.globalBatch = globalBatch;
    return refusedWith(scoreGraphPlan(*work, c, p, Optimizer::Sgd, nullptr), why);
  };
  EXPECT_TRUE(refused(cost::ScheduleKind::Interleaved, 1, 64, "two or more"));
  EXPECT_TRUE(refused(cost::ScheduleKind::OneFOneB, 2, 64, "interleaved"));
  EXPECT_TRUE(refused(cost::ScheduleKind::Interleaved, 5, 64, "too few"));
  EXPECT_TRUE(
      refused(cost::ScheduleKind::Interleaved, 2, 24, "multiple of pp"));
}

} // namespace
