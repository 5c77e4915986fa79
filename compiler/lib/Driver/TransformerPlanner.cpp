//===- TransformerPlanner.cpp - The planner of transformers ---------------===//

#include "cleave/Driver/TransformerPlanner.h"

#include "cleave/Driver/PlanArtifact.h"
#include "cleave/cost_model/Simulator.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

#include <algorithm>
#include <chrono>
#include <sstream>

namespace cleave::driver {

using cost::Knob;

namespace {

cost::Cluster capped(const TransformerPlanRequest &r) {
  cost::Cluster cluster = r.cluster;
  if (r.memoryLimit)
    cluster.device.memoryBytes = *r.memoryLimit;
  return cluster;
}

/// Where no plan fits: the smallest cluster of the same nodes (twice,
/// four times, ... the nodes, up to 4096 times or 3 s of searching) on
/// which the search finds one, as a sentence to append; empty when none
/// is found within those bounds.
std::string whatWouldFit(const TransformerPlanRequest &r,
                         cost::PlanSearchOptions so) {
  so.topK = 1;
  so.explain = false;
  so.progress = nullptr;
  so.timeLimit = 1.0;
  auto started = std::chrono::steady_clock::now();
  cost::Cluster bigger = r.cluster;
  for (int doubling = 1; doubling <= 12; ++doubling) {
    bigger.nodes *= 2;
    absl::StatusOr<cost::PlanSearchResult> found =
        cost::searchTransformerPlans(r.shape, bigger, r.globalBatch, so,
                                     r.profile);
    if (found.ok() && !found->best.empty())
      return absl::StrCat(
          "; the search finds a plan on ", bigger.numDevices(),
          " such devices (", bigger.nodes, " nodes of ",
          bigger.devicesPerNode, "): ",
          cost::planKnobsString(found->best.front().plan));
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                      started)
            .count() > 3.0)
      break;
  }
  return "";
}

} // namespace

absl::StatusOr<TransformerPlanResult>
planTransformer(const TransformerPlanRequest &r) {
  TransformerPlanResult result;
  // Every knob fixed: score exactly that plan. Otherwise search the rest.
  static const Knob kKnobs[] = {Knob::Dp,   Knob::Tp,         Knob::Pp,
                                Knob::Cp,   Knob::Ep,         Knob::Sp,
                                Knob::Zero, Knob::Microbatch, Knob::Schedule,
                                Knob::Recompute};
  bool allFixed = std::all_of(std::begin(kKnobs), std::end(kKnobs),
                              [&](Knob k) {
                                return r.fixed.contains(k) ||
                                       (k == Knob::Ep && r.shape.experts == 0);
                              });
  if (allFixed && !r.exhaustive) {
    absl::StatusOr<cost::PlanPrediction> predicted =
        cost::scoreTransformerPlan(r.shape, capped(r), r.plan, r.profile);
    // Attention is the search's unless fixed: the faster of the two that
    // fit (a recipe that names every degree runs fused attention where it
    // can, as Megatron-Core does).
    if (!r.fixed.contains(Knob::Attention) && r.shape.canFuseAttention()) {
      cost::ParallelConfig other = r.plan;
      other.fusedAttention = !r.plan.fusedAttention;
      absl::StatusOr<cost::PlanPrediction> alternative =
          cost::scoreTransformerPlan(r.shape, capped(r), other, r.profile);
      if (alternative.ok() &&
          (!predicted.ok() ||
           alternative->stepSeconds < predicted->stepSeconds))
        predicted = std::move(alternative);
    }
    if (!predicted.ok())
      return absl::FailedPreconditionError(
          absl::StrCat("infeasible plan ", cost::planKnobsString(r.plan), ": ",
                       predicted.status().message()));
    result.plans.push_back(*std::move(predicted));
    return result;
  }
  cost::PlanSearchOptions so;
  so.fixed = r.plan;
  so.fixedKnobs = r.fixed;
  so.memoryLimit = r.memoryLimit.value_or(0);
  so.timeLimit = r.timeLimit;
  so.topK = r.topK;
  so.exhaustive = r.exhaustive;
  so.explain = r.explain;
  if (r.lowerable)
    so.admissible = [](const cost::ParallelConfig &p) {
      return whyNotLowerable(p).empty();
    };
  so.progress = r.progress;
  absl::StatusOr<cost::PlanSearchResult> found = cost::searchTransformerPlans(
      r.shape, r.cluster, r.globalBatch, so, r.profile);
  if (!found.ok()) {
    if (found.status().code() == absl::StatusCode::kResourceExhausted)
      return absl::FailedPreconditionError(
          absl::StrCat(found.status().message(), whatWouldFit(r, so)));
    return absl::FailedPreconditionError(found.status().message());
  }
  result.search = *std::move(found);
  result.plans = result.search->best;
  return result;
}

std::vector<std::string> TransformerPlanResult::why() const {
  std::vector<std::string> why;
  if (search) {
    std::string verdict =
        search->timedOut
            ? absl::StrFormat("; stopped at the time limit, optimality gap at "
                              "most %.1f%%",
                              100 * search->optimalityGap)
            : std::string("; optimal within the cost model");
    why.push_back(absl::StrFormat(
        "the fastest of %d plans searched (%d infeasible, %d simulated)%s",
        search->candidates, search->infeasible, search->simulated, verdict));
  } else {
    why.push_back("every knob fixed by --fix: no search");
  }
  if (plans.size() > 1)
    why.push_back(absl::StrFormat(
        "the next best plan, %s, takes %.1f%% longer",
        cost::planKnobsString(plans[1].plan),
        100 * (plans[1].stepSeconds / best().stepSeconds - 1)));
  return why;
}

std::string transformerTrace(const TransformerPlanRequest &r,
                             const cost::ParallelConfig &plan) {
  cost::TaskGraph graph;
  cost::Timeline timeline;
  (void)cost::scoreTransformerPlan(r.shape, capped(r), plan, r.profile, &graph,
                                   &timeline);
  std::ostringstream trace;
  cost::writeChromeTrace(graph, timeline, trace);
  return trace.str();
}

} // namespace cleave::driver
