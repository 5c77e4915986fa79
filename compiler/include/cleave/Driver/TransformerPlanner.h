//===- TransformerPlanner.h - The planner of transformers -------*- C++ -*-===//
//
// `cleave compile` for a model read as transformer layers: every knob
// fixed scores exactly that plan, otherwise the knob-level search
// (cost_model/PlanSearch.h) chooses the rest. The counterpart of
// GraphPlanner.h for graphs without transformer layers.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_DRIVER_TRANSFORMERPLANNER_H
#define CLEAVE_DRIVER_TRANSFORMERPLANNER_H

#include "cleave/Driver/PlanInputs.h"
#include "cleave/cost_model/PlanKnobs.h"
#include "cleave/cost_model/PlanSearch.h"
#include "cleave/cost_model/Profile.h"
#include "cleave/cost_model/TransformerPlan.h"

#include "absl/status/statusor.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace cleave::driver {

/// The common inputs; `exhaustive` simulates every valid combination, and
/// `explain` keeps every (tp, pp, cp) shape's best plan or why it has none.
struct TransformerPlanRequest : PlanInputs {
  cost::TransformerModel shape;
  /// Stop the search after this many seconds (0: no limit).
  double timeLimit = 0;
  /// Only plans the lowering to programs supports (`compile -o`).
  bool lowerable = false;
  /// The fraction of the search done, as it goes.
  std::function<void(double)> progress;
};

struct TransformerPlanResult {
  /// The best plan first, then the fastest other distinct plans.
  std::vector<cost::PlanPrediction> plans;
  /// The search that found them; unset when every knob was fixed.
  std::optional<cost::PlanSearchResult> search;
  const cost::PlanPrediction &best() const { return plans.front(); }
  /// Why this plan, for the artifact (`cleave inspect`): the search's
  /// verdict and the next best plan.
  std::vector<std::string> why() const;
};

/// Scores or searches. Fails (not InvalidArgument) when the fixed plan is
/// infeasible or no plan fits, with the reason.
absl::StatusOr<TransformerPlanResult>
planTransformer(const TransformerPlanRequest &request);

/// The simulated step of `plan` as a Chrome trace (Perfetto).
std::string transformerTrace(const TransformerPlanRequest &request,
                             const cost::ParallelConfig &plan);

} // namespace cleave::driver

#endif // CLEAVE_DRIVER_TRANSFORMERPLANNER_H
