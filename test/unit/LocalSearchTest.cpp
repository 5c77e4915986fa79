//===- LocalSearchTest.cpp - The rounded relaxation and the local search --===//
//
// The intra-operator search solves the LP relaxation first, rounds it and
// improves the rounding by local moves (LocalSearch.cpp); a choice within
// the relative gap of the relaxation's bound is returned without branch
// and bound. These tests hold it to CBC's proven optimum and to the memory
// limit.
//
//===----------------------------------------------------------------------===//

#include "SearchTestUtil.h"

#include <random>

using namespace mlir;
using namespace cleave;
using namespace cleave::search;
using namespace cleave::search::testutil;

namespace {

class RoundedGpt : public TwoNodeGpt {};

/// On a 2 x 8 mesh the relaxation is tight: its rounding is returned
/// without branch and bound, at the objective CBC proves optimal, and the
/// program prices the rounded choice as the problem does (the formulation
/// checked, as CBC's objective checks it).
TEST_F(RoundedGpt, RoundingMatchesTheBranchAndBound) {
  auto p = build({2, 8});
  ASSERT_TRUE(succeeded(p));
  auto rounded = solveIntraOp(*p, options);
  options.lpRounding = false;
  options.relativeGap = 0;
  auto exact = solveIntraOp(*p, options);
  ASSERT_TRUE(succeeded(rounded) && succeeded(exact));
  EXPECT_TRUE(rounded->rounded);
  EXPECT_FALSE(exact->rounded);
  EXPECT_TRUE(rounded->optimal && exact->optimal);
  EXPECT_LE(rounded->objective, exact->objective * (1 + 1e-3));
  EXPECT_LE(rounded->gap, 1e-3);
  EXPECT_NEAR(rounded->solverObjective, rounded->objective,
              1e-6 * rounded->objective);
  EXPECT_LE(p->paramBytes(rounded->choice), options.paramMemoryBytes);
}

/// From any choice within the memory limit the local search ends within it,
/// never costs more than it started, and ends where no single node's move
/// would help (checked by trying every one).
/// With no branch-and-bound nodes allowed (maxNodes 0, as the graph
/// planner asks) the rounding is returned even outside the relative gap,
/// marked not proven, with its gap to the relaxation's bound (on 2 x 4 a
/// rounding above the bound); and it is the same choice on every run (no
/// time limit decides it).
TEST_F(RoundedGpt, NoBranchAndBoundReturnsTheRoundingWithItsGap) {
  options.relativeGap = 1e-6;
  options.maxNodes = 0;
  auto p = build({2, 4});
  ASSERT_TRUE(succeeded(p));
  auto first = solveIntraOp(*p, options);
  auto again = solveIntraOp(*p, options);
  ASSERT_TRUE(succeeded(first) && succeeded(again));
  EXPECT_TRUE(first->rounded);
  EXPECT_FALSE(first->optimal);
  EXPECT_GT(first->gap, options.relativeGap);
  EXPECT_LE(first->bound, first->objective);
  EXPECT_DOUBLE_EQ(first->objective, p->cost(first->choice));
  EXPECT_EQ(first->choice, again->choice);
  EXPECT_LE(p->paramBytes(first->choice), options.paramMemoryBytes);
}

TEST_F(RoundedGpt, LocalSearchKeepsTheLimitAndEndsAtALocalOptimum) {
  options.tieRepeatedLayers = false;
  auto p = build({16});
  ASSERT_TRUE(succeeded(p));
  unsigned n = p->nodes().size();
  // Starts: the fewest parameter bytes everywhere, then random moves that
  // keep within the limit.
  std::vector<unsigned> fewest(n, 0);
  for (unsigned v = 0; v < n; ++v)
    for (unsigned s = 1; s < p->strategies(v).size(); ++s)
      if (p->paramBytes(v, s) < p->paramBytes(v, fewest[v]))
        fewest[v] = s;
  ASSERT_LE(p->paramBytes(fewest), options.paramMemoryBytes);
  std::mt19937 random(7);
  for (int trial = 0; trial < 4; ++trial) {
    std::vector<unsigned> choice = fewest;
    for (int k = 0; k < 40; ++k) {
      unsigned v = random() % n;
      unsigned old = choice[v];
      choice[v] = random() % p->strategies(v).size();
      if (p->paramBytes(choice) > options.paramMemoryBytes)
        choice[v] = old;
    }
    double start = p->cost(choice);
    double end = improveChoice(*p, choice);
    EXPECT_DOUBLE_EQ(end, p->cost(choice));
    EXPECT_LE(end, start) << "trial " << trial;
    EXPECT_LE(p->paramBytes(choice), options.paramMemoryBytes);
    for (unsigned v = 0; v < n; ++v)
      for (unsigned s = 0; s < p->strategies(v).size(); ++s) {
        std::vector<unsigned> moved = choice;
        moved[v] = s;
        if (p->paramBytes(moved) <= options.paramMemoryBytes) {
          EXPECT_GE(p->cost(moved), end * (1 - 1e-9))
              << "trial " << trial << ": node " << v << " to "
              << p->strategies(v)[s].name;
        }
      }
  }
}

/// Over the limit, rounding gives up parameter bytes until the choice fits;
/// where nothing can fit, it says so.
TEST_F(RoundedGpt, RoundingRepairsTheMemoryLimit) {
  auto p = build({8});
  ASSERT_TRUE(succeeded(p));
  unsigned n = p->nodes().size();
  // All weight on strategy 0 (replicated): over the limit.
  std::vector<std::vector<double>> weight(n);
  for (unsigned v = 0; v < n; ++v) {
    weight[v].assign(p->strategies(v).size(), 0.0);
    weight[v][0] = 1;
  }
  ASSERT_GT(p->paramBytes(p->replicatedChoice()), options.paramMemoryBytes);
  auto choice = roundRelaxation(*p, weight);
  ASSERT_TRUE(choice.has_value());
  EXPECT_LE(p->paramBytes(*choice), options.paramMemoryBytes);

  options.paramMemoryBytes = 1; // below any sharding of the weights
  auto tight = build({8});
  ASSERT_TRUE(succeeded(tight));
  EXPECT_FALSE(roundRelaxation(*tight, weight).has_value());
}

} // namespace
