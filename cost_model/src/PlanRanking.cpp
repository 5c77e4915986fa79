//===- PlanRanking.cpp - The one search over scored plans -----------------===//

#include "cleave/cost_model/PlanRanking.h"

#include "cleave/cost_model/PlanKnobs.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace cleave::cost {

PlanRanking::PlanRanking(RankingOptions options)
    : options_(std::move(options)), start_(std::chrono::steady_clock::now()) {
  closest_.memoryBytes = HUGE_VAL;
}

double PlanRanking::elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                       start_)
      .count();
}

void PlanRanking::refuse(const ParallelConfig &plan,
                         const absl::Status &status) {
  ++candidates_;
  ++infeasible_;
  if (status.code() != absl::StatusCode::kResourceExhausted) {
    if (otherReason_.empty())
      otherReason_ = std::string(status.message());
    return;
  }
  // Refused for memory: keep the plan that came closest to fitting, overall
  // and per shape, for the error and --explain. scoreStages' message reads
  // "... needs 84.94 GB of ...".
  ++outOfMemory_;
  std::string message(status.message());
  double bytes = HUGE_VAL;
  if (auto at = message.find("needs "); at != std::string::npos)
    bytes = std::atof(message.c_str() + at + 6) * 1e9;
  if (bytes < closest_.memoryBytes)
    closest_ = {plan, message, bytes};
  auto &sc = shapeClosest_[{plan.tp, plan.pp, plan.cp}];
  if (sc.second.empty() || bytes < sc.first)
    sc = {bytes, planKnobsString(plan) + ": " + message};
}

absl::Status PlanRanking::consider(const ParallelConfig &plan,
                                   PlanScorer scorer) {
  absl::StatusOr<PlanPrediction> scored = scorer(plan, /*simulateBelow=*/-1);
  if (!scored.ok()) {
    refuse(plan, scored.status());
    return scored.status();
  }
  ++candidates_;
  fitting_.push_back({plan, scored->lowerBoundSeconds, std::move(scorer)});
  return absl::OkStatus();
}

PlanSearchResult PlanRanking::rank() {
  PlanSearchResult result;
  result.candidates = candidates_;
  result.infeasible = infeasible_;
  std::sort(fitting_.begin(), fitting_.end(),
            [](const Candidate &a, const Candidate &b) {
              return a.lowerBound < b.lowerBound;
            });
  int topK = std::max(1, options_.topK);
  // The K fastest so far, and the preferred one (in the order simulated).
  std::vector<PlanPrediction> &fastest = result.best;
  std::optional<PlanPrediction> preferred;
  auto kthBest = [&] {
    return static_cast<int>(fastest.size()) < topK
               ? HUGE_VAL
               : fastest.back().stepSeconds * (1 + options_.tie);
  };
  // Which candidates were simulated (here or for --explain), and the
  // simulations that failed (an error only the task graph shows).
  std::vector<bool> simulated(fitting_.size(), false);
  auto simulate = [&](size_t i) {
    const Candidate &c = fitting_[i];
    absl::StatusOr<PlanPrediction> scored = c.scorer(c.plan, HUGE_VAL);
    if (!simulated[i] && !scored.ok()) {
      ++infeasible_;
      if (otherReason_.empty())
        otherReason_ = planKnobsString(c.plan) + ": " +
                       std::string(scored.status().message());
    }
    simulated[i] = true;
    return scored;
  };
  size_t next = 0;
  for (; next < fitting_.size(); ++next) {
    const Candidate &c = fitting_[next];
    if (!options_.exhaustive && c.lowerBound >= kthBest())
      break; // every later plan's bound is at least this one's
    if (options_.timeLimit > 0 && elapsed() > options_.timeLimit) {
      result.timedOut = true;
      break;
    }
    absl::StatusOr<PlanPrediction> scored = simulate(next);
    ++result.simulated;
    if (!scored.ok())
      continue;
    if (options_.prefer &&
        (!preferred || options_.prefer(*scored, *preferred)))
      preferred = *scored;
    fastest.push_back(*std::move(scored));
    std::sort(fastest.begin(), fastest.end(),
              [](const PlanPrediction &a, const PlanPrediction &b) {
                return a.stepSeconds < b.stepSeconds;
              });
    if (static_cast<int>(fastest.size()) > topK)
      fastest.pop_back();
    if (options_.progress && next % 64 == 0)
      options_.progress(0.5 + 0.5 * double(next) / fitting_.size());
  }
  if (result.timedOut && next < fitting_.size() && !fastest.empty()) {
    double bound = fitting_[next].lowerBound;
    result.optimalityGap =
        std::max(0.0, (fastest.front().stepSeconds - bound) /
                          fastest.front().stepSeconds);
  }
  // The preferred plan first, then the fastest others.
  if (preferred) {
    std::string chosen = planKnobsString(preferred->plan);
    std::vector<PlanPrediction> plans = {*preferred};
    for (PlanPrediction &p : fastest)
      if (static_cast<int>(plans.size()) < topK &&
          planKnobsString(p.plan) != chosen)
        plans.push_back(std::move(p));
    fastest = std::move(plans);
  }
  if (options_.explain) {
    // The best plan of each shape: simulate the candidate with the smallest
    // bound per shape, then any other whose bound beats what it found.
    std::map<Shape, PlanSearchResult::Shape> shapes;
    for (size_t i = 0; i < fitting_.size(); ++i) {
      const Candidate &c = fitting_[i];
      auto key = std::make_tuple(c.plan.tp, c.plan.pp, c.plan.cp);
      auto &shape = shapes[key];
      if (shape.feasible && c.lowerBound >= shape.best.stepSeconds)
        continue;
      absl::StatusOr<PlanPrediction> scored = simulate(i);
      if (!scored.ok())
        continue;
      if (!shape.feasible || scored->stepSeconds < shape.best.stepSeconds)
        shape = {c.plan.tp, c.plan.pp, c.plan.cp, true, *scored, ""};
    }
    for (auto &[key, closestShape] : shapeClosest_)
      if (!shapes.count(key))
        shapes[key] = {std::get<0>(key), std::get<1>(key), std::get<2>(key),
                       false, PlanPrediction(), closestShape.second};
    for (auto &[key, shape] : shapes)
      result.shapes.push_back(shape);
  }
  unsimulated_ = std::count(simulated.begin(), simulated.end(), false);
  result.infeasible = infeasible_;
  result.seconds = elapsed();
  return result;
}

} // namespace cleave::cost
