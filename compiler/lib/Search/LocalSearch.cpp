//===- LocalSearch.cpp - Rounding the relaxation, improving a choice ------===//
//
// The ILP's LP relaxation is nearly tight on sharding problems (exact on
// trees; within a fraction of a percent on the meshes of three axes we
// measured), but CBC spends most of its time there in its primal
// heuristics before it trusts a solution. A rounded relaxation, improved
// by moving one node or one producer-consumer pair at a time, usually lands
// within the relative gap of the LP bound at once; where it does not, it is
// CBC's starting point (IntraOpIlp.cpp).
//
// Moves are priced incrementally: a node's strategy only changes its own
// cost and the costs of the values it produces or reads.
//
//===----------------------------------------------------------------------===//

#include "cleave/Search/IntraOpSearch.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

namespace cleave::search {

namespace {

/// The values (groups of `valueEdges()`) each node touches, and the cost
/// change of moving nodes to other strategies.
class MovePricer {
public:
  MovePricer(const IntraOpProblem &problem, std::vector<unsigned> &choice)
      : problem(problem), choice(choice), groupsOf(problem.nodes().size()) {
    for (auto [g, group] : llvm::enumerate(problem.valueEdges()))
      for (unsigned index : group) {
        const IntraOpEdge &e = problem.edges()[index];
        for (unsigned node : {e.producer, e.consumer})
          if (groupsOf[node].empty() || groupsOf[node].back() != g)
            groupsOf[node].push_back(g);
      }
    for (std::vector<unsigned> &groups : groupsOf) {
      llvm::sort(groups);
      groups.erase(std::unique(groups.begin(), groups.end()), groups.end());
    }
  }

  /// Cost change of node `v` taking strategy `s`.
  double delta(unsigned v, unsigned s) {
    unsigned old = choice[v];
    if (s == old)
      return 0;
    double before = problem.nodeCost(v, old), after = problem.nodeCost(v, s);
    for (unsigned g : groupsOf[v])
      before += problem.valueCost(g, choice);
    choice[v] = s;
    for (unsigned g : groupsOf[v])
      after += problem.valueCost(g, choice);
    choice[v] = old;
    return after - before;
  }

  /// Cost change of `u` taking `su` and `v` taking `sv` together.
  double delta(unsigned u, unsigned su, unsigned v, unsigned sv) {
    unsigned oldU = choice[u], oldV = choice[v];
    llvm::SmallVector<unsigned> groups(groupsOf[u].begin(), groupsOf[u].end());
    for (unsigned g : groupsOf[v])
      if (!llvm::is_contained(groupsOf[u], g))
        groups.push_back(g);
    double before = problem.nodeCost(u, oldU) + problem.nodeCost(v, oldV);
    double after = problem.nodeCost(u, su) + problem.nodeCost(v, sv);
    for (unsigned g : groups)
      before += problem.valueCost(g, choice);
    choice[u] = su;
    choice[v] = sv;
    for (unsigned g : groups)
      after += problem.valueCost(g, choice);
    choice[u] = oldU;
    choice[v] = oldV;
    return after - before;
  }

  /// The nodes that share a value with `v`, `v` included.
  llvm::SmallVector<unsigned> neighbours(unsigned v) const {
    llvm::SmallVector<unsigned> result{v};
    for (unsigned g : groupsOf[v])
      for (unsigned index : problem.valueEdges()[g]) {
        const IntraOpEdge &e = problem.edges()[index];
        for (unsigned node : {e.producer, e.consumer})
          if (!llvm::is_contained(result, node))
            result.push_back(node);
      }
    return result;
  }

private:
  const IntraOpProblem &problem;
  std::vector<unsigned> &choice;
  std::vector<std::vector<unsigned>> groupsOf;
};

/// A move that changes the cost by less than this (relative to the total)
/// is no improvement: rounding must not make the search cycle.
constexpr double kTolerance = 1e-12;
/// Weights of the relaxation below this are no part of its support.
constexpr double kSupport = 1e-6;

} // namespace

std::optional<std::vector<unsigned>>
roundRelaxation(const IntraOpProblem &problem,
                llvm::ArrayRef<std::vector<double>> weight) {
  unsigned numNodes = problem.nodes().size();
  std::vector<unsigned> choice(numNodes, 0);
  for (unsigned v = 0; v < numNodes; ++v)
    for (unsigned s = 1; s < weight[v].size(); ++s)
      if (weight[v][s] > weight[v][choice[v]] ||
          (weight[v][s] == weight[v][choice[v]] &&
           problem.nodeCost(v, s) < problem.nodeCost(v, choice[v])))
        choice[v] = s;
  double limit = problem.paramMemoryLimit();
  double bytes = problem.paramBytes(choice);
  if (bytes <= limit)
    return choice;
  MovePricer pricer(problem, choice);

  // Over the limit: repeatedly take the move that gives up parameter bytes
  // at the least cost per byte. Each node's best move is kept and priced
  // again only when it or a neighbour moves.
  struct Move {
    double costPerByte = std::numeric_limits<double>::infinity();
    unsigned strategy = 0;
  };
  std::vector<Move> best(numNodes);
  auto price = [&](unsigned v) {
    best[v] = Move();
    double held = problem.paramBytes(v, choice[v]);
    for (unsigned s = 0; s < problem.strategies(v).size(); ++s) {
      double saved = held - problem.paramBytes(v, s);
      if (saved <= 0)
        continue;
      double perByte = std::max(0.0, pricer.delta(v, s)) / saved;
      if (perByte < best[v].costPerByte)
        best[v] = {perByte, s};
    }
  };
  for (unsigned v = 0; v < numNodes; ++v)
    price(v);
  while (bytes > limit) {
    unsigned pick = 0;
    for (unsigned v = 1; v < numNodes; ++v)
      if (best[v].costPerByte < best[pick].costPerByte)
        pick = v;
    if (!std::isfinite(best[pick].costPerByte))
      return std::nullopt;
    bytes += problem.paramBytes(pick, best[pick].strategy) -
             problem.paramBytes(pick, choice[pick]);
    choice[pick] = best[pick].strategy;
    for (unsigned v : pricer.neighbours(pick))
      price(v);
  }
  return choice;
}

double improveChoice(const IntraOpProblem &problem,
                     std::vector<unsigned> &choice,
                     llvm::ArrayRef<std::vector<double>> weight,
                     unsigned passes) {
  MovePricer pricer(problem, choice);
  double limit = problem.paramMemoryLimit();
  double bytes = problem.paramBytes(choice);
  double cost = problem.cost(choice);
  unsigned numNodes = problem.nodes().size();
  auto fits = [&](double change) { return bytes + change <= limit; };
  // Producer-consumer pairs, once each.
  std::vector<std::pair<unsigned, unsigned>> pairs;
  for (const IntraOpEdge &e : problem.edges())
    if (e.producer != e.consumer)
      pairs.push_back({e.producer, e.consumer});
  llvm::sort(pairs);
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());

  for (unsigned pass = 0; pass < passes; ++pass) {
    bool improved = false;
    for (unsigned v = 0; v < numNodes; ++v) {
      unsigned bestS = choice[v];
      double bestDelta = -kTolerance * std::abs(cost);
      for (unsigned s = 0; s < problem.strategies(v).size(); ++s) {
        double change =
            problem.paramBytes(v, s) - problem.paramBytes(v, choice[v]);
        if (s == choice[v] || !fits(change))
          continue;
        if (double d = pricer.delta(v, s); d < bestDelta) {
          bestDelta = d;
          bestS = s;
        }
      }
      if (bestS != choice[v]) {
        bytes += problem.paramBytes(v, bestS) - problem.paramBytes(v, choice[v]);
        cost += bestDelta;
        choice[v] = bestS;
        improved = true;
      }
    }
    if (improved)
      continue;
    // No single move helps: a producer and its consumer together (the
    // column-then-row split of an MLP is only better than replication when
    // both matmuls take it).
    for (auto [u, v] : pairs) {
      unsigned bestU = choice[u], bestV = choice[v];
      double bestDelta = -kTolerance * std::abs(cost);
      for (unsigned su = 0; su < problem.strategies(u).size(); ++su)
        for (unsigned sv = 0; sv < problem.strategies(v).size(); ++sv) {
          if (su == choice[u] || sv == choice[v])
            continue; // single moves were tried
          double change = problem.paramBytes(u, su) -
                          problem.paramBytes(u, choice[u]) +
                          problem.paramBytes(v, sv) -
                          problem.paramBytes(v, choice[v]);
          if (!fits(change))
            continue;
          if (double d = pricer.delta(u, su, v, sv); d < bestDelta) {
            bestDelta = d;
            bestU = su;
            bestV = sv;
          }
        }
      if (bestU != choice[u]) {
        bytes += problem.paramBytes(u, bestU) - problem.paramBytes(u, choice[u]) +
                 problem.paramBytes(v, bestV) - problem.paramBytes(v, choice[v]);
        cost += bestDelta;
        choice[u] = bestU;
        choice[v] = bestV;
        improved = true;
      }
    }
    if (improved)
      continue;
    // Where the memory limit binds: one node takes a cheaper strategy that
    // holds more bytes, and another gives up at least as many.
    struct Single {
      unsigned node, strategy;
      double delta, bytes;
    };
    std::vector<Single> gains, frees;
    for (unsigned v = 0; v < numNodes; ++v)
      for (unsigned s = 0; s < problem.strategies(v).size(); ++s) {
        if (s == choice[v])
          continue;
        double change =
            problem.paramBytes(v, s) - problem.paramBytes(v, choice[v]);
        if (change > 0 && !fits(change)) {
          if (double d = pricer.delta(v, s); d < 0)
            gains.push_back({v, s, d, change});
        } else if (change < 0) {
          frees.push_back({v, s, pricer.delta(v, s), change});
        }
      }
    llvm::sort(frees, [](const Single &a, const Single &b) {
      return a.delta < b.delta;
    });
    double bestDelta = -kTolerance * std::abs(cost);
    std::optional<std::pair<Single, Single>> best;
    for (const Single &gain : gains)
      for (const Single &give : frees) {
        // Sorted by their own change: no later one is better, but for
        // neighbours, whose changes do not add.
        if (gain.delta + give.delta >= bestDelta)
          break;
        if (give.node == gain.node || !fits(gain.bytes + give.bytes))
          continue;
        double d = pricer.delta(gain.node, gain.strategy, give.node,
                                give.strategy);
        if (d < bestDelta) {
          bestDelta = d;
          best = {gain, give};
        }
      }
    if (best) {
      for (const Single &move : {best->first, best->second}) {
        bytes += move.bytes;
        choice[move.node] = move.strategy;
      }
      cost += bestDelta;
      continue;
    }
    // Chains: a node takes a strategy of the relaxation's support, and its
    // neighbours, then theirs, take their best single moves in turn; kept
    // if the whole chain pays. A block switching to sequence parallelism
    // (a reduce-scatter, then normalisations on split activations) gains
    // only once every op of it has moved.
    for (unsigned v = 0; v < std::min<size_t>(numNodes, weight.size()); ++v)
      for (unsigned s = 0; s < weight[v].size(); ++s) {
        if (s == choice[v] || weight[v][s] <= kSupport)
          continue;
        std::vector<unsigned> before = choice;
        double chainBytes = bytes, change = pricer.delta(v, s);
        chainBytes += problem.paramBytes(v, s) - problem.paramBytes(v, choice[v]);
        choice[v] = s;
        std::vector<bool> moved(numNodes, false);
        moved[v] = true;
        llvm::SmallVector<unsigned> frontier{v};
        while (!frontier.empty()) {
          llvm::SmallVector<unsigned> next;
          for (unsigned u : frontier)
            for (unsigned w : pricer.neighbours(u)) {
              if (moved[w])
                continue;
              unsigned bestS = choice[w];
              double bestD = -kTolerance * std::abs(cost);
              for (unsigned t = 0; t < problem.strategies(w).size(); ++t) {
                double grow =
                    problem.paramBytes(w, t) - problem.paramBytes(w, choice[w]);
                if (t == choice[w] || (grow > 0 && chainBytes + grow > limit))
                  continue;
                if (double d = pricer.delta(w, t); d < bestD) {
                  bestD = d;
                  bestS = t;
                }
              }
              if (bestS == choice[w])
                continue;
              chainBytes +=
                  problem.paramBytes(w, bestS) - problem.paramBytes(w, choice[w]);
              change += bestD;
              choice[w] = bestS;
              moved[w] = true;
              next.push_back(w);
            }
          frontier = std::move(next);
        }
        if (change < -kTolerance * std::abs(cost) && chainBytes <= limit) {
          cost += change;
          bytes = chainBytes;
          improved = true;
        } else {
          choice = std::move(before);
        }
      }
    if (!improved)
      break;
  }
  // Priced again in full: the running sum collects rounding.
  return problem.cost(choice);
}

} // namespace cleave::search
