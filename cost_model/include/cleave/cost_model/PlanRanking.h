//===- PlanRanking.h - The one search over scored plans ---------*- C++ -*-===//
//
// Both planners search the same way: each enumerates its space (the
// transformer's knobs, PlanSearch.h; a graph's degrees, microbatches and
// residual-block stages, GraphPlanner) and hands every plan with its
// scorer to a PlanRanking. The ranking scores it without simulating
// (scoreStages' memory check and lower bound), keeps the plans that fit
// and the one that came closest to fitting, then simulates the fitting
// plans in the order of their bounds until no bound can beat the K-th
// best: branch and bound over one scoring, whatever produced the workload.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_COST_MODEL_PLANRANKING_H
#define CLEAVE_COST_MODEL_PLANRANKING_H

#include "cleave/cost_model/PlanSearch.h"
#include "cleave/cost_model/TransformerPlan.h"

#include "absl/status/statusor.h"

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace cleave::cost {

/// Scores one plan of a planner's model (scoreTransformerPlan, or
/// scoreGraphPlan on the graph priced for the plan's tp and microbatch):
/// unsimulated where its lower bound exceeds `simulateBelow` (negative:
/// the memory check and the bound only).
using PlanScorer = std::function<absl::StatusOr<PlanPrediction>(
    const ParallelConfig &plan, double simulateBelow)>;

struct RankingOptions {
  /// How many plans to return.
  int topK = 1;
  /// Simulate every plan that fits.
  bool exhaustive = false;
  /// Stop simulating after this many seconds from the ranking's start (0:
  /// no limit); the result then carries the gap it could still prove.
  double timeLimit = 0;
  /// Also the best plan of every (tp, pp, cp) shape, for --explain.
  bool explain = false;
  /// Plans within this fraction of the K-th best are simulated too (a
  /// planner whose preference looks past small differences: `prefer`).
  double tie = 0;
  /// Which of two simulated plans to take; the faster by default.
  std::function<bool(const PlanPrediction &, const PlanPrediction &)> prefer;
  /// Called now and then with the fraction of the simulations done (from
  /// one half: the enumeration reports the first).
  std::function<void(double)> progress;
};

class PlanRanking {
public:
  explicit PlanRanking(RankingOptions options);

  /// The memory pass: scores `plan` unsimulated. One that fits becomes a
  /// candidate (OK); one that does not is counted, the closest to fitting
  /// kept, overall and per shape (its status returned).
  absl::Status consider(const ParallelConfig &plan, PlanScorer scorer);
  /// Counts a plan refused outside `consider` (a probe of the heaviest
  /// recomputation standing for lighter ones).
  void refuse(const ParallelConfig &plan, const absl::Status &status);

  int64_t candidates() const { return candidates_; }
  int64_t infeasible() const { return infeasible_; }
  int64_t outOfMemory() const { return outOfMemory_; }
  int64_t fitting() const { return static_cast<int64_t>(fitting_.size()); }
  /// The plan refused for memory that came closest to fitting (memoryBytes
  /// HUGE_VAL: none was), and the first other reason a plan was refused.
  const RejectedPlan &closest() const { return closest_; }
  const std::string &otherReason() const { return otherReason_; }
  double elapsed() const;

  /// Branch and bound over the fitting plans: `best` the K fastest (the
  /// preferred first), `simulated`, the gap where the time limit cut it,
  /// and with `explain` the best plan, or why none fits, of every shape. A
  /// plan whose simulation fails (an error only its task graph shows)
  /// counts as infeasible, its reason `otherReason` if none came before.
  /// `prefer` need not be transitive (a tie is not): the preferred plan is
  /// taken in the order simulated, the bounds' order.
  PlanSearchResult rank();
  /// After rank(): fitting plans never simulated (ruled out by the bound,
  /// or left by the time limit).
  int64_t unsimulated() const { return unsimulated_; }

private:
  struct Candidate {
    ParallelConfig plan;
    double lowerBound;
    PlanScorer scorer;
  };
  using Shape = std::tuple<int64_t, int64_t, int64_t>;

  RankingOptions options_;
  std::chrono::steady_clock::time_point start_;
  std::vector<Candidate> fitting_;
  int64_t candidates_ = 0, infeasible_ = 0, outOfMemory_ = 0;
  int64_t unsimulated_ = 0;
  RejectedPlan closest_;
  std::string otherReason_;
  /// Per shape: the memory error of the plan closest to fitting.
  std::map<Shape, std::pair<double, std::string>> shapeClosest_;
};

} // namespace cleave::cost

#endif // CLEAVE_COST_MODEL_PLANRANKING_H
