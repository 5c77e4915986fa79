//===- ProblemReduction.cpp - Smaller problems with the same costs -------===//
//
// Two ways the intra-op program is made smaller without changing what any
// choice costs: ops of repeated layers tied to the first layer of their
// structure (RepeatedLayers.cpp), and ops that must follow their producer
// merged into it. Both are `IntraOpProblem::merged`: every node takes its
// strategy from a root node through a strategy map, the root carries the
// costs of all the nodes it decides, and edges are rewritten in the roots'
// terms.
//
// An op must follow its producer when it does no work and reads one value:
// a view (reshape, transpose) that carries every layout its producer can
// make. Reading the producer's layout is then free, and any other choice
// pays a resharding before the view at least as large as the one after it
// would (views move the same bytes), so following loses nothing (Alpa's
// operator merging, here only where it is exact).
//
//===----------------------------------------------------------------------===//

#include "cleave/Search/IntraOpSearch.h"

#include "cleave/Dialect/Graph/IR/GraphOps.h"

#include <array>
#include <cmath>
#include <map>
#include <numeric>

using namespace mlir;

namespace cleave::search {

namespace {

bool nearlyEqual(double a, double b) {
  return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b)) + 1e-18;
}

} // namespace

Followers findFollowers(const IntraOpProblem &problem) {
  unsigned n = problem.nodes().size();
  Followers f;
  f.into.resize(n);
  std::iota(f.into.begin(), f.into.end(), 0);
  f.strategyOf.assign(n, {});
  f.followed.assign(n, -1);
  std::vector<std::vector<const IntraOpEdge *>> inEdges(n);
  for (const IntraOpEdge &e : problem.edges())
    inEdges[e.consumer].push_back(&e);
  for (unsigned v = 0; v < n; ++v) {
    Operation *op = problem.nodes()[v];
    if (isa<graph::ParamOp, graph::InputOp, graph::ConstantOp>(op) ||
        inEdges[v].size() != 1 || problem.strategies(v).size() < 2)
      continue;
    bool free = true;
    for (unsigned s = 0; s < problem.strategies(v).size(); ++s)
      free &= problem.nodeCost(v, s) == 0 && problem.paramBytes(v, s) == 0;
    if (!free)
      continue;
    const IntraOpEdge &e = *inEdges[v].front();
    unsigned u = e.producer, root = f.into[u];
    if (u == v)
      continue;
    // For every strategy of the root, the one strategy of v reading what
    // the producer then makes, free and leaving no partial gradient.
    std::vector<unsigned> map;
    bool follows = true;
    for (unsigned i = 0; follows && i < problem.strategies(root).size(); ++i) {
      unsigned pi = f.strategyOf[u].empty() ? i : f.strategyOf[u][i];
      int found = -1;
      for (unsigned j = 0; j < e.required.size(); ++j) {
        if (e.required[j] != e.made[pi])
          continue;
        if (found >= 0 || e.cost[pi][j] != 0 || e.partialAxes[j] != 0) {
          found = -2;
          break;
        }
        found = j;
      }
      follows = found >= 0;
      map.push_back(found);
    }
    if (!follows)
      continue;
    f.into[v] = root;
    f.strategyOf[v] = std::move(map);
    f.followed[v] = u;
  }
  return f;
}

IntraOpProblem IntraOpProblem::merged(llvm::ArrayRef<unsigned> into,
                                      llvm::ArrayRef<std::vector<unsigned>> strategyOf,
                                      llvm::ArrayRef<int> followed,
                                      std::vector<unsigned> &reducedIndex) const {
  unsigned n = ops.size();
  // v's strategy when its root takes strategy i.
  auto own = [&](unsigned v, unsigned i) {
    return v < strategyOf.size() && !strategyOf[v].empty() ? strategyOf[v][i]
                                                            : i;
  };
  IntraOpProblem t;
  t.mesh = mesh;
  t.shape = shape;
  t.memoryLimit = memoryLimit;
  reducedIndex.assign(n, 0);
  for (unsigned v = 0; v < n; ++v) {
    if (into[v] != v)
      continue;
    reducedIndex[v] = t.ops.size();
    t.index[ops[v]] = t.ops.size();
    t.ops.push_back(ops[v]);
    t.nodeStrategies.push_back(nodeStrategies[v]);
    t.nodeCosts.emplace_back(nodeCosts[v].size(), 0.0);
    t.nodeParamBytes.emplace_back(nodeParamBytes[v].size(), 0.0);
  }
  for (unsigned v = 0; v < n; ++v) {
    unsigned r = reducedIndex[v] = reducedIndex[into[v]];
    for (unsigned i = 0; i < t.nodeCosts[r].size(); ++i) {
      t.nodeCosts[r][i] += nodeCosts[v][own(v, i)];
      t.nodeParamBytes[r][i] += nodeParamBytes[v][own(v, i)];
    }
  }

  // Every edge in the reduced problem's terms: its ends' strategies are
  // their roots'. A follower's edge from the producer it follows costs
  // nothing and goes.
  auto remap = [&](const IntraOpEdge &edge) {
    IntraOpEdge e;
    e.producer = reducedIndex[edge.producer];
    e.result = edge.result;
    e.consumer = reducedIndex[edge.consumer];
    e.operand = edge.operand;
    unsigned ni = t.nodeStrategies[e.producer].size();
    unsigned nj = t.nodeStrategies[e.consumer].size();
    for (unsigned j = 0; j < nj; ++j) {
      e.required.push_back(edge.required[own(edge.consumer, j)]);
      e.partialAxes.push_back(edge.partialAxes[own(edge.consumer, j)]);
    }
    for (unsigned i = 0; i < ni; ++i) {
      unsigned pi = own(edge.producer, i);
      e.made.push_back(edge.made[pi]);
      e.gradReduce.push_back(edge.gradReduce[pi]);
      auto &row = e.cost.emplace_back();
      for (unsigned j = 0; j < nj; ++j)
        row.push_back(edge.cost[pi][own(edge.consumer, j)]);
    }
    return e;
  };
  auto dropped = [&](const IntraOpEdge &edge) {
    return edge.consumer < followed.size() &&
           followed[edge.consumer] == int(edge.producer);
  };

  // A value's edges as the reduced problem sees them: one per distinct
  // (consumer, operand), since consumers that map to one node read one
  // layout and a layout is paid once per value. Values whose producer and
  // consumers map alike, with the same costs, merge into one group
  // weighted by their count.
  struct Group {
    std::vector<IntraOpEdge> edges;
    double weight = 1;
  };
  auto sameEdge = [](const IntraOpEdge &a, const IntraOpEdge &b) {
    if (a.partialAxes != b.partialAxes || a.required != b.required ||
        a.made != b.made)
      return false;
    for (size_t i = 0; i < a.cost.size(); ++i) {
      for (size_t x = 0; x < a.gradReduce[i].size(); ++x)
        if (!nearlyEqual(a.gradReduce[i][x], b.gradReduce[i][x]))
          return false;
      for (size_t j = 0; j < a.cost[i].size(); ++j)
        if (!nearlyEqual(a.cost[i][j], b.cost[i][j]))
          return false;
    }
    return true;
  };
  using Key = std::vector<std::array<unsigned, 2>>;
  std::map<std::pair<std::array<unsigned, 2>, Key>, std::vector<Group>>
      groups;
  std::vector<std::pair<std::array<unsigned, 2>, Key>> order;
  for (const std::vector<unsigned> &group : edgesOfValue) {
    std::map<std::array<unsigned, 2>, IntraOpEdge> byConsumer;
    for (unsigned index : group) {
      const IntraOpEdge &edge = dataEdges[index];
      if (dropped(edge))
        continue;
      byConsumer.try_emplace({reducedIndex[edge.consumer], edge.operand},
                             remap(edge));
    }
    if (byConsumer.empty())
      continue;
    const IntraOpEdge &first = byConsumer.begin()->second;
    std::array<unsigned, 2> producer = {first.producer, first.result};
    Key key;
    Group g;
    for (auto &[consumer, edge] : byConsumer) {
      key.push_back(consumer);
      g.edges.push_back(std::move(edge));
    }
    auto [it, inserted] = groups.try_emplace({producer, key});
    if (inserted)
      order.push_back({producer, key});
    bool found = false;
    for (Group &candidate : it->second) {
      bool same = llvm::all_of(llvm::seq<size_t>(0, g.edges.size()),
                               [&](size_t i) {
                                 return sameEdge(candidate.edges[i],
                                                 g.edges[i]);
                               });
      if (same) {
        candidate.weight += 1;
        found = true;
        break;
      }
    }
    if (!found)
      it->second.push_back(std::move(g));
  }
  for (const auto &key : order) {
    for (Group &g : groups[key]) {
      std::vector<unsigned> &out = t.edgesOfValue.emplace_back();
      for (IntraOpEdge &e : g.edges) {
        for (auto &row : e.cost)
          for (double &c : row)
            c *= g.weight;
        for (auto &row : e.gradReduce)
          for (double &c : row)
            c *= g.weight;
        out.push_back(t.dataEdges.size());
        t.dataEdges.push_back(std::move(e));
      }
    }
  }
  return t;
}

} // namespace cleave::search
