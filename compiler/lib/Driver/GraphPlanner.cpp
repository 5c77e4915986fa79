//===- GraphPlanner.cpp - The planner of graphs without transformers ------===//
//
// Every (tp, pp) split of the devices, microbatch size, schedule (and
// chunks per stage), ZeRO stage and recomputation, held to what `--fix`
// gave: the graph is imported and priced once per microbatch size and
// tensor-parallel degree (the intra-operator search chooses its sharding),
// and each candidate handed with its scorer on that graph to the one
// search both planners use (cost::PlanRanking): memory and bound first,
// then simulated in the order of the bounds until none can come within
// the tie of the K-th best.
//
//===----------------------------------------------------------------------===//

#include "Usage.h"
#include "cleave/Driver/GraphPlanner.h"

#include "cleave/Analysis/ModelSummary.h"
#include "cleave/Lowering/ActivationEstimate.h"
#include "cleave/Search/GraphPlanChoice.h"
#include "cleave/cost_model/PlanRanking.h"
#include "cleave/cost_model/Simulator.h"

#include "absl/status/status.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <set>
#include <sstream>

using namespace llvm;

namespace cleave::driver {

using cost::Knob;

absl::StatusOr<GraphPlanResult> planGraph(GraphPlanRequest r) {
  cost::ParallelConfig plan = r.plan;
  const cost::KnobSet &fixed = r.fixed;
  const cost::Cluster &cluster = r.cluster;
  ImportOptions options = r.options;
  for (Knob knob : {Knob::Cp, Knob::Ep})
    if (fixed.contains(knob) && (knob == Knob::Cp ? plan.cp : plan.ep) != 1)
      return usage("--fix " + Twine(cost::knobName(knob)) + "=" +
                      Twine(knob == Knob::Cp ? plan.cp : plan.ep) +
                      ": " + r.model + " has no transformer layers; such graphs "
                      "are planned with data, tensor and pipeline parallelism "
                      "of their residual blocks (dp, tp, pp, ZeRO, the "
                      "microbatch and the schedule are searched)");
  if (fixed.contains(Knob::Sp) && plan.sequenceParallel)
    return usage("--fix sp=on: sequence parallelism applies to "
                    "transformer layers, which " + r.model + " has none of");
  for (Knob knob : {Knob::OverlapTp, Knob::ZeroBucket, Knob::GradReduce})
    if (fixed.contains(knob))
      return usage("--fix " + Twine(cost::knobName(knob)) +
                      ": it prices Megatron-Core's transformer layers, which " +
                      r.model + " has none of");
  // Recomputation checkpoints whole residual blocks (cleave-recompute's
  // residual-blocks numbering), so it is full or none, per stage or for all.
  if (fixed.contains(Knob::Recompute)) {
    bool selective = plan.recompute == cost::Recompute::Selective;
    for (cost::Recompute mode : plan.stageRecompute)
      selective |= mode == cost::Recompute::Selective;
    if (selective)
      return usage("--fix recompute=selective: selective recomputation "
                      "recomputes attention cores, which " + r.model +
                      " has none of (no transformer layers); it recomputes "
                      "whole residual blocks: recompute=full or none");
    if (!trains(r.optimizer) &&
        (plan.recompute != cost::Recompute::None ||
         !plan.stageRecompute.empty()))
      return usage("--fix recompute: an inference plan (--optimizer "
                      "none) has no backward pass to recompute for");
  }
  // Chunks per stage interleave stages: two or more of them, over two or
  // more stages.
  bool interleave = fixed.contains(Knob::Vpp) && plan.chunks > 1;
  if (fixed.contains(Knob::Schedule) &&
      plan.schedule == cost::ScheduleKind::Interleaved &&
      fixed.contains(Knob::Vpp) && plan.chunks < 2)
    return usage("--fix schedule=interleaved,vpp=" + Twine(plan.chunks) +
                    ": the interleaved schedule runs two or more chunks per "
                    "stage");
  if (interleave && fixed.contains(Knob::Pp) && plan.pp < 2)
    return usage("--fix pp=" + Twine(plan.pp) + ",vpp=" +
                    Twine(plan.chunks) + ": chunks per stage interleave two "
                    "or more pipeline stages");
  int64_t devices = cluster.numDevices();
  // The (tp, pp) pairs to try, dp the rest of the devices: tensor
  // parallelism inside a node (its collectives follow every layer),
  // pipeline stages anywhere; a fixed knob is held.
  std::vector<std::pair<int64_t, int64_t>> degrees;
  for (int64_t tp = 1; tp <= devices; ++tp) {
    if (devices % tp || (fixed.contains(Knob::Tp) ? tp != plan.tp
                                           : tp > cluster.devicesPerNode))
      continue;
    for (int64_t pp = 1; pp <= devices / tp; ++pp) {
      if ((devices / tp) % pp || (fixed.contains(Knob::Pp) && pp != plan.pp) ||
          (fixed.contains(Knob::Dp) && devices / tp / pp != plan.dp) ||
          (interleave && pp < 2))
        continue;
      degrees.push_back({tp, pp});
    }
  }
  if (degrees.empty()) {
    std::string knobs;
    for (Knob k : {Knob::Dp, Knob::Tp, Knob::Pp})
      if (fixed.contains(k))
        knobs += (knobs.empty() ? "" : ",") +
                 std::string(cost::knobName(k)) + "=" +
                 std::to_string(k == Knob::Dp   ? plan.dp
                                : k == Knob::Tp ? plan.tp
                                                : plan.pp);
    if (interleave)
      knobs += std::string(knobs.empty() ? "" : ",") + "vpp=" +
               std::to_string(plan.chunks);
    return usage("--fix " + Twine(knobs) + ": " + r.model +
                    " has no transformer layers, so dp x tp x pp is every "
                    "device (" + Twine(devices) + ")" +
                    (interleave ? ", with two or more pipeline stages for "
                                  "the chunks"
                                : ""));
  }
  std::vector<cost::ScheduleKind> schedules = {plan.schedule};
  if (!fixed.contains(Knob::Schedule))
    schedules = {cost::ScheduleKind::OneFOneB,
                 cost::ScheduleKind::GPipe,
                 cost::ScheduleKind::Interleaved,
                 cost::ScheduleKind::ZeroBubbleH1};
  // Chunks per stage under the interleaved schedule: the fixed vpp, else
  // 2 to 4 where the blocks and microbatches allow (more chunks cut the
  // bubble by less each and send more).
  auto chunkChoices = [&](cost::ScheduleKind schedule, int64_t pp,
                          int64_t blocks, int64_t microbatches) {
    std::vector<int64_t> chunks;
    if (schedule != cost::ScheduleKind::Interleaved)
      return std::vector<int64_t>{1};
    if (fixed.contains(Knob::Vpp))
      return std::vector<int64_t>{plan.chunks};
    for (int64_t v : {2, 3, 4})
      if (pp * v <= blocks && microbatches % pp == 0)
        chunks.push_back(v);
    return chunks;
  };
  plan.cp = plan.ep = 1;
  plan.sequenceParallel = false;
  if (!fixed.contains(Knob::Recompute)) {
    plan.recompute = cost::Recompute::None;
    plan.stageRecompute.clear();
  }
  if (!fixed.contains(Knob::Vpp))
    plan.chunks = 1;
  if (!fixed.contains(Knob::Precision) && cluster.device.peakFlops(plan.precision) <= 0)
    plan.precision = cost::DType::Fp32;
  cost::Cluster capped = cluster;
  if (r.memoryLimit)
    capped.device.memoryBytes = *r.memoryLimit;

  // Microbatch sizes: divisors of a replica's samples for some dp, spread
  // geometrically from the whole replica batch down to one sample (the
  // largest divisor at or below each halving), so that a large batch still
  // tries sizes that fit; the graph is priced once per size.
  std::set<int64_t, std::greater<int64_t>> microbatches;
  for (auto [tp, pp] : degrees) {
    int64_t dp = devices / tp / pp;
    if (r.globalBatch % dp)
      continue;
    int64_t perReplica = r.globalBatch / dp;
    if (fixed.contains(Knob::Microbatch)) {
      if (perReplica % plan.microbatchSize == 0)
        microbatches.insert(plan.microbatchSize);
      continue;
    }
    for (int64_t bound = perReplica; bound >= 1; bound /= 2)
      for (int64_t b = bound; b >= 1; --b)
        if (perReplica % b == 0) {
          microbatches.insert(b);
          break;
        }
  }
  if (microbatches.empty()) {
    // The data-parallel degrees the (tp, pp) pairs leave: one, or a range.
    std::set<int64_t> dps;
    for (auto [tp, pp] : degrees)
      dps.insert(devices / tp / pp);
    std::string replicas = std::to_string(*dps.begin());
    if (dps.size() > 1)
      replicas += " to " + std::to_string(*dps.rbegin());
    if (fixed.contains(Knob::Microbatch) || r.fileBatch)
      return usage(
          (r.fileBatch ? r.model + " fixes its batch at " + Twine(*r.fileBatch) +
                           ", which"
                     : "--fix microbatch=" + Twine(plan.microbatchSize)) +
          " does not divide the samples of each replica (--global-batch " +
          Twine(r.globalBatch) + " over " + replicas +
          " data-parallel replicas)");
    return usage("--global-batch " + Twine(r.globalBatch) + " must be a "
                    "multiple of the " + replicas + " data-parallel replicas");
  }
  std::vector<int> zeros = {plan.zero};
  if (!fixed.contains(Knob::Zero))
    zeros = {0, 1, 2, 3};
  // Recomputation for pp stages: none; every stage's blocks; or, since
  // under 1F1B the first stages hold the most microbatches in flight, the
  // first k stages' only. Held as fixed (one choice) when fixed, none
  // without a backward pass.
  auto recomputeChoices = [&](int64_t pp) {
    using cost::Recompute;
    std::vector<std::pair<Recompute, std::vector<Recompute>>> choices = {
        {plan.recompute, plan.stageRecompute}};
    if (fixed.contains(Knob::Recompute) || !trains(r.optimizer))
      return choices;
    choices.push_back({Recompute::Full, {}});
    for (int64_t k = 1; k < pp; ++k) {
      std::vector<Recompute> stages(pp, Recompute::None);
      std::fill(stages.begin(), stages.begin() + k, Recompute::Full);
      choices.push_back({Recompute::Full, std::move(stages)});
    }
    return choices;
  };
  // Every (ZeRO stage, recomputation) pair for pp stages.
  auto zeroAndRecompute = [&](int64_t pp) {
    std::vector<std::pair<
        int, std::pair<cost::Recompute,
                       std::vector<cost::Recompute>>>>
        pairs;
    for (int zero : zeros)
      for (auto &choice : recomputeChoices(pp))
        pairs.push_back({zero, choice});
    return pairs;
  };

  std::string closest, importError;
  std::optional<cost::PlanPrediction> closestFit;
  // The one search (cost::PlanRanking): every candidate's memory and lower
  // bound first, then the fitting ones simulated in the order of their
  // bounds until none can come within the tie of the K-th best; within the
  // tie the plan preferGraphPlan prefers.
  cost::RankingOptions ranking;
  ranking.topK = r.topK;
  ranking.exhaustive = r.exhaustive;
  ranking.explain = r.explain;
  ranking.tie = search::kGraphPlanTie;
  ranking.prefer = search::preferGraphPlan;
  cost::PlanRanking ranked(ranking);
  // Every plan is simulated or bounded, so the plan is optimal within the
  // cost model up to the tensor-parallel shardings: the largest gap CBC
  // proved for one of them.
  double worstGap = 0;
  // Progress on the terminal (a search over a second: every tensor-
  // parallel degree and microbatch size runs the intra-operator search).
  auto started = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         started)
        .count();
  };
  bool showProgress = r.showProgress;
  std::set<int64_t> tpDegrees;
  for (auto [tp, pp] : degrees)
    tpDegrees.insert(tp);
  double pricings = double(microbatches.size() * tpDegrees.size()), priced = 0;
  std::string name;
  double parameters = 0;
  int64_t blocks = 0;
  // The graph priced per (microbatch, tp), and per pipeline degree why no
  // plan fits (for --explain).
  std::map<std::pair<int64_t, int64_t>,
           std::optional<search::GraphWork>>
      works;
  // Keyed by (tp, pp).
  std::map<std::pair<int64_t, int64_t>, std::string> whyNoneOfDegree;
  for (int64_t b : microbatches) {
    options.batch = b;
    // A r.model whose batch is fixed in the file imports at that batch only:
    // other sizes are skipped unless none works.
    mlir::OwningOpRef<mlir::ModuleOp> module;
    {
      mlir::ScopedDiagnosticHandler quiet(r.context, [&](mlir::Diagnostic &d) {
        if (importError.empty())
          importError = d.str();
        return mlir::success();
      });
      module = r.load(options);
    }
    if (!module)
      continue;
    cleave::ModelSummary summary = cleave::summarizeModel(*module);
    name = summary.model;
    parameters = double(summary.trainableParams);
    // What the backward reads, from the training step itself (a ReLU keeps
    // its output, a convolution its input, an addition nothing), in all
    // and by residual block for the pipeline stages.
    auto stash =
        lowering::stashedActivationBytesByBlock(*module, r.optimizer);
    // The same with each block recomputed in the backward pass: what the
    // lowering's cleave-recompute leaves stashed (inputs and outputs).
    mlir::FailureOr<std::vector<double>> recomputedStash = mlir::failure();
    if (trains(r.optimizer))
      recomputedStash = lowering::stashedActivationBytesByBlock(
          *module, r.optimizer, /*recompute=*/true);
    for (auto [tp, pp] : degrees) {
      int64_t dp = devices / tp / pp;
      if (r.globalBatch % dp || (r.globalBatch / dp) % b)
        continue;
      // Priced once per microbatch and tensor-parallel degree; with tp > 1
      // the intra-operator search chooses the sharding.
      auto &work = works[{b, tp}];
      if (!work) {
        auto measured = search::measureGraphWork(
            *module, b, capped, r.profile, tp, trains(r.optimizer));
        if (!measured.ok()) {
          if (tp == 1 || fixed.contains(Knob::Tp)) {
            return absl::FailedPreconditionError(
                r.model + ": " +
                (tp > 1 ? "tp=" + std::to_string(tp) + ": " : std::string()) +
                std::string(measured.status().message()));
          }
 whyNoneOfDegree.try_emplace(
              std::pair(tp, pp), "tp=" + std::to_string(tp) + ": " +
                      std::string(measured.status().message()));
          continue;
        }
        work = std::move(*measured);
        worstGap = std::max(worstGap, work->tpGap);
        priced += 1;
        if (showProgress && elapsed() > 1)
          errs() << formatv("\rsearching: {0,3:F0}%",
                            100 * priced / std::max(1.0, pricings));
        if (succeeded(stash) && stash->size() == work->pieces.size()) {
          work->activationBytes = 0;
          for (auto [piece, bytes] : llvm::zip(work->pieces, *stash)) {
            piece.activationBytes = bytes * piece.activationShare;
            work->activationBytes += piece.activationBytes;
          }
          if (succeeded(recomputedStash) &&
              recomputedStash->size() == work->pieces.size())
            for (auto [piece, bytes] :
                 llvm::zip(work->pieces, *recomputedStash))
              piece.recomputedActivationBytes = bytes * piece.activationShare;
        }
      }
      blocks = work->numBlocks();
      if (interleave && 2 * plan.chunks > blocks)
        return usage("--fix vpp=" + Twine(plan.chunks) + ": " + r.model +
                        " has " + Twine(blocks) + " residual block(s), too "
                        "few for two or more stages of " +
                        Twine(plan.chunks) + " chunks");
      if (blocks == 0 && fixed.contains(Knob::Recompute) &&
          (plan.recompute != cost::Recompute::None ||
           !plan.stageRecompute.empty()))
        return usage("--fix recompute: " + r.model + " has no residual "
                        "blocks to recompute");
      if (pp > 1 && pp > blocks) {
        if (fixed.contains(Knob::Pp))
          return usage("--fix pp=" + Twine(pp) + ": " + r.model + " has " +
                          Twine(blocks) + " residual block(s) to cut into "
                          "pipeline stages");
        continue;
      }
      if (pp > 1 && fixed.contains(Knob::Vpp) && pp * plan.chunks > blocks) {
        if (fixed.contains(Knob::Pp))
          return usage("--fix pp=" + Twine(pp) + ",vpp=" +
                          Twine(plan.chunks) + ": " + r.model + " has " +
                          Twine(blocks) + " residual block(s), too few for " +
                          Twine(pp) + " stages of " + Twine(plan.chunks) +
                          " chunks");
        continue;
      }
      // The schedules (and chunks per stage) to try: one stage has none
      // to choose.
      std::vector<std::pair<cost::ScheduleKind, int64_t>>
          scheduleChoices = {{schedules.front(), 1}};
      if (pp > 1) {
        scheduleChoices.clear();
        for (cost::ScheduleKind schedule : schedules)
          for (int64_t v :
               chunkChoices(schedule, pp, blocks, r.globalBatch / dp / b))
            scheduleChoices.push_back({schedule, v});
      }
      for (auto [schedule, chunks] : scheduleChoices) {
        for (auto [zero, recompute] : zeroAndRecompute(pp)) {
          // ZeRO shards over replicas: one replica has ZeRO 0 only, and a
          // ZeRO stage fixed needs some.
          if (dp == 1 && (zero != zeros.front() ||
                          (fixed.contains(Knob::Zero) && zero > 0)))
            continue;
          cost::ParallelConfig candidate = plan;
          candidate.dp = dp;
          candidate.tp = tp;
          candidate.pp = pp;
          candidate.microbatchSize = b;
          candidate.zero = dp > 1 ? zero : 0;
          candidate.schedule = schedule;
          candidate.chunks = chunks;
          if (!fixed.contains(Knob::Recompute)) {
            // Nothing to recompute, or its stash unknown: not a choice.
            if (recompute.first != cost::Recompute::None &&
                (blocks == 0 || work->pieces[1].recomputedActivationBytes < 0))
              continue;
            candidate.recompute = recompute.first;
            candidate.stageRecompute = recompute.second;
          }
          const search::GraphWork *pricedWork = &*work;
          absl::Status fits = ranked.consider(
              candidate, [&, pricedWork](const cost::ParallelConfig &p,
                                     double simulateBelow) {
                return search::scoreGraphPlan(*pricedWork, capped, p, r.optimizer,
                                              r.profile, nullptr, nullptr,
                                              simulateBelow);
              });
          if (!fits.ok()) {
            std::string why = cost::planKnobsString(candidate) + ": " +
                              std::string(fits.message());
            if (closest.empty())
              closest = why;
            // Out of memory: priced without the limit (its memory only,
            // unsimulated), the plan that comes closest to fitting is what
            // the error describes.
            if (absl::IsResourceExhausted(fits)) {
              cost::Cluster unlimited = capped;
              unlimited.device.memoryBytes = 0;
              auto whole = search::scoreGraphPlan(
                  *work, unlimited, candidate, r.optimizer, r.profile,
                  nullptr, nullptr, /*simulateBelow=*/-1);
              if (whole.ok() && (!closestFit || whole->peakMemoryBytes <
                                                    closestFit->peakMemoryBytes))
                closestFit = *whole;
            }
            whyNoneOfDegree.try_emplace(std::pair(tp, pp), why);
          }
        }
      }
    }
  }
  // Branch and bound over the plans that fit.
  cost::PlanSearchResult found = ranked.rank();
  if (showProgress && elapsed() > 1)
    errs() << "\r               \r";
  double searchSeconds = elapsed();
  if (ranked.candidates() == 0) {
    if (!importError.empty()) {
      return usage(r.model + ": " + importError);
    }
    // Every split of the devices left a replica's samples that the
    // microbatch does not divide, or more stages than residual blocks.
    return usage(
        (r.fileBatch ? r.model + " fixes its batch at " + Twine(*r.fileBatch)
                   : "--fix microbatch=" + Twine(plan.microbatchSize)) +
        ": no dp x tp x pp of the " + Twine(devices) + " devices leaves replicas "
        "whose samples (--global-batch " + Twine(r.globalBatch) + ") it divides "
        "(pipeline stages cut residual blocks, of which it has " +
        Twine(blocks) + ")");
  }
  if (found.best.empty() && closestFit) {
    return absl::FailedPreconditionError(
        "no plan of " + r.model +
        " fits: " + search::whyNoGraphPlanFits(*closestFit, capped, fixed));
  }
  if (found.best.empty()) {
    return absl::FailedPreconditionError(
        "no plan of " + r.model + " fits; the first tried, " +
        (closest.empty() ? ranked.otherReason() : closest));
  }
  // The preferred plan first, then the fastest others.
  std::vector<cost::PlanPrediction> plans = std::move(found.best);
  const cost::PlanPrediction *best = &plans.front();
  const std::optional<search::GraphWork> &bestWork =
      works[{best->plan.microbatchSize, best->plan.tp}];
  // Per (tp, pp) degree its best plan, for --explain.
  std::map<std::pair<int64_t, int64_t>, cost::PlanPrediction> bestOfDegree;
  for (const cost::PlanSearchResult::Shape &shape : found.shapes)
    if (shape.feasible)
      bestOfDegree.emplace(std::pair(shape.tp, shape.pp), shape.best);
  // The simulated step, for --trace and the artifact (one stage too: its
  // passes, gradient reduction and optimizer step).
  std::string trace;
  cost::TaskGraph graph;
  cost::Timeline timeline;
  if (search::scoreGraphPlan(*bestWork, capped, best->plan, r.optimizer,
                             r.profile, &graph, &timeline)
          .ok()) {
    std::ostringstream os;
    cost::writeChromeTrace(graph, timeline, os);
    trace = os.str();
  }

  GraphPlanResult result;
  result.name = name;
  result.parameters = parameters;
  result.blocks = blocks;
  result.devices = devices;
  result.capped = capped;
  result.plans = std::move(plans);
  result.bestWork = *bestWork;
  result.trace = std::move(trace);
  result.degrees = std::move(degrees);
  result.bestOfDegree = std::move(bestOfDegree);
  result.whyNoneOfDegree = std::move(whyNoneOfDegree);
  result.candidates = ranked.candidates();
  result.infeasible = ranked.infeasible();
  result.bounded = ranked.unsimulated();
  result.worstGap = worstGap;
  result.searchSeconds = searchSeconds;
  return result;
}

} // namespace cleave::driver
