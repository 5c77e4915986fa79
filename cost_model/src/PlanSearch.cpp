//===- PlanSearch.cpp - Search the knobs of a transformer plan ------------===//

#include "cleave/cost_model/PlanSearch.h"

#include "cleave/cost_model/PlanKnobs.h"
#include "cleave/cost_model/PlanRanking.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <tuple>
#include <cmath>
#include <numeric>
#include <optional>

namespace cleave::cost {

namespace {

std::vector<int64_t> divisorsOf(int64_t n, int64_t atMost) {
  std::vector<int64_t> out;
  for (int64_t d = 1; d <= std::min(n, atMost); ++d)
    if (n % d == 0)
      out.push_back(d);
  return out;
}

bool fixedKnob(const PlanSearchOptions &o, Knob knob) {
  return o.fixedKnobs.contains(knob);
}

/// The first fixed knob (or pair) that no plan can take, in words; empty
/// when each is possible on its own terms (the free knobs then failed).
std::string fixedKnobConflict(const TransformerModel &m,
                              const Cluster &cluster, int64_t globalBatch,
                              const PlanSearchOptions &o) {
  const ParallelConfig &f = o.fixed;
  int64_t devices = cluster.numDevices();
  auto fixed = [&](Knob k) { return fixedKnob(o, k); };
  if (fixed(Knob::Dp) && fixed(Knob::Microbatch) &&
      globalBatch % (f.dp * f.microbatchSize) != 0)
    return absl::StrCat("the global batch ", globalBatch,
                        " is not a multiple of dp x microbatch = ", f.dp,
                        " x ", f.microbatchSize, " = ",
                        f.dp * f.microbatchSize);
  if (fixed(Knob::Dp) && globalBatch % f.dp != 0)
    return absl::StrCat("dp=", f.dp, " does not divide the global batch ",
                        globalBatch);
  if (fixed(Knob::Microbatch) && globalBatch % f.microbatchSize != 0)
    return absl::StrCat("microbatch=", f.microbatchSize,
                        " does not divide the global batch ", globalBatch);
  for (auto [knob, degree] : {std::pair{Knob::Dp, f.dp}, {Knob::Tp, f.tp},
                              {Knob::Pp, f.pp}, {Knob::Cp, f.cp}})
    if (fixed(knob) && devices % degree != 0)
      return absl::StrCat(std::string(knobName(knob)), "=", degree,
                          " does not divide the ", devices, " devices");
  int64_t product = 1;
  std::string named;
  for (auto [knob, degree] : {std::pair{Knob::Dp, f.dp}, {Knob::Tp, f.tp},
                              {Knob::Pp, f.pp}, {Knob::Cp, f.cp}})
    if (fixed(knob)) {
      product *= degree;
      absl::StrAppend(&named, named.empty() ? "" : " x ",
                      std::string(knobName(knob)), "=",
                      degree);
    }
  if (devices % product != 0 ||
      (fixed(Knob::Dp) && fixed(Knob::Tp) && fixed(Knob::Pp) &&
       fixed(Knob::Cp) && product != devices))
    return absl::StrCat(named, " = ", product, " does not ",
                        product > devices ? "fit in" : "divide", " the ",
                        devices, " devices");
  if (fixed(Knob::Tp) &&
      (m.heads % f.tp || m.kv() % f.tp || m.mlp() % f.tp))
    return absl::StrCat("tp=", f.tp, " does not divide the ", m.heads,
                        " heads, ", m.kv(), " key/value heads and MLP width ",
                        m.mlp());
  if (fixed(Knob::Tp) && f.tp > cluster.devicesPerNode)
    return absl::StrCat("tp=", f.tp, " does not fit in a node of ",
                        cluster.devicesPerNode,
                        " devices (tensor parallelism stays on NVLink)");
  if (fixed(Knob::Pp) && f.pp > m.layers)
    return absl::StrCat("pp=", f.pp, " is more stages than the ", m.layers,
                        " layers");
  if (fixed(Knob::Cp) && f.cp > 1 && m.seq % f.cp != 0)
    return absl::StrCat("cp=", f.cp, " does not divide the sequence of ",
                        m.seq);
  return "";
}

} // namespace

absl::StatusOr<PlanSearchResult>
searchTransformerPlans(const TransformerModel &m, const Cluster &cluster,
                       int64_t globalBatch, const PlanSearchOptions &o,
                       const Profile *profile) {
  const ParallelConfig &f = o.fixed;
  int64_t devices = cluster.numDevices();
  double memoryLimit = o.memoryLimit > 0 ? o.memoryLimit
                                         : cluster.device.memoryBytes;
  Cluster capped = cluster;
  capped.device.memoryBytes = memoryLimit;

  // --- The space -----------------------------------------------------------
  // Tensor parallelism stays inside a node's NVLink domain; pipeline stages
  // and data-parallel replicas span nodes.
  std::vector<int64_t> tps, cps, pps, mbss, vpps = {1};
  for (int64_t t : divisorsOf(cluster.devicesPerNode, cluster.devicesPerNode))
    if (m.heads % t == 0 && m.kv() % t == 0 && m.mlp() % t == 0)
      tps.push_back(t);
  if (fixedKnob(o, Knob::Tp))
    tps = {f.tp};
  for (int64_t c : {1, 2, 4, 8})
    if (m.seq % c == 0 && (c == 1 || m.seq / c >= 1024))
      cps.push_back(c);
  if (fixedKnob(o, Knob::Cp))
    cps = {f.cp};
  for (int64_t b : {1, 2, 4, 8, 16, 32})
    mbss.push_back(b);
  if (fixedKnob(o, Knob::Microbatch))
    mbss = {f.microbatchSize};
  std::vector<ScheduleKind> schedules = {ScheduleKind::OneFOneB,
                                         ScheduleKind::ZeroBubbleH1,
                                         ScheduleKind::Interleaved,
                                         ScheduleKind::GPipe};
  if (fixedKnob(o, Knob::Schedule) || fixedKnob(o, Knob::Vpp))
    schedules = {f.schedule};
  std::vector<Recompute> recomputes = {Recompute::None, Recompute::Selective,
                                       Recompute::Full};
  if (fixedKnob(o, Knob::Recompute))
    recomputes = {f.recompute};
  std::vector<int> zeros = {0, 1, 2, 3};
  if (fixedKnob(o, Knob::Zero))
    zeros = {f.zero};
  // Fused attention wherever the model's attention fuses (it is seldom
  // slower, and holds no score matrices), unfused where it does not or is
  // cheaper: both are priced.
  std::vector<bool> attentions = {false};
  if (fixedKnob(o, Knob::Attention))
    attentions = {f.fusedAttention};
  else if (m.canFuseAttention())
    attentions = {true, false};
  // Unfused attention is priced only where it may win: for each tensor-
  // and context-parallel degree, microbatch and sequence parallelism, a
  // one-stage probe (no ZeRO, no recomputation, memory unbounded) prices
  // both; where fused is no slower there, it is no slower in any plan of
  // those degrees (the attention's share of each layer is the same, and
  // fused holds less), and the unfused plans are not scored.
  std::map<std::tuple<int64_t, int64_t, int64_t, bool, int64_t>, bool>
      unfusedMayWin;
  Cluster unbounded = capped;
  unbounded.device.memoryBytes = HUGE_VAL;
  auto unfusedWorthPricing = [&](const ParallelConfig &plan) {
    if (o.exhaustive)
      return true;
    auto key = std::make_tuple(plan.tp, plan.cp, plan.microbatchSize,
                               plan.sequenceParallel, plan.ep);
    auto known = unfusedMayWin.find(key);
    if (known != unfusedMayWin.end())
      return known->second;
    ParallelConfig probe = plan;
    probe.dp = plan.dp * plan.pp;
    probe.pp = 1;
    probe.chunks = 1;
    probe.schedule = ScheduleKind::OneFOneB;
    probe.zero = 0;
    probe.recompute = Recompute::None;
    probe.stageRecompute.clear();
    probe.globalBatch = probe.dp * probe.microbatchSize;
    probe.fusedAttention = true;
    auto fused = scoreTransformerPlan(m, unbounded, probe, profile);
    probe.fusedAttention = false;
    auto unfused = scoreTransformerPlan(m, unbounded, probe, profile);
    bool mayWin = !fused.ok() ||
                  (unfused.ok() && unfused->stepSeconds < fused->stepSeconds);
    unfusedMayWin[key] = mayWin;
    return mayWin;
  };
  // (attention, ZeRO stage) pairs, tried for every other combination.
  std::vector<std::pair<bool, int>> variants;
  for (bool fused : attentions)
    for (int z : zeros)
      variants.push_back({fused, z});
  DType precision = fixedKnob(o, Knob::Precision)
                        ? f.precision
                        : (cluster.device.peakBf16 > 0 ? DType::Bf16
                                                       : DType::Fp32);

  // --- Enumerate, checking memory without simulating ------------------------
  RankingOptions ranking;
  ranking.topK = o.topK;
  ranking.exhaustive = o.exhaustive;
  ranking.timeLimit = o.timeLimit;
  ranking.explain = o.explain;
  ranking.progress = o.progress;
  PlanRanking plans(ranking);
  PlanScorer score = [&](const ParallelConfig &plan, double simulateBelow) {
    return scoreTransformerPlan(m, capped, plan, profile, nullptr, nullptr,
                                simulateBelow);
  };
  auto consider = [&](const ParallelConfig &plan) -> bool {
    if (o.admissible && !o.admissible(plan))
      return false;
    return plans.consider(plan, score).ok();
  };

  // Whether `plan` with recomputation `r` fits, unrecorded: the plans it
  // stands for are counted when scored.
  auto fitsWith = [&](ParallelConfig plan, Recompute r) {
    plan.recompute = r;
    plan.stageRecompute.clear();
    if (o.admissible && !o.admissible(plan))
      return true; // let consider() refuse it as it would
    auto scored = scoreTransformerPlan(m, capped, plan, profile, nullptr,
                                       nullptr, /*simulateBelow=*/-1);
    if (scored.ok() ||
        scored.status().code() != absl::StatusCode::kResourceExhausted)
      return true;
    plans.refuse(plan, scored.status());
    return false;
  };

  // Recomputation per stage: under 1F1B the early stages keep more
  // microbatches' activations than the later ones, so the first k stages
  // may recompute (as the lightest uniform mode that fits, `fit`, or fully)
  // while the others recompute less than `fit`. Memory falls as k grows:
  // the smallest k that fits for each pair of modes (every k when
  // exhaustive), then three levels (full, selective, none). Where no
  // uniform mode fits, none of these does either.
  auto considerPerStage = [&](ParallelConfig plan,
                              std::optional<Recompute> fit) {
    if (!fit || *fit == Recompute::None)
      return;
    // (first k stages, the rest): the rest lighter than `fit`.
    std::vector<std::pair<Recompute, Recompute>> pairs;
    for (Recompute light : {Recompute::None, Recompute::Selective})
      if (light < *fit)
        pairs.push_back({*fit, light});
    if (*fit == Recompute::Selective)
      pairs.push_back({Recompute::Full, Recompute::None});
    // Full on the first k1 stages, selective on the next k2, none on the
    // rest (k2 = 0: two levels).
    auto withLevels = [&](Recompute heavy, int64_t k1, Recompute mid,
                          int64_t k2, Recompute light) {
      plan.recompute = heavy;
      plan.stageRecompute.assign(plan.pp, light);
      std::fill(plan.stageRecompute.begin(), plan.stageRecompute.begin() + k1,
                heavy);
      std::fill(plan.stageRecompute.begin() + k1,
                plan.stageRecompute.begin() + k1 + k2, mid);
      return consider(plan);
    };
    for (auto [heavy, light] : pairs) {
      auto withFirst = [&](int64_t k) {
        return withLevels(heavy, k, light, 0, light);
      };
      if (o.exhaustive) {
        for (int64_t k = 1; k < plan.pp; ++k)
          withFirst(k);
        continue;
      }
      // hi: uniform `heavy`, which fits (it keeps no more than `fit`).
      int64_t lo = 1, hi = plan.pp;
      while (lo < hi) {
        int64_t mid = (lo + hi) / 2;
        if (withFirst(mid))
          hi = mid;
        else
          lo = mid + 1;
      }
    }
    // Three levels (none, selective and full per stage). Exhaustive: full
    // on the first k1 stages, selective on the next k2, none on the rest,
    // for every k1 and k2.
    if (o.exhaustive) {
      for (int64_t k1 = 1; k1 + 1 < plan.pp; ++k1)
        for (int64_t k2 = 1; k1 + k2 < plan.pp; ++k2)
          withLevels(Recompute::Full, k1, Recompute::Selective, k2,
                     Recompute::None);
      return;
    }
    // Otherwise each stage gets the lightest mode that fits it, read off
    // the uniform plans' memory per stage (the first stages, with the most
    // microbatches in flight, need the most), no lighter than a later
    // stage's; where moving layers off the recomputing stages overfills
    // another, that stage goes one level heavier, until the plan fits.
    // A few scorings where trying every (k1, k2) took a hundred.
    Cluster uncapped = capped;
    uncapped.device.memoryBytes = HUGE_VAL;
    auto stageMemory = [&](const ParallelConfig &q) {
      std::vector<double> bytes;
      auto scored = scoreTransformerPlan(m, uncapped, q, profile, nullptr,
                                         nullptr, /*simulateBelow=*/-1);
      if (scored.ok())
        for (const MemoryBreakdown &mb : scored->stageMemory)
          bytes.push_back(mb.total);
      return bytes;
    };
    const Recompute byWeight[] = {Recompute::None, Recompute::Selective,
                                  Recompute::Full};
    std::vector<Recompute> modes(plan.pp, Recompute::Full);
    std::vector<bool> placed(plan.pp, false);
    for (Recompute r : byWeight) {
      ParallelConfig q = plan;
      q.recompute = r;
      q.stageRecompute.clear();
      std::vector<double> bytes = stageMemory(q);
      if (int64_t(bytes.size()) != plan.pp)
        return;
      for (int64_t st = 0; st < plan.pp; ++st)
        if (!placed[st] && bytes[st] <= memoryLimit) {
          modes[st] = r;
          placed[st] = true;
        }
    }
    for (int64_t attempt = 0; attempt < plan.pp; ++attempt) {
      for (int64_t st = plan.pp - 2; st >= 0; --st)
        modes[st] = std::max(modes[st], modes[st + 1]);
      std::set<Recompute> distinct(modes.begin(), modes.end());
      if (distinct.size() < 3)
        return; // one or two levels: tried above
      plan.recompute = modes.front();
      plan.stageRecompute = modes;
      if (consider(plan))
        return;
      std::vector<double> bytes = stageMemory(plan);
      if (int64_t(bytes.size()) != plan.pp)
        return;
      bool heavier = false;
      for (int64_t st = 0; st < plan.pp; ++st)
        if (bytes[st] > memoryLimit && modes[st] != Recompute::Full) {
          modes[st] = modes[st] == Recompute::None ? Recompute::Selective
                                                   : Recompute::Full;
          heavier = true;
        }
      if (!heavier)
        return;
    }
  };

  for (int64_t tp : tps)
    for (int64_t cp : cps) {
      if (devices % (tp * cp))
        continue;
      std::vector<int64_t> ppOptions =
          fixedKnob(o, Knob::Pp) ? std::vector<int64_t>{f.pp}
                             : divisorsOf(devices / (tp * cp), m.layers);
      for (int64_t pp : ppOptions) {
        if (devices % (tp * cp * pp))
          continue;
        int64_t dp = devices / (tp * cp * pp);
        if (fixedKnob(o, Knob::Dp) && f.dp != dp)
          continue;
        std::vector<int64_t> eps = {1};
        if (m.experts > 0 && !fixedKnob(o, Knob::Ep))
          eps = divisorsOf(std::gcd(m.experts, dp), dp);
        if (fixedKnob(o, Knob::Ep))
          eps = {f.ep};
        // Sequence parallelism splits the tokens over tp: only where tp
        // divides them (ViT's patches plus a class token often do not).
        bool spPossible = tp > 1 && m.seq % tp == 0;
        std::vector<bool> sps = {spPossible};
        if (fixedKnob(o, Knob::Sp))
          sps = {f.sequenceParallel};
        else if (o.exhaustive && spPossible)
          sps = {false, true};
        for (int64_t ep : eps)
          for (bool sp : sps) {
            // (schedule, chunks) of which no plan fitted at a smaller
            // microbatch: a larger one holds more (activations, logits and
            // buffers grow with it, weights and states do not shrink), so
            // it fits no better and is not scored.
            std::set<std::pair<ScheduleKind, int64_t>> outgrown;
            for (int64_t mbs : mbss) {
              if (globalBatch % (dp * mbs))
                continue;
              int64_t microbatches = globalBatch / (dp * mbs);
              for (ScheduleKind schedule : schedules) {
                if (pp == 1 && schedule != ScheduleKind::OneFOneB &&
                    !fixedKnob(o, Knob::Schedule))
                  continue; // one stage: every schedule is the same
                std::vector<int64_t> chunkOptions = {1};
                if (schedule == ScheduleKind::Interleaved) {
                  chunkOptions.clear();
                  if (fixedKnob(o, Knob::Vpp))
                    chunkOptions = {f.chunks};
                  else if (pp > 1) // one stage has nothing to interleave
                    // Any layer count: uneven chunks are balanced by
                    // the scoring (and cut so by the lowering), as long
                    // as every chunk holds a layer.
                    for (int64_t v : {2, 3, 4, 6, 8})
                      if (pp * v <= m.layers && microbatches % pp == 0)
                        chunkOptions.push_back(v);
                }
                for (int64_t chunks : chunkOptions) {
                  if (!o.exhaustive && outgrown.count({schedule, chunks}))
                    continue;
                  int64_t feasibleBefore = plans.fitting(),
                          triedBefore = plans.candidates(),
                          outOfMemoryBefore = plans.outOfMemory();
                  ParallelConfig plan = f;
                  plan.dp = dp;
                  plan.tp = tp;
                  plan.pp = pp;
                  plan.cp = cp;
                  plan.ep = ep;
                  plan.sequenceParallel = sp;
                  plan.microbatchSize = mbs;
                  plan.globalBatch = globalBatch;
                  plan.schedule = schedule;
                  plan.chunks = chunks;
                  plan.precision = precision;
                  // Recomputation only trades time for memory: for each
                  // ZeRO stage keep the least recomputation that fits (all of
                  // them when exhaustive). ZeRO stages are all tried: ZeRO-1
                  // and 2 also shrink the optimizer step, ZeRO-3 adds
                  // gathers.
                  for (auto [fused, z] : variants) {
                    if (!fused && attentions.size() > 1 &&
                        !unfusedWorthPricing(plan))
                      continue;
                    plan.fusedAttention = fused;
                    if (z > 0 && dp * cp == 1 && !fixedKnob(o, Knob::Zero))
                      continue;
                    plan.zero = z;
                    std::optional<Recompute> fit;
                    // Recomputing more holds less: where the heaviest mode
                    // does not fit, no lighter one does (nor a mix), so
                    // one probe stands for all of them.
                    if (!o.exhaustive && recomputes.size() > 1 &&
                        !fitsWith(plan, recomputes.back())) {
                      continue;
                    }
                    for (Recompute r : recomputes) {
                      plan.recompute = r;
                      if (consider(plan)) {
                        fit = fit ? fit : r;
                        if (!o.exhaustive)
                          break;
                      }
                    }
                    if (pp > 1 && !fixedKnob(o, Knob::Recompute))
                      considerPerStage(plan, fit);
                  }
                  int64_t tried = plans.candidates() - triedBefore;
                  if (plans.fitting() == feasibleBefore && tried > 0 &&
                      plans.outOfMemory() - outOfMemoryBefore == tried)
                    outgrown.insert({schedule, chunks});
                }
              }
            }
          }
        if (o.progress)
          o.progress(0.5 * plans.elapsed() /
                     std::max(1e-9, plans.elapsed() + 1));
      }
    }

  if (plans.fitting() == 0) {
    const RejectedPlan &closest = plans.closest();
    if (closest.memoryBytes < HUGE_VAL)
      return absl::ResourceExhaustedError(absl::StrCat(
          "no plan fits in ",
          absl::StrFormat("%.1f", memoryLimit / 1e9), " GB per device; the "
          "closest, ",
          planKnobsString(closest.plan), ", fails with: ", closest.reason,
          ". More devices, a smaller global batch, or a larger memory limit "
          "would help"));
    if (plans.candidates() == 0) {
      if (std::string why = fixedKnobConflict(m, cluster, globalBatch, o);
          !why.empty())
        return absl::InvalidArgumentError(why);
      return absl::InvalidArgumentError(absl::StrCat(
          "no combination of the free knobs is valid with the fixed ones (",
          planKnobsString(f), "): tp x pp x cp must divide the ", devices,
          " devices, tp must divide the heads and MLP width and fit in a node "
          "of ",
          cluster.devicesPerNode, ", and the global batch must be a multiple "
          "of dp x microbatch"));
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "no plan is valid for this model and cluster",
        plans.otherReason().empty() ? "" : ": ", plans.otherReason()));
  }

  // --- Branch and bound over the feasible plans ----------------------------
  return plans.rank();
}

} // namespace cleave::cost
