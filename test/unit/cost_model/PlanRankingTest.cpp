//===- PlanRankingTest.cpp - The one search over scored plans -------------===//
//
// A scorer with known bounds and step times stands for a planner's model:
// the ranking must find the fastest plans while simulating only those whose
// bound can still beat the K-th best, keep the closest plan refused for
// memory, and take the preferred plan within a tie.
//
//===----------------------------------------------------------------------===//

#include "cleave/cost_model/PlanRanking.h"

#include <gtest/gtest.h>

#include <map>

using namespace cleave::cost;

namespace {

/// Plans told apart by dp: each has a bound and a step (step >= bound), or
/// does not fit, needing `needs` GB.
struct Fake {
  double bound, step;
  double needs = 0;
};

struct FakeModel {
  std::map<int64_t, Fake> plans;
  int simulations = 0;
  PlanScorer scorer() {
    return [this](const ParallelConfig &p,
                  double simulateBelow) -> absl::StatusOr<PlanPrediction> {
      const Fake &f = plans.at(p.dp);
      if (f.needs > 0)
        return absl::ResourceExhaustedError(
            "out of memory: stage 0 needs " + std::to_string(f.needs) +
            " GB of the 80.00 GB a device has");
      PlanPrediction out;
      out.plan = p;
      out.lowerBoundSeconds = f.bound;
      if (f.bound > simulateBelow) {
        out.simulated = false;
        out.stepSeconds = f.bound;
        return out;
      }
      ++simulations;
      out.stepSeconds = f.step;
      return out;
    };
  }
};

ParallelConfig plan(int64_t dp, int zero = 0) {
  ParallelConfig p;
  p.dp = dp;
  p.zero = zero;
  return p;
}

TEST(PlanRanking, SimulatesOnlyWhatCanBeatTheBest) {
  FakeModel model;
  model.plans = {{1, {1.0, 1.5}}, {2, {1.2, 1.3}}, {3, {1.4, 2.0}},
                 {4, {2.0, 2.1}}, {5, {3.0, 3.0}}};
  PlanRanking ranking({});
  for (int64_t dp = 1; dp <= 5; ++dp)
    ASSERT_TRUE(ranking.consider(plan(dp), model.scorer()).ok());
  EXPECT_EQ(model.simulations, 0) << "the memory pass simulates nothing";
  PlanSearchResult result = ranking.rank();
  ASSERT_EQ(result.best.size(), 1u);
  EXPECT_EQ(result.best[0].plan.dp, 2);
  EXPECT_DOUBLE_EQ(result.best[0].stepSeconds, 1.3);
  // dp 1 (bound 1.0) steps 1.5; dp 2 (bound 1.2 < 1.5) steps 1.3; dp 3's
  // bound 1.4 cannot beat 1.3, nor can any later one.
  EXPECT_EQ(result.simulated, 2);
  EXPECT_EQ(ranking.unsimulated(), 3);
  EXPECT_EQ(result.candidates, 5);
}

TEST(PlanRanking, ExplainSimulatesEveryShapesBestAndCountsIt) {
  FakeModel model;
  model.plans = {{1, {1.0, 1.5}}, {2, {1.2, 1.3}}, {4, {2.0, 2.1}}};
  RankingOptions options;
  options.explain = true;
  PlanRanking ranking(options);
  for (int64_t dp : {1, 2, 4}) {
    ParallelConfig p = plan(dp);
    p.tp = dp; // one shape each
    ASSERT_TRUE(ranking.consider(p, model.scorer()).ok());
  }
  PlanSearchResult result = ranking.rank();
  EXPECT_EQ(result.simulated, 2);
  ASSERT_EQ(result.shapes.size(), 3u);
  for (const auto &shape : result.shapes)
    EXPECT_TRUE(shape.feasible);
  // The third shape's plan was simulated for --explain: nothing was left
  // unsimulated.
  EXPECT_EQ(ranking.unsimulated(), 0);
}

TEST(PlanRanking, ASimulationThatFailsIsInfeasibleWithItsReason) {
  PlanScorer scorer = [](const ParallelConfig &p,
                         double simulateBelow) -> absl::StatusOr<PlanPrediction> {
    if (simulateBelow > 1e300)
      return absl::InternalError("the schedule deadlocks");
    PlanPrediction out;
    out.plan = p;
    out.lowerBoundSeconds = 1;
    out.simulated = false;
    return out;
  };
  PlanRanking ranking({});
  ASSERT_TRUE(ranking.consider(plan(1), scorer).ok());
  PlanSearchResult result = ranking.rank();
  EXPECT_TRUE(result.best.empty());
  EXPECT_EQ(result.infeasible, 1);
  EXPECT_NE(ranking.otherReason().find("the schedule deadlocks"),
            std::string::npos);
}

TEST(PlanRanking, TopKAndExhaustiveFindTheSameFastest) {
  FakeModel model;
  model.plans = {{1, {1.0, 1.5}}, {2, {1.2, 1.3}}, {3, {1.4, 2.0}},
                 {4, {2.0, 2.1}}, {5, {3.0, 3.0}}};
  RankingOptions top;
  top.topK = 3;
  PlanRanking bounded(top);
  top.exhaustive = true;
  PlanRanking every(top);
  for (int64_t dp = 1; dp <= 5; ++dp) {
    ASSERT_TRUE(bounded.consider(plan(dp), model.scorer()).ok());
    ASSERT_TRUE(every.consider(plan(dp), model.scorer()).ok());
  }
  PlanSearchResult a = bounded.rank(), b = every.rank();
  ASSERT_EQ(a.best.size(), 3u);
  ASSERT_EQ(b.best.size(), 3u);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(a.best[i].plan.dp, b.best[i].plan.dp);
  EXPECT_EQ(a.best[2].plan.dp, 3);
  EXPECT_LT(a.simulated, b.simulated);
}

TEST(PlanRanking, KeepsTheClosestPlanRefusedForMemory) {
  FakeModel model;
  model.plans = {{1, {0, 0, 95.5}}, {2, {0, 0, 84.25}}, {3, {0, 0, 120}}};
  PlanRanking ranking({});
  for (int64_t dp = 1; dp <= 3; ++dp)
    EXPECT_EQ(ranking.consider(plan(dp), model.scorer()).code(),
              absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(ranking.fitting(), 0);
  EXPECT_EQ(ranking.outOfMemory(), 3);
  EXPECT_EQ(ranking.closest().plan.dp, 2);
  EXPECT_NEAR(ranking.closest().memoryBytes, 84.25e9, 1e6);
}

TEST(PlanRanking, TakesThePreferredPlanWithinTheTie) {
  // ZeRO-0 is 0.5% slower than ZeRO-3: within a 1% tie the planner
  // prefers the lower ZeRO stage, which must be simulated to be found.
  FakeModel model;
  model.plans = {{1, {1.00, 1.000}}, {2, {1.004, 1.005}}};
  RankingOptions options;
  options.tie = 0.01;
  options.prefer = [](const PlanPrediction &a, const PlanPrediction &b) {
    if (std::abs(a.stepSeconds - b.stepSeconds) >
        0.01 * std::min(a.stepSeconds, b.stepSeconds))
      return a.stepSeconds < b.stepSeconds;
    return a.plan.zero < b.plan.zero;
  };
  PlanRanking ranking(options);
  ASSERT_TRUE(ranking.consider(plan(1, /*zero=*/3), model.scorer()).ok());
  ASSERT_TRUE(ranking.consider(plan(2, /*zero=*/0), model.scorer()).ok());
  PlanSearchResult result = ranking.rank();
  ASSERT_FALSE(result.best.empty());
  EXPECT_EQ(result.best[0].plan.zero, 0);
  EXPECT_EQ(result.simulated, 2);
}

} // namespace
