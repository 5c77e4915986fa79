//===- PlanSearch.h - Search the knobs of a transformer plan ----*- C++ -*-===//
//
// The inter-operator half of the planner at the granularity of knobs: over
// data, tensor, pipeline, context and expert degrees, microbatch size,
// schedule (with interleaving chunks), recomputation, ZeRO stage and
// sequence parallelism, find the plans with the shortest simulated step that
// fit in memory. Knobs the user fixes are not searched.
//
// Exact within the cost model by branch and bound: a plan is simulated only
// if its lower bound (the busiest stage's compute, which no schedule beats)
// is below the best step found so far, so the answer equals exhaustive
// enumeration while simulating a small fraction of the space. Dominated
// choices are not enumerated: sequence parallelism always helps a
// tensor-parallel plan, and for each ZeRO stage only the least
// recomputation that fits memory is kept (recomputation trades time for
// memory and nothing else), unless `exhaustive` asks for all of them.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_COST_MODEL_PLANSEARCH_H
#define CLEAVE_COST_MODEL_PLANSEARCH_H

#include "cleave/cost_model/PlanKnobs.h"
#include "cleave/cost_model/TransformerPlan.h"

#include <functional>
#include <set>
#include <string>
#include <vector>

namespace cleave::cost {

struct PlanSearchOptions {
  /// Values of the fixed knobs, and which they are (PlanKnobs.h).
  ParallelConfig fixed;
  KnobSet fixedKnobs;
  /// Per-device memory cap in bytes (0: the device's capacity).
  double memoryLimit = 0;
  /// Stop after this many seconds (0: no limit); the result then carries
  /// the bound it could still prove.
  double timeLimit = 0;
  /// How many distinct plans to return.
  int topK = 1;
  /// Enumerate every combination, dominated ones included (small cases).
  bool exhaustive = false;
  /// Also find the best plan of every (tp, pp, cp) shape, for --explain.
  bool explain = false;
  /// Called now and then with the fraction of candidates done.
  std::function<void(double)> progress;
  /// When set, only plans it accepts are candidates (`compile -o` keeps to
  /// what the lowering supports: cp and ep without tensor parallelism).
  std::function<bool(const ParallelConfig &)> admissible;
};

struct RejectedPlan {
  ParallelConfig plan;
  std::string reason;
  /// For memory: the bytes the fullest device would need.
  double memoryBytes = 0;
};

struct PlanSearchResult {
  /// The best plans, fastest first.
  std::vector<PlanPrediction> best;
  int64_t candidates = 0;  ///< combinations considered
  int64_t simulated = 0;   ///< of which simulated
  int64_t infeasible = 0;  ///< rejected as infeasible
  double seconds = 0;
  /// Relative bound on how far the best plan may be from the optimum of
  /// the cost model: 0 when the search completed.
  double optimalityGap = 0;
  bool timedOut = false;
  /// With `explain`: for each (tp, pp, cp) shape, its best plan, or why
  /// none of its plans is valid (the closest one's memory error).
  struct Shape {
    int64_t tp = 1, pp = 1, cp = 1;
    bool feasible = false;
    PlanPrediction best;
    std::string reason;
  };
  std::vector<Shape> shapes;
};

/// Searches plans of `model` on `cluster` for `globalBatch` samples. Fails
/// when no plan fits, with the closest one's memory breakdown and what
/// would make it fit.
absl::StatusOr<PlanSearchResult>
searchTransformerPlans(const TransformerModel &model, const Cluster &cluster,
                       int64_t globalBatch, const PlanSearchOptions &options,
                       const Profile *profile = nullptr);

} // namespace cleave::cost

#endif // CLEAVE_COST_MODEL_PLANSEARCH_H
