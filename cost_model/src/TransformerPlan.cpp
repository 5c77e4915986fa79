//===- TransformerPlan.cpp - Score a parallel plan of a transformer -------===//
//
// Ranks are laid out as Megatron-LM does: tensor-parallel ranks fastest
// (inside a node), then context, then data parallel, then pipeline stages:
//   rank = ((stage * dp + d) * cp + c) * tp + t.
// Costs are per microbatch on one tensor-parallel rank of a stage; every
// rank of a stage runs the same timeline, so one rank stands for each stage.
// This file produces the plan's StageWorkload (its layers' passes with the
// tensor, context and expert collectives in them, the layer split, the
// analytic activation memory); scoreStages prices the rest and simulates.
//
//===----------------------------------------------------------------------===//

#include "cleave/cost_model/TransformerPlan.h"

#include "AssignOrReturn.h"
#include "GroupCollectives.h"
#include "cleave/cost_model/StageBalance.h"
#include "cleave/cost_model/StageWorkload.h"

#include "cleave/cost_model/Collectives.h"
#include "cleave/cost_model/OperatorCost.h"
#include "cleave/cost_model/PipelineSimulation.h"
#include "cleave/cost_model/Profile.h"

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

#include <algorithm>
#include <map>
#include <set>
#include <cmath>

namespace cleave::cost {

double TransformerModel::mlpParameters() const {
  double h = hidden, f = mlp();
  return gatedMlp ? 3 * h * f : 2 * h * f + f + h;
}

double TransformerModel::parameters() const {
  double h = hidden, d = double(hidden) / heads;
  double attention = h * (heads + 2 * kv()) * d + heads * d * h +
                     (gatedMlp ? 0 : (heads + 2 * kv()) * d + h);
  double dense = mlpParameters();
  double norms = gatedMlp ? 2 * h : 4 * h;
  double total = 0;
  for (int64_t l = 0; l < layers; ++l)
    total += attention + norms +
             (isMoeLayer(l) ? experts * dense + h * experts : dense);
  total += double(vocab) * h * (tiedEmbedding ? 1 : 2);
  if (learnedPositions)
    total += double(seq) * h;
  total += gatedMlp ? h : 2 * h; // final norm
  return total;
}

double megatronFlopsPerStep(const TransformerModel &m, int64_t globalBatch) {
  double B = globalBatch, s = m.seq, l = m.layers, h = m.hidden, V = m.vocab;
  return 96.0 * B * s * l * h * h *
         (1.0 + s / (6.0 * h) + V / (16.0 * l * h));
}

void CollectiveTally::add(Collective kind, bool crossNode, double calls,
                          double bytesEach) {
  Volume &v = byKind[{kind, crossNode}];
  v.calls += calls;
  v.bytes += calls * bytesEach;
}

CollectiveTally &CollectiveTally::operator+=(const CollectiveTally &other) {
  for (const auto &[key, v] : other.byKind) {
    Volume &mine = byKind[key];
    mine.calls += v.calls;
    mine.bytes += v.bytes;
  }
  return *this;
}

CollectiveTally CollectiveTally::scaled(double k) const {
  CollectiveTally out = *this;
  for (auto &[key, v] : out.byKind.all()) {
    v.calls *= k;
    v.bytes *= k;
  }
  return out;
}

namespace {

/// Seconds and FLOPs of one piece of work on one rank.
struct Work {
  double seconds = 0;
  double flops = 0;
  Work &operator+=(const Work &o) {
    seconds += o.seconds;
    flops += o.flops;
    return *this;
  }
};

Work operator+(Work a, const Work &b) { return a += b; }

Work operator*(Work w, double k) {
  w.seconds *= k;
  w.flops *= k;
  return w;
}

/// What a collective of `comm` seconds adds to a GEMM of `gemm` seconds
/// when both run as a ring of `tp` steps (Transformer Engine's collective
/// GEMM, after Wang et al., ASPLOS'23): the GEMM is cut into tp chunks;
/// while one chunk computes, the next moves, so the pair takes the first
/// chunk's GEMM (nothing arrived to overlap it with) and then tp - 1 steps
/// of whichever is slower, the GEMM chunk or one chunk's transfer.
double ringOverlap(double gemm, double comm, double tp) {
  if (tp <= 1 || comm <= 0)
    return comm;
  double steps = tp - 1;
  double pair = gemm / tp + steps * std::max(gemm / tp, comm / steps);
  return std::max(0.0, pair - gemm);
}

/// Prices the pieces of a plan on a cluster.
class Pricer : public GroupCollectives {
public:
  Pricer(const Cluster &cluster, const Profile *profile, DType dtype)
      : GroupCollectives(cluster, profile), dtype(dtype),
        bytes(dtypeBytes(dtype)) {}

  absl::StatusOr<Work> gemm(double m, double n, double k, double batch = 1) {
    Gemm g;
    g.m = std::max<int64_t>(1, std::llround(m));
    g.n = std::max<int64_t>(1, std::llround(n));
    g.k = std::max<int64_t>(1, std::llround(k));
    g.batch = std::max<int64_t>(1, std::llround(batch));
    g.dtype = dtype;
    auto cost = estimateGemm(g, cluster, profile);
    if (!cost.ok())
      return cost.status();
    return Work{cost->seconds, g.flops()};
  }

  /// Seconds of a fused attention kernel running `flops` and moving
  /// `bytes` (efficiency.attention_forward or _backward).
  absl::StatusOr<double> attention(double flops, double bytes, bool backward,
                                   double seq, double headDim, bool causal) {
    GenericOp op;
    op.flops = flops;
    op.bytesRead = bytes;
    op.dtype = dtype;
    op.tensorCores = true;
    op.backwardPass = backward;
    op.attentionSeq = seq;
    op.attentionHeadDim = headDim;
    op.attentionCausal = causal;
    auto cost = estimateGeneric(op, cluster, profile);
    if (!cost.ok())
      return cost.status();
    return cost->seconds;
  }

  /// GEMM forward, and its backward (two GEMMs of the same size).
  absl::StatusOr<std::pair<Work, Work>> gemmTraining(double m, double n,
                                                     double k,
                                                     double batch = 1) {
    auto fwd = gemm(m, n, k, batch);
    if (!fwd.ok())
      return fwd.status();
    auto dx = gemm(m, k, n, batch);
    auto dw = gemm(k, n, m, batch);
    if (!dx.ok() || !dw.ok())
      return dx.ok() ? dw.status() : dx.status();
    return std::make_pair(*fwd, *dx + *dw);
  }

  /// A bandwidth-bound kernel touching `elements` values `passes` times
  /// (reads plus writes).
  absl::StatusOr<Work> memoryBound(double elements, double passes,
                                   double flopsPerElement = 1) {
    GenericOp op;
    op.bytesRead = elements * bytes * passes / 2;
    op.bytesWritten = elements * bytes * passes / 2;
    op.flops = elements * flopsPerElement;
    op.dtype = DType::Fp32;
    auto cost = estimateGeneric(op, cluster, profile);
    if (!cost.ok())
      return cost.status();
    return Work{cost->seconds, 0.0};
  }

  /// The wait of each collective between a layer's compute where ranks
  /// share cores (inStepCollectiveWait).
  double inStepWait() const { return inStepCollectiveWait(cluster, profile); }

  DType dtype;
  double bytes;
};

/// One layer, one microbatch, one tensor-parallel rank.
struct LayerCost {
  /// `backward` without recomputation; what each mode runs again.
  Work forward, backward, recomputeFull, recomputeSelective;
  Work recompute(Recompute r) const {
    return r == Recompute::Full        ? recomputeFull
           : r == Recompute::Selective ? recomputeSelective
                                       : Work{};
  }
  double weightGradSeconds = 0;
  double gemm = 0, elementwise = 0, tensorComm = 0;
  /// The collectives of `forward`, `backward` and full recomputation
  /// (selective recomputation runs none).
  CollectiveTally forwardComm, backwardComm, recomputeFullComm;
  CollectiveTally recomputeComm(Recompute r) const {
    return r == Recompute::Full ? recomputeFullComm : CollectiveTally{};
  }
};

absl::Status checkPlan(const TransformerModel &m, const Cluster &c,
                       const ParallelConfig &p) {
  auto fail = [](auto &&...parts) {
    return absl::InvalidArgumentError(absl::StrCat(parts...));
  };
  for (auto [name, v] : {std::pair{"dp", p.dp}, {"tp", p.tp}, {"pp", p.pp},
                         {"cp", p.cp}, {"ep", p.ep}, {"microbatch", p.microbatchSize},
                         {"chunks", p.chunks}})
    if (v < 1)
      return fail(name, " must be at least 1, got ", v);
  int64_t devices = p.dp * p.tp * p.pp * p.cp;
  if (devices != c.numDevices())
    return fail("dp x tp x pp x cp = ", p.dp, " x ", p.tp, " x ", p.pp, " x ",
                p.cp, " = ", devices, " devices, but the cluster has ",
                c.numDevices());
  if (m.heads % p.tp || m.kv() % p.tp)
    return fail("tp = ", p.tp, " must divide the attention heads (", m.heads,
                ") and key/value heads (", m.kv(), ")");
  if (m.mlp() % p.tp)
    return fail("tp = ", p.tp, " must divide the MLP width ", m.mlp());
  if (m.seq % p.cp)
    return fail("cp = ", p.cp, " must divide the sequence length ", m.seq);
  if (m.layers < p.pp * p.chunks)
    return fail("pp x chunks = ", p.pp * p.chunks, " exceeds the ", m.layers,
                " layers");
  if (p.globalBatch % (p.dp * p.microbatchSize))
    return fail("the global batch ", p.globalBatch,
                " is not a multiple of dp x microbatch = ",
                p.dp * p.microbatchSize);
  if (p.zero < 0 || p.zero > 3)
    return fail("zero must be 0, 1, 2 or 3, got ", p.zero);
  if (!p.stageRecompute.empty() &&
      static_cast<int64_t>(p.stageRecompute.size()) != p.pp)
    return fail("recomputation is given for ", p.stageRecompute.size(),
                " stages, but pp = ", p.pp);
  if (p.ep > 1 && (m.experts == 0 || m.experts % p.ep || p.dp % p.ep))
    return fail("ep = ", p.ep,
                " needs a mixture-of-experts model whose expert count it "
                "divides, and must divide dp = ",
                p.dp);
  if (p.zeroBucketElements < 0)
    return fail("the ZeRO bucket size must not be negative, got ",
                p.zeroBucketElements);
  if (p.overlapTpComm && p.tp > 1 && !p.sequenceParallel)
    return fail("overlap-tp=on needs sp=on: the overlap splits the "
                "sequence-parallel all-gathers and reduce-scatters");
  if (p.schedule == ScheduleKind::Interleaved && p.chunks < 2)
    return fail("the interleaved schedule needs chunks >= 2");
  if (p.schedule != ScheduleKind::Interleaved && p.chunks != 1)
    return fail("chunks > 1 needs the interleaved schedule");
  return absl::OkStatus();
}

/// Memory-model schedule for a pipeline schedule.
PipelineSchedule memorySchedule(ScheduleKind kind) {
  switch (kind) {
  case ScheduleKind::GPipe:
    return PipelineSchedule::GPipe;
  case ScheduleKind::OneFOneB:
    return PipelineSchedule::OneFOneB;
  case ScheduleKind::Interleaved:
    return PipelineSchedule::Interleaved1F1B;
  case ScheduleKind::ZeroBubbleH1:
    return PipelineSchedule::ZeroBubbleH1;
  }
  return PipelineSchedule::OneFOneB;
}

} // namespace

namespace {
/// scoreTransformerPlan on a cluster whose compute sharing is settled.
/// `taskScale`, one factor per task of `scaledGraph`, multiplies each
/// task's time before the simulation (per-task core sharing) where this
/// plan's task graph has the same tasks (names, ranks, streams).
absl::StatusOr<PlanPrediction>
scoreOnCluster(const TransformerModel &m, const Cluster &cluster,
               const ParallelConfig &p, const Profile *profile,
               TaskGraph *graphOut, Timeline *timelineOut,
               double simulateBelow,
               const std::vector<double> *taskScale = nullptr,
               const TaskGraph *scaledGraph = nullptr);

/// Where the devices of a node share fewer cores: how many of a node's
/// ranks are busy and how many times slower they run, piecewise constant
/// over the simulated step. Every stage of the simulation stands for the
/// same number of ranks, spread alike over the nodes: while k of n stages
/// are busy (computing or communicating: MPI's copies and sums run on the
/// cores too), c = D k / n of a node's D ranks are, the others wait taking
/// `waitLoad` of a core each, and the busy ones run
/// max(1, (c + waitLoad (D - c)) / cores) times slower.
struct CoreSharing {
  /// Segment i runs from times[i] to times[i + 1].
  std::vector<double> times, busyRanks, slowdown;
};
CoreSharing coreSharing(const TaskGraph &graph, const Timeline &timeline,
                        const Cluster &cluster, double waitLoad) {
  std::vector<std::pair<double, int>> edges;
  for (const std::vector<Span> &stage : busySpans(graph, timeline))
    for (const Span &span : stage) {
      edges.push_back({span.start, 1});
      edges.push_back({span.end, -1});
    }
  std::sort(edges.begin(), edges.end());
  const double stages = std::max(1, timeline.numRanks);
  const double devices = double(cluster.devicesPerNode);
  const double cores = double(cluster.coresPerNode);
  CoreSharing out;
  int busy = 0;
  for (size_t i = 0; i + 1 < edges.size(); ++i) {
    busy += edges[i].second;
    double c = devices * std::max(0, busy) / stages;
    double load = c + waitLoad * (devices - c);
    out.times.push_back(edges[i].first);
    out.busyRanks.push_back(c);
    out.slowdown.push_back(std::max(1.0, load / cores));
  }
  if (!edges.empty())
    out.times.push_back(edges.back().first);
  return out;
}

/// How many times slower work runs on average over the work (coreSharing).
/// Weighting by work rather than time gives a pipeline's steady state,
/// where every stage works and the cores are most shared, its share of the
/// step. The ops of the second simulation are priced with it.
double sharedCoreSlowdown(const CoreSharing &sharing, const Cluster &cluster) {
  double work = 0, slowed = 0;
  for (size_t i = 0; i < sharing.slowdown.size(); ++i) {
    double dt = sharing.times[i + 1] - sharing.times[i];
    if (dt <= 0)
      continue;
    work += sharing.busyRanks[i] * dt;
    slowed += sharing.busyRanks[i] * dt * sharing.slowdown[i];
  }
  return work > 0 ? slowed / work
                  : std::max(1.0, double(cluster.devicesPerNode) /
                                      double(cluster.coresPerNode));
}

/// Per task of `graph`: the slowdown of coreSharing averaged over the
/// task's own span on `timeline` (1 for empty tasks).
std::vector<double> perTaskSlowdown(const TaskGraph &graph,
                                    const Timeline &timeline,
                                    const CoreSharing &sharing) {
  const std::vector<double> &times = sharing.times;
  std::vector<double> out(graph.size(), 1.0);
  for (int t = 0; t < graph.size() && size_t(t) < timeline.end.size(); ++t) {
    double a = timeline.start[t], b = timeline.end[t];
    if (!(b > a))
      continue;
    double sum = 0;
    size_t i = std::upper_bound(times.begin(), times.end(), a) -
               times.begin();
    i = i > 0 ? i - 1 : 0;
    for (; i < sharing.slowdown.size() && times[i] < b; ++i) {
      double lo = std::max(a, times[i]), hi = std::min(b, times[i + 1]);
      if (hi > lo)
        sum += (hi - lo) * sharing.slowdown[i];
    }
    out[t] = std::max(1.0, sum / (b - a));
  }
  return out;
}
} // namespace

namespace {
/// scoreTransformerPlan with the layer split `p` asks for.
absl::StatusOr<PlanPrediction>
scoreWithSplit(const TransformerModel &m, const Cluster &cluster,
               const ParallelConfig &p, const Profile *profile,
               TaskGraph *graphOut, Timeline *timelineOut,
               double simulateBelow) {
  if (cluster.computeSharing() <= 1)
    return scoreOnCluster(m, cluster, p, profile, graphOut, timelineOut,
                          simulateBelow);
  // Ranks share cores (CPU ranks beyond the cores): price the plan once
  // unshared, then with every task slowed by what sharing costs it over its
  // own span of that timeline.
  Cluster alone = cluster;
  alone.coresPerNode = 0;
  TaskGraph graph;
  Timeline timeline;
  absl::StatusOr<PlanPrediction> first = scoreOnCluster(
      m, alone, p, profile, &graph, &timeline, simulateBelow);
  if (!first.ok())
    return first;
  double waitLoad =
      profile && profile->waitingRankLoad ? *profile->waitingRankLoad : 0.0;
  Cluster shared = cluster;
  CoreSharing sharing;
  if (first->simulated)
    sharing = coreSharing(graph, timeline, cluster, waitLoad);
  double uniform = first->simulated
                       ? sharedCoreSlowdown(sharing, cluster)
                       : double(cluster.devicesPerNode) /
                             double(cluster.coresPerNode);
  shared.busyDevicesPerNode =
      first->simulated ? uniform * double(cluster.coresPerNode)
                       : double(cluster.devicesPerNode);
  // Each task then runs at the sharing of its own span, not the average:
  // in a pipeline's fill and drain, or while stages take turns, the busy
  // ranks have the cores to themselves (a two-stage pipeline of one
  // microbatch measured its forward at the unshared time, 71 against 94 ms
  // priced with the average). The second simulation prices every op with
  // the average (collective waits included) and rescales each task by its
  // own slowdown over the average.
  std::vector<double> scale;
  if (first->simulated && uniform > 1) {
    scale = perTaskSlowdown(graph, timeline, sharing);
    for (double &f : scale)
      f /= uniform;
  }
  absl::StatusOr<PlanPrediction> out =
      scoreOnCluster(m, shared, p, profile, graphOut, timelineOut,
                     simulateBelow, scale.empty() ? nullptr : &scale, &graph);
  // Unsimulated, every task was priced at the average sharing; in a
  // pipeline's fill and drain tasks run faster than that (unshared). No
  // task runs faster than alone: that bound holds.
  if (out.ok() && !first->simulated &&
      first->lowerBoundSeconds < out->lowerBoundSeconds) {
    out->lowerBoundSeconds = first->lowerBoundSeconds;
    if (!out->simulated)
      out->stepSeconds = out->lowerBoundSeconds;
  }
  return out;
}
} // namespace

absl::StatusOr<PlanPrediction>
scoreTransformerPlan(const TransformerModel &m, const Cluster &cluster,
                     const ParallelConfig &p, const Profile *profile,
                     TaskGraph *graphOut, Timeline *timelineOut,
                     double simulateBelow) {
  bool uniformRecompute = true;
  for (int64_t st = 1; st < p.pp; ++st)
    uniformRecompute &= p.recomputeOf(st) == p.recomputeOf(0);
  if (!p.balanceStages || p.pp <= 1 || uniformRecompute)
    return scoreWithSplit(m, cluster, p, profile, graphOut, timelineOut,
                          simulateBelow);
  // Where the stages recompute differently, the balanced split moves
  // layers off the stages that recompute, which evens their compute but
  // may lengthen the pipeline's fill and drain by more than it shortens
  // the busiest stage (few microbatches, cheap recomputation). Simulate the
  // even split too and keep whichever steps faster.
  TaskGraph graph, evenGraph;
  Timeline timeline, evenTimeline;
  absl::StatusOr<PlanPrediction> balanced = scoreWithSplit(
      m, cluster, p, profile, &graph, &timeline, simulateBelow);
  if (!balanced.ok())
    return balanced;
  // A search's memory pass (nothing simulated): the even split may be the
  // one simulated and kept, so the plan's lower bound is the smaller of
  // the two splits' (else the search could rule out a plan whose even
  // split beats the best it found).
  if (simulateBelow < 0) {
    ParallelConfig evenPlan = p;
    evenPlan.balanceStages = false;
    absl::StatusOr<PlanPrediction> even = scoreWithSplit(
        m, cluster, evenPlan, profile, nullptr, nullptr, simulateBelow);
    if (even.ok() && even->lowerBoundSeconds < balanced->lowerBoundSeconds) {
      balanced->lowerBoundSeconds = even->lowerBoundSeconds;
      balanced->stepSeconds = even->stepSeconds;
    }
    return balanced;
  }
  ParallelConfig evenPlan = p;
  evenPlan.balanceStages = false;
  absl::StatusOr<PlanPrediction> even = scoreWithSplit(
      m, cluster, evenPlan, profile, &evenGraph, &evenTimeline, simulateBelow);
  bool keepEven = even.ok() && even->simulated &&
                  even->stepSeconds < balanced->stepSeconds;
  if (keepEven) {
    even->plan = p;
    balanced = std::move(even);
    graph = std::move(evenGraph);
    timeline = std::move(evenTimeline);
  }
  if (graphOut)
    *graphOut = std::move(graph);
  if (timelineOut)
    *timelineOut = std::move(timeline);
  return balanced;
}

namespace {
absl::StatusOr<PlanPrediction>
scoreOnCluster(const TransformerModel &m, const Cluster &cluster,
               const ParallelConfig &p, const Profile *profile,
               TaskGraph *graphOut, Timeline *timelineOut,
               double simulateBelow, const std::vector<double> *taskScale,
               const TaskGraph *scaledGraph) {
  if (m.layers < 1 || m.hidden < 1 || m.heads < 1 || m.seq < 1 ||
      m.vocab < 1 || m.hidden % m.heads)
    return absl::InvalidArgumentError(
        "the model needs positive layers, hidden, heads, seq and vocab, "
        "with heads dividing hidden");
  if (auto status = checkPlan(m, cluster, p); !status.ok())
    return status;

  Pricer price(cluster, profile, p.precision);
  // A memory pass (nothing simulated) reports no collectives.
  price.counting = simulateBelow >= 0;
  const double e = price.bytes;
  // Bytes of a weight gradient: fp32 under 16-bit storage
  // (cleave-mixed-precision keeps weight gradients and their reductions in
  // fp32, as Megatron-Core does: accumulate_allreduce_grads_in_fp32)
  // unless grad-reduce=half (Megatron-LM's fp16 runs of 2021), the storage
  // type otherwise.
  const bool halfStorage =
      p.precision == DType::Bf16 || p.precision == DType::Fp16;
  const double gradE = halfStorage && !p.halfGradReduce ? 4.0 : e;
  const double b = p.microbatchSize, s = double(m.seq) / p.cp,
               S = double(m.seq), h = m.hidden, a = m.heads, kv = m.kv(),
               d = h / a, t = p.tp, f = m.mlp(), V = m.vocab;
  const bool sp = p.sequenceParallel && p.tp > 1;
  const int64_t microbatches = p.globalBatch / (p.dp * p.microbatchSize);

  // Groups of stage 0 (every stage's groups are placed alike).
  Group tpGroup = Group::strided(0, p.tp, 1);
  Group cpGroup = Group::strided(0, p.cp, p.tp);
  Group epGroup = Group::strided(0, p.ep, p.cp * p.tp);

  // --- One transformer layer (dense or MoE) -------------------------------
  auto layerCost = [&](bool moe) -> absl::StatusOr<LayerCost> {
    LayerCost L;
    double tokens = b * s;
    // Attention GEMMs.
    CLEAVE_ASSIGN(qkv, price.gemmTraining(tokens, (a + 2 * kv) * d / t, h));
    CLEAVE_ASSIGN(scores, price.gemmTraining(s, S, d, b * a / t));
    CLEAVE_ASSIGN(context, price.gemmTraining(s, d, S, b * a / t));
    CLEAVE_ASSIGN(proj, price.gemmTraining(tokens, h, a * d / t));
    // MLP GEMMs: a dense layer's, or each rank's share of the experts'.
    double mlpTokens = tokens;
    double mlpMatrices = m.gatedMlp ? 3 : 2;
    if (moe)
      mlpTokens = tokens * m.topK * m.capacityFactor;
    CLEAVE_ASSIGN(up, price.gemmTraining(mlpTokens, f / t * (mlpMatrices - 1), h));
    CLEAVE_ASSIGN(down, price.gemmTraining(mlpTokens, h, f / t));
    std::pair<Work, Work> router{};
    if (moe) {
      CLEAVE_ASSIGN(r, price.gemmTraining(tokens, m.experts, h));
      router = r;
    }
    if (p.fusedAttention) {
      // One kernel runs both products tile by tile, the softmax between
      // them in registers (FlashAttention-2), priced as the GEMMs it runs
      // at their shape (inner dimension the head size). Causal: the blocks
      // above the diagonal are skipped, half the work (the FLOPs counted
      // stay the model's). Backward recomputes the scores from the saved
      // log-sum-exp: five products to the forward's two, not four.
      double run = m.causal ? 0.5 : 1.0;
      scores.first.seconds *= run;
      context.first.seconds *= run;
      Work forward = scores.first + context.first;
      scores.second = forward * 1.5;
      scores.second.flops = scores.first.flops * 2;
      context.second = forward;
      context.second.flops = context.first.flops * 2;
      if (cluster.efficiency.attentionForward > 0 ||
          cluster.efficiency.attentionBackward > 0) {
        // The cluster states what its attention kernels reach: one kernel
        // each way over the FLOPs they run. Forward reads q, k, v and
        // writes the output; backward reads those, the output gradient
        // and the log-sum-exp and writes three gradients.
        double qBytes = b * a / t * s * d * e, kvBytes = b * kv / t * S * d * e;
        CLEAVE_ASSIGN(fwdKernel,
                      price.attention(forward.flops * run,
                                      2 * qBytes + 2 * kvBytes, false, s, d,
                                      m.causal));
        CLEAVE_ASSIGN(bwdKernel,
                      price.attention(2.5 * forward.flops * run,
                                      4 * qBytes + 4 * kvBytes, true, s, d,
                                      m.causal));
        scores.first.seconds = fwdKernel;
        context.first.seconds = 0;
        scores.second.seconds = bwdKernel;
        context.second.seconds = 0;
      }
    }
    Work gemmF = qkv.first + scores.first + context.first + proj.first +
                 up.first + down.first + router.first;
    Work gemmB = qkv.second + scores.second + context.second + proj.second +
                 up.second + down.second + router.second;
    Work attnCoreF = scores.first + context.first;

    // Memory-bound kernels (fused as in Megatron-LM): two layer norms,
    // scale-mask-softmax and attention dropout, bias-GELU, two
    // bias-dropout-add. Sequence parallelism splits the token-wise ones.
    double tokenShare = sp ? 1.0 / t : 1.0;
    double hiddenElems = tokens * h * tokenShare;
    double scoreElems = b * a / t * s * S;
    double mlpElems = mlpTokens * f / t;
    CLEAVE_ASSIGN(norms, price.memoryBound(2 * hiddenElems, 2, 8));
    // Fused attention never writes the scores: its softmax and dropout run
    // inside the kernel priced with the GEMMs above.
    Work softmax, attnDropout;
    if (!p.fusedAttention) {
      CLEAVE_ASSIGN(sm, price.memoryBound(scoreElems, 2, 5));
      // Attention dropout draws a one-byte mask and applies it: 1 + 2 + 2
      // + 1 bytes an element, three half-precision passes.
      CLEAVE_ASSIGN(drop, price.memoryBound(scoreElems, 3, 2));
      softmax = sm;
      attnDropout = drop;
    }
    // Merging the heads back ([b, heads, s, d] -> [s, b, h]) is a copy.
    CLEAVE_ASSIGN(mergeHeads, price.memoryBound(tokens * a * d / t, 2, 0));
    CLEAVE_ASSIGN(gelu, price.memoryBound(mlpElems, 2, 8));
    CLEAVE_ASSIGN(residual, price.memoryBound(2 * hiddenElems, 3.5, 3));
    Work elemF = norms + softmax + attnDropout + gelu + residual + mergeHeads;
    Work attnElemF = softmax + attnDropout;
    // Backward kernels read the saved inputs and the output gradient and
    // write the input gradient: about twice the forward traffic.
    Work elemB = elemF * 2.0;

    // Tensor parallelism: two all-reduces (or with sequence parallelism an
    // all-gather and a reduce-scatter, each moving the same data) per
    // direction per layer, on the critical path.
    double act = tokens * h * e;
    double tpComm = 0;
    // Backward only: with sequence parallelism a layer keeps its norm
    // outputs as sequence shards, so the weight gradients of the two
    // column-parallel GEMMs all-gather them again (Megatron-LM does the
    // same; the lowering waits on these gathers, as on the others).
    double tpRegather = 0;
    // The backward pass's other tensor-parallel time where it differs from
    // the forward's (overlap-tp); negative: the forward's (tpComm).
    double tpBackward = -1;
    // The reduction after the MLP's row-parallel output GEMM (a
    // reduce-scatter with sequence parallelism, else an all-reduce).
    double mlpOutReduce = 0;
    Collective mlpOutKind = sp ? Collective::ReduceScatter : Collective::AllReduce;
    if (p.tp > 1) {
      if (sp) {
        CLEAVE_ASSIGN(ag, price.collective(Collective::AllGather, act, tpGroup));
        CLEAVE_ASSIGN(rs, price.collective(Collective::ReduceScatter, act, tpGroup));
        // Two all-gathers and two reduce-scatters per layer and direction.
        tpComm = 2 * (ag + rs);
        tpRegather = 2 * ag;
        mlpOutReduce = rs;
        if (p.overlapTpComm) {
          // What each collective adds to the GEMM it overlaps. Forward:
          // the gathered norm output feeds the QKV and MLP-input GEMMs,
          // the attention and MLP output GEMMs feed the reduce-scatters;
          // each pair runs as a ring (ringOverlap). Backward: a column-
          // parallel GEMM's input re-gather runs beside its data-gradient
          // GEMM and that gradient's reduce-scatter beside its weight-
          // gradient GEMM, each pair whole (Transformer Engine's bulk
          // overlap); a row-parallel GEMM's output-gradient gather is a
          // ring beside its data-gradient GEMM. Half of a backward pair is
          // its data gradient.
          double exposedF = ringOverlap(qkv.first.seconds, ag, t) +
                            ringOverlap(proj.first.seconds, rs, t) +
                            ringOverlap(up.first.seconds, ag, t) +
                            ringOverlap(down.first.seconds, rs, t);
          auto bulk = [](double gemm, double comm) {
            return std::max(0.0, comm - gemm);
          };
          double colB = bulk(qkv.second.seconds / 2, ag) +
                        bulk(up.second.seconds / 2, ag);
          double colScatter = bulk(qkv.second.seconds / 2, rs) +
                              bulk(up.second.seconds / 2, rs);
          double rowB = ringOverlap(proj.second.seconds / 2, ag, t) +
                        ringOverlap(down.second.seconds / 2, ag, t);
          tpComm = exposedF;
          tpRegather = colB;
          tpBackward = colScatter + rowB;
          mlpOutReduce = ringOverlap(down.first.seconds, rs, t);
        }
        price.count(L.forwardComm, Collective::AllGather, act, tpGroup, 2);
        price.count(L.forwardComm, Collective::ReduceScatter, act, tpGroup, 2);
        price.count(L.backwardComm, Collective::AllGather, act, tpGroup, 4);
        price.count(L.backwardComm, Collective::ReduceScatter, act, tpGroup,
                    2);
      } else {
        CLEAVE_ASSIGN(ar, price.collective(Collective::AllReduce, act, tpGroup));
        tpComm = 2 * ar;
        mlpOutReduce = ar;
        price.count(L.forwardComm, Collective::AllReduce, act, tpGroup, 2);
        price.count(L.backwardComm, Collective::AllReduce, act, tpGroup, 2);
      }
    }
    // Context parallelism as the lowering builds it: every query block
    // reads the whole sequence's keys and values, all-gathered forward;
    // backward gathers them again and reduce-scatters their gradients
    // (about twice the forward's time).
    double cpComm = 0;
    if (p.cp > 1) {
      double kvBytes = 2 * b * S * kv / t * d * e;
      CLEAVE_ASSIGN(gather, price.collective(Collective::AllGather, kvBytes,
                                             cpGroup));
      cpComm = gather;
      price.count(L.forwardComm, Collective::AllGather, kvBytes, cpGroup);
      price.count(L.backwardComm, Collective::AllGather, kvBytes, cpGroup);
      price.count(L.backwardComm, Collective::ReduceScatter, kvBytes, cpGroup);
    }
    // Expert parallelism: tokens go to their experts and come back.
    double epComm = 0;
    if (moe && p.ep > 1) {
      CLEAVE_ASSIGN(a2a, price.collective(Collective::AllToAll,
                                          mlpTokens * h * e, epGroup,
                                          p.dp / p.ep * p.tp * p.cp));
      epComm = 2 * a2a;
      price.count(L.forwardComm, Collective::AllToAll, mlpTokens * h * e,
                  epGroup, 2);
      price.count(L.backwardComm, Collective::AllToAll, mlpTokens * h * e,
                  epGroup, 2);
    }

    // Each collective between the layer's compute also waits for the
    // slowest rank where ranks share cores: as many waits as calls (sp: two
    // all-gathers and two reduce-scatters a direction, and two re-gathers
    // backward; else two all-reduces; cp: one gather forward, a gather
    // and a reduce-scatter backward, 2 x cpComm; ep: two all-to-alls).
    double wait = price.inStepWait();
    if (p.tp > 1) {
      tpComm += (sp ? 4 : 2) * wait;
      if (tpBackward >= 0)
        tpBackward += 4 * wait;
      tpRegather += (sp ? 2 : 0) * wait;
      mlpOutReduce += wait;
    }
    if (p.cp > 1)
      cpComm += wait;
    if (moe && p.ep > 1)
      epComm += 2 * wait;
    double commF = tpComm + cpComm + epComm;
    L.forward = gemmF + elemF;
    L.forward.seconds += commF;
    L.backward = gemmB + elemB;
    L.backward.seconds += (tpBackward < 0 ? tpComm : tpBackward) +
                          tpRegather + 2 * cpComm + epComm;
    // Recomputation runs (part of) the forward again inside the backward
    // (added per stage, which may recompute or not).
    L.recomputeFull = L.forward;
    // A recomputed forward gathers the norm outputs again itself, and the
    // weight gradients read those: the backward's re-gathers fall away.
    L.recomputeFull.seconds -= tpRegather;
    L.recomputeFullComm = L.forwardComm;
    if (sp)
      price.count(L.recomputeFullComm, Collective::AllGather, act, tpGroup,
                  -2);
    // cleave-recompute runs again only the ops whose results the backward
    // pass reads, and what those read. A dense layer's MLP output GEMM, its
    // tensor-parallel reduction and the residual add after them feed only
    // the layer's output, which is stashed anyway (the next layer's
    // input): none of the three runs again. (An MoE layer's combine reads
    // the experts' outputs back, so all of its MLP runs again.) Measured
    // on one CPU rank, 4-layer GPT, hidden 512: full recomputation added
    // 195 ms a step against 293 ms priced as the whole forward, 205 ms
    // priced this way.
    if (!moe && !p.recomputeWholeLayer) {
      L.recomputeFull += (down.first + residual * 0.5) * -1.0;
      if (p.tp > 1) {
        L.recomputeFull.seconds -= mlpOutReduce;
        price.count(L.recomputeFullComm, mlpOutKind, act, tpGroup, -1);
      }
    }
    L.recomputeSelective = attnCoreF + attnElemF;
    // The weight-gradient GEMMs are half of the backward GEMMs.
    L.weightGradSeconds = gemmB.seconds / 2;
    L.gemm = gemmF.seconds;
    L.elementwise = elemF.seconds;
    L.tensorComm = commF;
    return L;
  };

  CLEAVE_ASSIGN(dense, layerCost(false));
  LayerCost moeLayer = dense;
  if (m.experts > 0) {
    CLEAVE_ASSIGN(mc, layerCost(true));
    moeLayer = mc;
  }

  // --- Embedding and head -------------------------------------------------
  double tokens = b * s;
  CLEAVE_ASSIGN(embedF, price.memoryBound(tokens * h, 2, 1));
  CLEAVE_ASSIGN(head, price.gemmTraining(tokens, V / t, h));
  // Vocabulary-parallel cross-entropy works in fp32 (Megatron-LM upcasts
  // the logits): about six passes over 4-byte logits forward (convert,
  // max, exp and sum, log, gather), three backward.
  CLEAVE_ASSIGN(lossElem,
                price.memoryBound(tokens * V / t, 6 * 4.0 / e, 5));
  // The vocabulary-parallel lookup sums its partial rows: all-reduced,
  // or with sequence parallelism reduce-scattered onto the sequence blocks
  // the first norm reads.
  // Backward, the all-reduce's gradient passes through; the
  // reduce-scatter's is all-gathered back to whole rows.
  // Like the layers' collectives, each waits for the slowest rank where
  // ranks share cores.
  double embedComm = 0, embedCommBack = 0, headComm = 0, headCommBack = 0;
  // A vocabulary that tp does not divide cannot be split by rows (pad it:
  // the zoo's pad_vocab). The sharding search splits the table along the
  // hidden dimension instead: the lookup's columns are gathered (with
  // sequence parallelism exchanged onto the sequence blocks, an
  // all-to-all each way), the head multiplies over split K, so the whole
  // logits are all-reduced (reduce-scattered onto the sequence blocks
  // with sequence parallelism) and, the cross-entropy taking a block of
  // the tokens, their gradient is all-gathered back. Counted in the
  // lowered programs of a 1-layer GPT, vocabulary 50257 at tp=4: one
  // logits-sized reduction and one logits-sized gather a microbatch, with
  // sp on or off.
  const bool vocabSplits = m.vocab % p.tp == 0;
  const double logitsBytes = tokens * V * e;
  if (p.tp > 1 && !vocabSplits) {
    double wait = price.inStepWait();
    CLEAVE_ASSIGN(columns,
                  sp ? price.collective(Collective::AllToAll,
                                        tokens * h * e / t, tpGroup)
                     : price.collective(Collective::AllGather, tokens * h * e,
                                        tpGroup));
    embedComm = columns + wait;
    embedCommBack = sp ? columns + wait : 0.0;
    CLEAVE_ASSIGN(reduce, price.collective(sp ? Collective::ReduceScatter
                                              : Collective::AllReduce,
                                           logitsBytes, tpGroup));
    CLEAVE_ASSIGN(gather, price.collective(Collective::AllGather, logitsBytes,
                                           tpGroup));
    headComm = reduce + wait;
    headCommBack = gather + wait;
    if (sp) {
      headComm += columns + wait;
      headCommBack += columns + wait;
    }
  } else if (p.tp > 1) {
    double wait = price.inStepWait();
    CLEAVE_ASSIGN(sum, price.collective(sp ? Collective::ReduceScatter
                                           : Collective::AllReduce,
                                        tokens * h * e, tpGroup));
    embedComm = sum + wait;
    if (sp) {
      CLEAVE_ASSIGN(back, price.collective(Collective::AllGather,
                                           tokens * h * e, tpGroup));
      embedCommBack = back + wait;
    }
    // The head: with sequence parallelism its input (the final norm's
    // sequence blocks) is gathered whole first, and its gradient
    // reduce-scattered back. The vocabulary-parallel cross-entropy
    // all-reduces each token's maximum logit, sum of exponentials and
    // target logit (fp32), three small collectives that cost a latency
    // and a wait each (Megatron-LM's _VocabParallelCrossEntropy).
    CLEAVE_ASSIGN(stat, price.collective(Collective::AllReduce, tokens * 4.0,
                                         tpGroup));
    headComm = 3 * (stat + wait);
    if (sp) {
      CLEAVE_ASSIGN(gather, price.collective(Collective::AllGather,
                                             tokens * h * e, tpGroup));
      CLEAVE_ASSIGN(scatter, price.collective(Collective::ReduceScatter,
                                              tokens * h * e, tpGroup));
      headComm += gather + wait;
      headCommBack = scatter + wait;
    }
  }

  // --- Stages -------------------------------------------------------------
  // Layers per chunk balance the chunks' compute: the first also embeds,
  // the last runs the head and the loss (StageBalance.h). The even split
  // (spare layers to the later chunks) is kept wherever it is as fast.
  // Under the interleaved schedule a stage runs all its chunks in turn, so
  // the balanced split is taken only where it also shortens the busiest
  // stage (the sum of its chunks).
  int64_t chunksTotal = p.pp * p.chunks;
  std::vector<int64_t> chunkLayers = evenLayerSplit(m.layers, chunksTotal);
  auto layerSecondsUnder = [&](Recompute r) {
    std::vector<double> layerSeconds;
    for (int64_t l = 0; l < m.layers; ++l) {
      const LayerCost &L = m.isMoeLayer(l) ? moeLayer : dense;
      layerSeconds.push_back(L.forward.seconds + L.backward.seconds +
                             L.recompute(r).seconds);
    }
    return layerSeconds;
  };
  bool uniformRecompute = true;
  for (int64_t st = 1; st < p.pp; ++st)
    uniformRecompute &= p.recomputeOf(st) == p.recomputeOf(0);
  // The balanced split of the layers over the chunks (from `even`).
  auto balancedSplit = [&](const std::vector<double> &layerSeconds,
                           double first, double last,
                           std::vector<int64_t> chunkLayers) {
    std::vector<int64_t> balanced =
        balanceLayers(layerSeconds, first, last, chunksTotal);
    auto busiest = [&](const std::vector<int64_t> &split) {
      return busiestStage(layerSeconds, first, last, split, p.pp);
    };
    if (p.chunks > 1 && !balanced.empty()) {
      // A stage runs its chunks in turn: improve both starting points for
      // the busiest stage and keep the better (ties: the slowest chunk).
      std::vector<int64_t> fromEven =
          refineForStages(layerSeconds, first, last, chunkLayers, p.pp);
      balanced = refineForStages(layerSeconds, first, last, balanced, p.pp);
      auto slowest = [&](const std::vector<int64_t> &split) {
        return slowestChunk(layerSeconds, first, last, split);
      };
      if (busiest(fromEven) < busiest(balanced) ||
          (busiest(fromEven) == busiest(balanced) &&
           slowest(fromEven) < slowest(balanced)))
        balanced = std::move(fromEven);
    }
    if (!balanced.empty() &&
        (p.chunks == 1 || busiest(balanced) < busiest(chunkLayers)))
      chunkLayers = std::move(balanced);
    if (!uniformRecompute) {
      // Stages that recompute run their layers slower: move layers off
      // them (each chunk priced under its stage's recomputation).
      std::vector<std::vector<double>> byChunk;
      for (int64_t c = 0; c < chunksTotal; ++c)
        byChunk.push_back(layerSecondsUnder(p.recomputeOf(c % p.pp)));
      chunkLayers =
          refineForChunkCosts(byChunk, first, last, chunkLayers, p.pp);
    }
    return chunkLayers;
  };
  if (p.balanceStages && p.pp > 1) {
    std::vector<double> layerSeconds = layerSecondsUnder(p.recomputeOf(0));
    double first = embedF.seconds * 3 + embedComm + embedCommBack;
    double last = head.first.seconds + head.second.seconds +
                  lossElem.seconds * 1.5 + headComm + headCommBack;
    // The split depends only on the stages, chunks, the extra work at
    // either end and the layers' seconds under each stage's recomputation:
    // a search balances the same ones for every ZeRO stage and schedule
    // (a fifth of its time), so the splits are kept by those inputs.
    std::vector<double> key = {double(p.pp), double(p.chunks), first, last};
    std::set<Recompute> modes;
    for (int64_t st = 0; st < p.pp; ++st) {
      key.push_back(static_cast<double>(p.recomputeOf(st)));
      modes.insert(p.recomputeOf(st));
    }
    for (Recompute r : modes) {
      std::vector<double> seconds =
          r == p.recomputeOf(0) ? layerSeconds : layerSecondsUnder(r);
      key.insert(key.end(), seconds.begin(), seconds.end());
    }
    thread_local absl::flat_hash_map<std::vector<double>,
                                     std::vector<int64_t>>
        splits;
    if (auto it = splits.find(key); it != splits.end()) {
      chunkLayers = it->second;
    } else {
      chunkLayers = balancedSplit(layerSeconds, first, last, chunkLayers);
      if (splits.size() >= 16384)
        splits.clear();
      splits.emplace(std::move(key), chunkLayers);
    }
  }
  std::vector<int64_t> chunkFirstLayer(chunksTotal, 0);
  for (int64_t i = 1; i < chunksTotal; ++i)
    chunkFirstLayer[i] = chunkFirstLayer[i - 1] + chunkLayers[i - 1];

  double layerParamsDense = 0, layerParamsMoe = 0;
  const double expertParams = double(m.experts) * m.mlpParameters();
  {
    TransformerModel one = m;
    one.layers = 1;
    one.vocab = 0;
    one.learnedPositions = false;
    one.experts = 0;
    layerParamsDense = one.parameters() - (m.gatedMlp ? h : 2 * h);
    one.experts = m.experts;
    one.moeEvery = 1;
    layerParamsMoe = m.experts ? one.parameters() - (m.gatedMlp ? h : 2 * h)
                               : layerParamsDense;
  }

  // --- The workload of every chunk ----------------------------------------
  StageWorkload work;
  work.microbatches = microbatches;
  work.optimizerStates = 2; // AdamW's two moments
  work.chunks.resize(chunksTotal);
  double sendBytes = tokens * h * e / (sp ? t : 1);
  std::vector<int64_t> layersPerStage(p.pp, 0);
  for (int64_t chunk = 0; chunk < chunksTotal; ++chunk) {
    ChunkWorkload &cw = work.chunks[chunk];
    Recompute stageRecompute = p.recomputeOf(chunk % p.pp);
    CollectiveTally &comm = cw.collectives;
    double params = 0;
    Work fwd, bwd, rec;
    double wgrad = 0;
    // The chunk's parameter tensors: ZeRO's lowering runs a collective
    // per tensor, so each pays the collective's latency.
    double tensors = 0;
    for (int64_t l = 0; l < chunkLayers[chunk]; ++l)
      tensors += m.parameterTensors(chunkFirstLayer[chunk] + l);
    if (chunk == 0)
      tensors += m.learnedPositions ? 2 : 1;
    if (chunk == chunksTotal - 1)
      tensors += (m.gatedMlp ? 1 : 2) + (!m.tiedEmbedding || p.pp > 1);
    // Dense and MoE layers of the chunk, for the tally of their
    // collectives (every layer of a kind runs the same ones).
    double layersOfKind[2] = {0, 0};
    for (int64_t l = 0; l < chunkLayers[chunk]; ++l) {
      bool moe = m.isMoeLayer(chunkFirstLayer[chunk] + l);
      const LayerCost &L = moe ? moeLayer : dense;
      Work again = L.recompute(stageRecompute);
      fwd += L.forward;
      bwd += L.backward;
      bwd.seconds += again.seconds;
      rec += again;
      wgrad += L.weightGradSeconds;
      layersOfKind[moe] += 1;
      // Expert weights are split over the expert-parallel group (the
      // router and the rest of the layer are not).
      params += moe ? layerParamsMoe - expertParams * (1.0 - 1.0 / p.ep)
                    : layerParamsDense;
      if (moe)
        cw.expertParams += expertParams / p.ep / t;
    }
    params /= t;
    for (bool moe : {false, true}) {
      if (layersOfKind[moe] == 0 || !price.counting)
        continue;
      const LayerCost &L = moe ? moeLayer : dense;
      CollectiveTally layerComm = L.forwardComm;
      layerComm += L.backwardComm;
      layerComm += L.recomputeComm(stageRecompute);
      comm += layerComm.scaled(double(microbatches) * layersOfKind[moe]);
    }
    if (chunk == 0) {
      fwd += embedF;
      fwd.seconds += embedComm;
      bwd += embedF * 2.0;
      bwd.seconds += embedCommBack;
      if (!vocabSplits && sp)
        price.count(comm, Collective::AllToAll, tokens * h * e / t, tpGroup,
                    2.0 * microbatches);
      else if (!vocabSplits)
        price.count(comm, Collective::AllGather, tokens * h * e, tpGroup,
                    double(microbatches));
      if (vocabSplits)
        price.count(comm,
                    sp ? Collective::ReduceScatter : Collective::AllReduce,
                    tokens * h * e, tpGroup, double(microbatches));
      if (vocabSplits && sp)
        price.count(comm, Collective::AllGather, tokens * h * e, tpGroup,
                    double(microbatches));
      params += V * h / t + (m.learnedPositions ? S * h : 0);
    }
    if (chunk == chunksTotal - 1) {
      fwd += head.first + lossElem;
      fwd.seconds += headComm;
      bwd += head.second + lossElem * 0.5;
      bwd.seconds += headCommBack;
      if (p.tp > 1 && vocabSplits)
        price.count(comm, Collective::AllReduce, tokens * 4.0, tpGroup,
                    3.0 * microbatches);
      if (p.tp > 1 && !vocabSplits) {
        price.count(comm,
                    sp ? Collective::ReduceScatter : Collective::AllReduce,
                    logitsBytes, tpGroup, double(microbatches));
        price.count(comm, Collective::AllGather, logitsBytes, tpGroup,
                    double(microbatches));
        if (sp)
          price.count(comm, Collective::AllToAll, tokens * h * e / t, tpGroup,
                      2.0 * microbatches);
      }
      if (sp && vocabSplits) {
        price.count(comm, Collective::AllGather, tokens * h * e, tpGroup,
                    double(microbatches));
        price.count(comm, Collective::ReduceScatter, tokens * h * e, tpGroup,
                    double(microbatches));
      }
      wgrad += head.second.seconds / 2;
      if (!m.tiedEmbedding || p.pp > 1)
        params += V * h / t;
    }
    cw.blocks = cw.gradientPieces = chunkLayers[chunk];
    cw.forwardSeconds = fwd.seconds;
    cw.backwardSeconds = bwd.seconds;
    cw.weightGradSeconds = wgrad;
    // The stage replica's FLOPs: one tensor-parallel rank's times tp.
    cw.forwardFlops = fwd.flops * p.tp;
    cw.backwardFlops = bwd.flops * p.tp; // recomputation not included
    cw.recomputedFlops = rec.flops * p.tp;
    cw.params = params;
    cw.paramTensors = tensors;
    cw.inBytes = chunk > 0 ? sendBytes : 0;
    cw.outBytes = chunk + 1 < chunksTotal ? sendBytes : 0;
    layersPerStage[chunk % p.pp] += chunkLayers[chunk];
  }

  // --- Activation memory of every stage -----------------------------------
  // The analytic model (Memory.h, Korthikanti et al.'s terms per layer and
  // the schedule's microbatches in flight); scoreStages adds the model
  // states from the chunks' parameters.
  for (int64_t st = 0; st < p.pp; ++st) {
    TransformerMemoryConfig mc;
    mc.seqLength = static_cast<int64_t>(s);
    mc.microBatch = p.microbatchSize;
    mc.hidden = m.hidden;
    mc.heads = m.heads;
    mc.ffn = m.mlp();
    mc.kvHeads = m.kv();
    mc.gatedMlp = m.gatedMlp;
    mc.dropout = m.dropout;
    mc.fusedAttention = p.fusedAttention;
    mc.layersPerStage = layersPerStage[st];
    mc.vocab = (st == 0 || st == p.pp - 1) ? m.vocab : 0;
    mc.tp = p.tp;
    // Under context parallelism the tensor-parallel partitioner splits the
    // sequence block over tp as well, with or without `sp` (the lowering's
    // arena is the same either way).
    mc.sequenceParallel = sp || (p.cp > 1 && p.tp > 1);
    mc.cp = p.cp;
    mc.pp = p.pp;
    mc.stage = st;
    mc.schedule = memorySchedule(p.schedule);
    mc.virtualStages = p.chunks;
    mc.experts = m.experts;
    mc.topK = m.topK;
    mc.capacityFactor = m.capacityFactor;
    for (int64_t c = 0; c < p.chunks; ++c) {
      int64_t chunk = c * p.pp + st, moe = 0;
      for (int64_t l = 0; l < chunkLayers[chunk]; ++l)
        moe += m.isMoeLayer(chunkFirstLayer[chunk] + l) ? 1 : 0;
      mc.moeLayers += moe;
      if (p.chunks > 1) {
        mc.chunkLayers.push_back(chunkLayers[chunk]);
        mc.chunkMoeLayers.push_back(moe);
      }
    }
    mc.microbatches = microbatches;
    mc.recompute = p.recomputeOf(st);
    mc.zeroStage = p.zero;
    // The ranks gradients are reduced and ZeRO shards over (the buckets'
    // and ZeRO's communicator, their buffers).
    mc.dp = p.zeroReplicas();
    mc.activationBytes = e;
    // What ZeRO gathers and reduces (the buffers and workspace read them);
    // the model states themselves scoreStages prices from the chunks'
    // parameters, replacing this model's state terms.
    mc.gatheredParamBytes = e;
    mc.gradBytes = gradE;
    CLEAVE_ASSIGN(memory, estimateTransformerMemory(mc));
    work.stageMemory.push_back(memory);
  }

  ScoreOptions options;
  options.simulateBelow = simulateBelow;
  options.taskScale = taskScale;
  options.scaledGraph = scaledGraph;
  options.graphOut = graphOut;
  options.timelineOut = timelineOut;
  absl::StatusOr<PlanPrediction> out =
      scoreStages(work, cluster, p, profile, options);
  if (out.ok() && out->simulated) {
    out->layerGemmSeconds = dense.gemm;
    out->layerElementwiseSeconds = dense.elementwise;
    out->layerTensorCommSeconds = dense.tensorComm;
  }
  return out;
}
} // namespace

} // namespace cleave::cost
