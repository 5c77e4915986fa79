//===- IntraOpIlp.cpp - The intra-operator search as an ILP (CBC) --------===//
//
//   min  sum_v sum_s c[v][s] x[v][s] + sum_e sum_(c,d) r[e][c][d] y[e][c][d]
//   s.t. sum_s x[v][s] = 1                           every op picks one strategy
//        sum_d y[e][c][d] = sum_(i in c) x[u][i]     every edge (u, v), every
//        sum_c y[e][c][d] = sum_(j in d) x[v][j]     class c of u and d of v
//        sum_v sum_s m[v][s] x[v][s] <= M            parameter bytes per device
//        x binary, y in [0, 1]
//
// An edge's costs depend on the layout the producer makes (its class c)
// and on the layout the consumer reads with the axes over which it leaves
// the gradient partial (class d), not on the strategies themselves, so y
// is per class pair: on a mesh of several axes, where strategies multiply,
// that is layouts x layouts. The edge constraints fix y to the product of
// its ends once x is integral, and keep the LP relaxation tight (it is
// exact on trees), so CBC usually closes at the root. A value with several
// consumers is resharded once per layout they read: its edges' y carry no
// cost, and a variable r[c][L] >= sum over consumer classes reading L of
// y[e][c][d], for every edge e of the value, pays the resharding from c to
// L (and one more such variable per c and set of axes pays the reduction
// of a gradient that some consumer leaves partial over those axes, for
// training). The problem is kept small: ops with a single strategy get no
// variables (their edges become linear terms of their neighbours), and
// edges whose resharding is free in every combination get none either.
//
// Before any branch and bound the relaxation is solved and rounded
// (LocalSearch.cpp); a rounding within the relative gap of its bound is the
// answer, any other is CBC's start.
//
//===----------------------------------------------------------------------===//

#include "cleave/Search/IntraOpSearch.h"

#include "CbcModel.hpp"
#include "CbcSolver.hpp"
#include "CoinMessageHandler.hpp"
#include "CoinPackedMatrix.hpp"
#include "OsiClpSolverInterface.hpp"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <set>

using namespace mlir;

namespace cleave::search {

namespace {

/// Objective in microseconds: CBC's tolerances are absolute.
constexpr double kScale = 1e6;

/// The integer program in triplet form.
struct Program {
  std::vector<double> obj, colLb, colUb;
  std::vector<bool> integer;
  std::vector<double> rowLb, rowUb;
  std::vector<int> tripletRow, tripletCol;
  std::vector<double> tripletValue;

  int addColumn(double cost, bool isInteger) {
    obj.push_back(cost * kScale);
    colLb.push_back(0);
    colUb.push_back(1);
    integer.push_back(isInteger);
    return obj.size() - 1;
  }
  int addRow(double lb, double ub) {
    rowLb.push_back(lb);
    rowUb.push_back(ub);
    return rowLb.size() - 1;
  }
  void set(int row, int col, double value) {
    tripletRow.push_back(row);
    tripletCol.push_back(col);
    tripletValue.push_back(value);
  }
};

} // namespace

/// The program of `problem` as it stands, solved by CBC.
static FailureOr<IntraOpPlan> solveProgram(const IntraOpProblem &problem,
                                           const IntraOpOptions &options,
                                           std::string *whyNot) {
  auto fail = [&](llvm::StringRef why) {
    if (whyNot)
      *whyNot = why.str();
    return failure();
  };
  auto start = std::chrono::steady_clock::now();
  unsigned numNodes = problem.nodes().size();
  Program prog;
  // x[v][s]: a column, or -1 when v has one strategy (fixed to it).
  std::vector<std::vector<int>> x(numNodes);
  double constant = 0, fixedBytes = 0;
  for (unsigned v = 0; v < numNodes; ++v) {
    unsigned count = problem.strategies(v).size();
    if (count == 1) {
      x[v] = {-1};
      constant += problem.nodeCost(v, 0);
      fixedBytes += problem.paramBytes(v, 0);
      continue;
    }
    int row = prog.addRow(1, 1);
    for (unsigned s = 0; s < count; ++s) {
      x[v].push_back(prog.addColumn(problem.nodeCost(v, s), true));
      prog.set(row, x[v].back(), 1);
    }
  }
  auto costs = [](const IntraOpEdge &e) {
    return llvm::any_of(e.cost, [](const std::vector<double> &row) {
      return llvm::any_of(row, [](double c) { return c > 0; });
    });
  };
  // y[c][d] = "the producer takes a strategy of class c and the consumer
  // one of class d" for an edge (u, v), tied to both ends by marginal rows;
  // priced with the edge's costs or not. An edge's costs depend only on the
  // layout the producer makes and, for the consumer, the layout it reads
  // and the axes over which it leaves the gradient partial, so strategies
  // alike in those share a class: on a mesh of several axes this keeps the
  // product to layouts x layouts instead of strategies x strategies.
  struct Product {
    std::vector<size_t> repI, repJ; // a strategy of each class
    std::vector<std::vector<int>> y;
  };
  // y over the producer's classes (the layout it makes) and the consumer's
  // classes by `keyOfJ`, tied to both ends by marginal rows; each column
  // priced by `price(i, j)` of its classes' representatives.
  auto addFamily = [&](const IntraOpEdge &e,
                       llvm::function_ref<int64_t(size_t)> keyOfJ,
                       llvm::function_ref<double(size_t, size_t)> price) {
    Product p;
    std::vector<std::vector<size_t>> membersI, membersJ;
    std::map<int64_t, size_t> classI;
    for (size_t i = 0; i < x[e.producer].size(); ++i) {
      int64_t made = e.made[i];
      auto [it, inserted] = classI.try_emplace(made, p.repI.size());
      if (inserted) {
        p.repI.push_back(i);
        membersI.emplace_back();
      }
      membersI[it->second].push_back(i);
    }
    std::map<int64_t, size_t> classJ;
    for (size_t j = 0; j < x[e.consumer].size(); ++j) {
      auto [it, inserted] = classJ.try_emplace(keyOfJ(j), p.repJ.size());
      if (inserted) {
        p.repJ.push_back(j);
        membersJ.emplace_back();
      }
      membersJ[it->second].push_back(j);
    }
    std::vector<int> rowOfI, rowOfJ;
    for (const std::vector<size_t> &members : membersI) {
      rowOfI.push_back(prog.addRow(0, 0));
      for (size_t i : members)
        prog.set(rowOfI.back(), x[e.producer][i], -1);
    }
    for (const std::vector<size_t> &members : membersJ) {
      rowOfJ.push_back(prog.addRow(0, 0));
      for (size_t j : members)
        prog.set(rowOfJ.back(), x[e.consumer][j], -1);
    }
    p.y.assign(p.repI.size(), std::vector<int>(p.repJ.size()));
    for (size_t c = 0; c < p.repI.size(); ++c) {
      for (size_t d = 0; d < p.repJ.size(); ++d) {
        p.y[c][d] = prog.addColumn(price(p.repI[c], p.repJ[d]), false);
        prog.set(rowOfI[c], p.y[c][d], 1);
        prog.set(rowOfJ[d], p.y[c][d], 1);
      }
    }
    return p;
  };
  // An edge's cost is the resharding, a function of the layout the
  // producer makes and the one the consumer reads, plus the reduction of a
  // gradient the consumer leaves partial, a function of the producer's
  // layout and the consumer's partial axes. Two families of products, one
  // per term, then replace one over (layout made) x (layout read, partial
  // axes): on a mesh of three axes, where a consumer's classes are its
  // layouts times the sets of axes, that is several times fewer columns.
  // Each family is exact once x is integral; kept only where the edge's
  // costs really split so (checked), else the joint product.
  auto separable = [&](const IntraOpEdge &e) {
    std::map<std::pair<int64_t, int64_t>, double> reshard;
    std::map<std::pair<int64_t, unsigned>, double> reduce;
    auto same = [](double a, double b) {
      return std::abs(a - b) <= 1e-9 * std::max({1.0, std::abs(a), std::abs(b)});
    };
    for (size_t i = 0; i < e.made.size(); ++i)
      for (size_t j = 0; j < e.required.size(); ++j) {
        auto [r, newR] = reshard.try_emplace({e.made[i], e.required[j]},
                                             e.reshardCost(i, j));
        auto [g, newG] = reduce.try_emplace({e.made[i], e.partialAxes[j]},
                                            e.reduceCost(i, j));
        if ((!newR && !same(r->second, e.reshardCost(i, j))) ||
            (!newG && !same(g->second, e.reduceCost(i, j))))
          return false;
      }
    return true;
  };
  auto hasPartial = [](const IntraOpEdge &e) {
    for (size_t i = 0; i < e.made.size(); ++i)
      for (size_t j = 0; j < e.required.size(); ++j)
        if (e.reduceCost(i, j) > 0)
          return true;
    return false;
  };
  auto layoutKey = [](const IntraOpEdge &e) {
    return [&e](size_t j) { return e.required[j]; };
  };
  auto partialKey = [](const IntraOpEdge &e) {
    return [&e](size_t j) { return static_cast<int64_t>(e.partialAxes[j]); };
  };
  // The joint product (one family over both terms).
  auto addProduct = [&](const IntraOpEdge &e, bool priced) {
    // Consumer classes by (layout read, partial axes), packed in one key.
    std::map<std::pair<int64_t, unsigned>, int64_t> key;
    for (size_t j = 0; j < e.required.size(); ++j)
      key.try_emplace({e.required[j], e.partialAxes[j]}, key.size());
    return addFamily(
        e,
        [&](size_t j) { return key.at({e.required[j], e.partialAxes[j]}); },
        [&](size_t i, size_t j) { return priced ? e.cost[i][j] : 0.0; });
  };
  // One edge priced on its own.
  auto addEdge = [&](const IntraOpEdge &e) {
    bool fixedU = x[e.producer][0] < 0, fixedV = x[e.consumer][0] < 0;
    if (fixedU && fixedV) {
      constant += e.cost[0][0];
    } else if (fixedU) {
      for (auto [j, col] : llvm::enumerate(x[e.consumer]))
        prog.obj[col] += e.cost[0][j] * kScale;
    } else if (fixedV) {
      for (auto [i, col] : llvm::enumerate(x[e.producer]))
        prog.obj[col] += e.cost[i][0] * kScale;
    } else if (options.splitEdgeCosts && separable(e)) {
      addFamily(e, layoutKey(e),
                [&](size_t i, size_t j) { return e.reshardCost(i, j); });
      if (hasPartial(e))
        addFamily(e, partialKey(e),
                  [&](size_t i, size_t j) { return e.reduceCost(i, j); });
    } else {
      addProduct(e, /*priced=*/true);
    }
  };
  for (llvm::ArrayRef<unsigned> group : problem.valueEdges()) {
    llvm::SmallVector<const IntraOpEdge *> priced;
    for (unsigned index : group)
      if (costs(problem.edges()[index]))
        priced.push_back(&problem.edges()[index]);
    if (priced.empty())
      continue;
    unsigned producer = priced.front()->producer;
    if (priced.size() == 1) {
      for (const IntraOpEdge *e : priced)
        addEdge(*e);
      continue;
    }
    // Several consumers: r[i][c] >= the product of "the producer takes i"
    // and "this consumer reads c", for every consumer; r pays the
    // resharding from i to c once.
    // The reduction of a gradient left partial over a set of axes is one
    // more "layout" per producer strategy and set, paid once whichever
    // consumers leave it.
    constexpr int64_t kPartialGradient = std::numeric_limits<int64_t>::min();
    std::map<std::pair<size_t, int64_t>, int> reshard;
    std::set<std::pair<size_t, int64_t>> forced;
    for (const IntraOpEdge *e : priced) {
      std::map<std::pair<size_t, int64_t>, std::vector<int>> terms;
      std::map<std::pair<size_t, int64_t>, double> price;
      auto addReshard = [&](size_t i, size_t j, int col) {
        if (double c = e->reshardCost(i, j); c > 0) {
          terms[{i, e->required[j]}].push_back(col);
          price[{i, e->required[j]}] = c;
        }
      };
      auto addReduce = [&](size_t i, size_t j, int col) {
        if (unsigned mask = e->partialAxes[j];
            mask && e->gradReduce[i][mask] > 0) {
          terms[{i, kPartialGradient + mask}].push_back(col);
          price[{i, kPartialGradient + mask}] = e->gradReduce[i][mask];
        }
      };
      auto addTerms = [&](size_t i, size_t j, int col) {
        addReshard(i, j, col);
        addReduce(i, j, col);
      };
      // The column that is 1 when the producer takes i and the consumer j
      // (-1: both have one strategy, so always).
      bool fixedU = x[producer][0] < 0, fixedV = x[e->consumer][0] < 0;
      if (fixedU && fixedV) {
        addTerms(0, 0, -1);
      } else if (fixedV) {
        // Keyed by the first strategy making the same layout, as the
        // products' classes are.
        auto made = [&](size_t i) { return e->made[i]; };
        for (size_t i = 0; i < x[producer].size(); ++i) {
          size_t rep = 0;
          while (made(rep) != made(i))
            ++rep;
          addTerms(rep, 0, x[producer][i]);
        }
      } else if (fixedU) {
        for (size_t j = 0; j < x[e->consumer].size(); ++j)
          addTerms(0, j, x[e->consumer][j]);
      } else if (options.splitEdgeCosts && separable(*e)) {
        // The same two families, unpriced: the layout family's columns
        // feed the resharding terms, the partial family's the reductions.
        auto none = [](size_t, size_t) { return 0.0; };
        Product layouts = addFamily(*e, layoutKey(*e), none);
        for (size_t c = 0; c < layouts.repI.size(); ++c)
          for (size_t d = 0; d < layouts.repJ.size(); ++d)
            addReshard(layouts.repI[c], layouts.repJ[d], layouts.y[c][d]);
        if (hasPartial(*e)) {
          Product partial = addFamily(*e, partialKey(*e), none);
          for (size_t c = 0; c < partial.repI.size(); ++c)
            for (size_t d = 0; d < partial.repJ.size(); ++d)
              addReduce(partial.repI[c], partial.repJ[d], partial.y[c][d]);
        }
      } else {
        Product product = addProduct(*e, /*priced=*/false);
        for (size_t c = 0; c < product.repI.size(); ++c)
          for (size_t d = 0; d < product.repJ.size(); ++d)
            addTerms(product.repI[c], product.repJ[d], product.y[c][d]);
      }
      for (auto &[key, cols] : terms) {
        if (llvm::is_contained(cols, -1)) {
          // Paid whatever the choice: a constant, once per key.
          if (forced.insert(key).second)
            constant += price[key];
          continue;
        }
        auto [it, inserted] = reshard.try_emplace(key, -1);
        if (inserted)
          it->second = prog.addColumn(price[key], false);
        int row = prog.addRow(0, std::numeric_limits<double>::infinity());
        prog.set(row, it->second, 1);
        for (int col : cols)
          prog.set(row, col, -1);
      }
    }
    // A key paid as a constant costs nothing more through its variable.
    for (const auto &key : forced)
      if (auto it = reshard.find(key); it != reshard.end())
        prog.obj[it->second] = 0;
  }
  double limit = problem.paramMemoryLimit() - fixedBytes;
  if (limit < 0)
    return fail("infeasible");
  int memoryRow = -1;
  for (unsigned v = 0; v < numNodes; ++v) {
    if (x[v][0] < 0)
      continue;
    for (auto [s, col] : llvm::enumerate(x[v])) {
      double bytes = problem.paramBytes(v, s);
      if (bytes == 0)
        continue;
      if (memoryRow < 0)
        memoryRow =
            prog.addRow(-std::numeric_limits<double>::infinity(), limit);
      prog.set(memoryRow, col, bytes);
    }
  }

  IntraOpPlan plan;
  plan.solvedNodes = numNodes;
  plan.meshAxes = problem.meshShape().size();
  plan.numVariables = prog.obj.size();
  plan.numIntegerVariables = llvm::count(prog.integer, true);
  plan.numConstraints = prog.rowLb.size();
  plan.choice.assign(numNodes, 0);

  // Re-prices the choice with the problem's own cost function, so the
  // objective is exact (not CBC's scaled, tolerance-limited value).
  auto finish = [&](IntraOpPlan &plan) {
    plan.objective = problem.cost(plan.choice);
    for (unsigned v = 0; v < numNodes; ++v) {
      plan.ops.push_back(problem.nodes()[v]);
      plan.strategies.push_back(problem.strategies(v)[plan.choice[v]]);
    }
    plan.bound = std::min(plan.bound, plan.objective);
    plan.gap = plan.objective > 0 ? std::max(0.0, (plan.objective - plan.bound) /
                                                      plan.objective)
                                  : 0.0;
    plan.solveSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    return plan;
  };
  if (!prog.obj.empty()) {
    OsiClpSolverInterface solver;
    solver.messageHandler()->setLogLevel(0);
    CoinPackedMatrix matrix(/*colordered=*/false, prog.tripletRow.data(),
                            prog.tripletCol.data(), prog.tripletValue.data(),
                            prog.tripletValue.size());
    matrix.setDimensions(prog.rowLb.size(), prog.obj.size());
    solver.loadProblem(matrix, prog.colLb.data(), prog.colUb.data(),
                       prog.obj.data(), prog.rowLb.data(), prog.rowUb.data());
    for (auto [col, isInteger] : llvm::enumerate(prog.integer))
      if (isInteger)
        solver.setInteger(col);

    // The relaxation first: rounded and improved (LocalSearch.cpp), a
    // choice within the gap of its bound needs no branch and bound.
    std::optional<std::vector<unsigned>> rounded;
    double relaxationBound = -std::numeric_limits<double>::infinity();
    if (options.lpRounding) {
      solver.getModelPtr()->setMaximumSeconds(options.timeLimitSeconds);
      // Always perturb (as CBC's driver does): these programs are highly
      // degenerate (many strategies tie), and the dual simplex stalls
      // without it; 3.5x faster on a GPT layer over a 2x2x2 mesh.
      solver.getModelPtr()->setPerturbation(50);
      solver.initialSolve();
      // CBC sets its own limit; the clone it makes must not carry this one.
      solver.getModelPtr()->setMaximumSeconds(-1);
      if (solver.isProvenOptimal()) {
        relaxationBound = solver.getObjValue() / kScale + constant;
        const double *values = solver.getColSolution();
        std::vector<std::vector<double>> weight(numNodes);
        for (unsigned v = 0; v < numNodes; ++v) {
          if (x[v][0] < 0)
            weight[v] = {1.0};
          else
            for (int col : x[v])
              weight[v].push_back(values[col]);
        }
        rounded = roundRelaxation(problem, weight);
        if (rounded)
          improveChoice(problem, *rounded, weight);
      }
    }
    if (rounded) {
      double cost = problem.cost(*rounded);
      bool close = cost - relaxationBound <= options.relativeGap * cost;
      if (close || options.maxNodes == 0) {
        // The program's own price of the choice (x fixed, the products
        // follow): a check of the formulation, as CBC's objective is.
        for (unsigned v = 0; v < numNodes; ++v)
          if (x[v][0] >= 0)
            for (auto [s, col] : llvm::enumerate(x[v]))
              solver.setColBounds(col, s == (*rounded)[v], s == (*rounded)[v]);
        solver.resolve();
        plan.choice = *rounded;
        plan.optimal = close;
        plan.solverObjective = solver.isProvenOptimal()
                                   ? solver.getObjValue() / kScale + constant
                                   : std::numeric_limits<double>::quiet_NaN();
        plan.bound = relaxationBound;
        plan.rounded = true;
        return finish(plan);
      }
    }

    // CBC's standalone driver adds its default cut generators and primal
    // heuristics, which a bare branchAndBound() lacks; they matter once
    // the memory row couples the layers.
    // CbcMain0/CbcMain1 keep state in globals: two solves at once (the
    // pass manager runs the search on functions in parallel) corrupt each
    // other and one comes back with no solution. One at a time.
    static std::mutex cbcDriver;
    std::lock_guard<std::mutex> oneSolveAtATime(cbcDriver);
    CbcModel model(solver);
    CbcSolverUsefulData data;
    data.noPrinting_ = true;
    CbcMain0(model, data);
    // A start CBC completes (its continuous columns by an LP): the rounded
    // relaxation where there is one, else every op on the strategy that
    // keeps the fewest parameter bytes, the cheapest among those. Either
    // meets the memory row (the latter whenever any choice does), so the
    // search returns a sharding within its time limit even where CBC's own
    // heuristics find none (large meshes of three axes).
    {
      std::vector<std::pair<std::string, double>> start;
      for (unsigned v = 0; v < numNodes; ++v) {
        if (x[v][0] < 0)
          continue;
        unsigned best = 0;
        if (rounded) {
          for (auto [st, col] : llvm::enumerate(x[v]))
            start.push_back(
                {solver.getColName(col), st == (*rounded)[v] ? 1.0 : 0.0});
          continue;
        }
        for (unsigned st = 1; st < x[v].size(); ++st) {
          double bytes = problem.paramBytes(v, st),
                 bestBytes = problem.paramBytes(v, best);
          if (bytes < bestBytes ||
              (bytes == bestBytes &&
               problem.nodeCost(v, st) < problem.nodeCost(v, best)))
            best = st;
        }
        for (auto [st, col] : llvm::enumerate(x[v]))
          start.push_back({solver.getColName(col), st == best ? 1.0 : 0.0});
      }
      model.setMIPStart(start);
    }
    data.useSignalHandler_ = false; // a library must not take over SIGINT
    model.setLogLevel(0);
    model.messageHandler()->setLogLevel(0);
    // What is left of the time limit after the relaxation.
    double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    std::string seconds =
        std::to_string(std::max(options.timeLimitSeconds - elapsed,
                                std::min(options.timeLimitSeconds, 1.0)));
    std::string gap = std::to_string(options.relativeGap);
    std::vector<const char *> argv = {"cleave", "-log",          "0",
                                      "-sec",   seconds.c_str(), "-ratioGap",
                                      gap.c_str()};
    // With the rounded relaxation as its start, CBC's own primal
    // heuristics found nothing better on the meshes we measured and took
    // most of the time (one dive: 34 s on a 2x2x2 mesh, unchecked by the
    // time limit); its time goes to branch and bound instead.
    if (rounded) {
      argv.push_back("-heuristicsOnOff");
      argv.push_back("off");
    }
    std::string nodes = std::to_string(options.maxNodes);
    if (options.maxNodes >= 0) {
      argv.push_back("-maxNodes");
      argv.push_back(nodes.c_str());
    }
    argv.push_back("-solve");
    argv.push_back("-quit");
    CbcMain1(
        argv.size(), argv.data(), model, [](CbcModel *, int) { return 0; }, data);
    if (model.isProvenInfeasible())
      return fail("infeasible");
    const double *solution = model.bestSolution();
    if (!solution)
      return fail("time limit");
    for (unsigned v = 0; v < numNodes; ++v) {
      if (x[v][0] < 0)
        continue;
      for (auto [s, col] : llvm::enumerate(x[v]))
        if (solution[col] > 0.5)
          plan.choice[v] = s;
    }
    plan.optimal = model.isProvenOptimal();
    plan.solverObjective = model.getObjValue() / kScale + constant;
    plan.bound = std::max(model.getBestPossibleObjValue() / kScale + constant,
                          relaxationBound);
  } else {
    plan.optimal = true;
    plan.bound = problem.cost(plan.choice);
    plan.solverObjective = problem.cost(plan.choice);
  }
  return finish(plan);
}

FailureOr<IntraOpPlan> solveIntraOp(const IntraOpProblem &problem,
                                    const IntraOpOptions &options,
                                    std::string *whyNot) {
  auto start = std::chrono::steady_clock::now();
  // Reduce: tie repeated layers, then merge the ops that must follow their
  // producer. Each step records where a node's strategy comes from.
  struct Step {
    std::vector<unsigned> index;
    std::vector<std::vector<unsigned>> strategyOf;
  };
  std::vector<Step> steps;
  std::vector<IntraOpProblem> reduced;
  reduced.reserve(2);
  const IntraOpProblem *current = &problem;
  auto reduce = [&](llvm::ArrayRef<unsigned> into,
                    llvm::ArrayRef<std::vector<unsigned>> strategyOf,
                    llvm::ArrayRef<int> followed) {
    Step step;
    reduced.push_back(current->merged(into, strategyOf, followed, step.index));
    step.strategyOf.assign(strategyOf.begin(), strategyOf.end());
    steps.push_back(std::move(step));
    current = &reduced.back();
  };
  if (options.tieRepeatedLayers) {
    std::vector<unsigned> representative =
        repeatedLayerRepresentatives(problem);
    if (llvm::any_of(llvm::enumerate(representative),
                     [](auto r) { return r.value() != r.index(); }))
      reduce(representative, {}, {});
  }
  if (options.mergeFollowers) {
    Followers f = findFollowers(*current);
    if (llvm::any_of(f.followed, [](int u) { return u >= 0; }))
      reduce(f.into, f.strategyOf, f.followed);
  }
  if (steps.empty())
    return solveProgram(problem, options, whyNot);

  FailureOr<IntraOpPlan> solved = solveProgram(*current, options, whyNot);
  if (failed(solved))
    return failure();
  // Every op takes its strategy from the reduced choice, step by step back
  // to the whole problem, on which the objective is priced again (the
  // reduced one's, up to rounding).
  std::vector<unsigned> choice = solved->choice;
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
    std::vector<unsigned> wider;
    for (unsigned v = 0; v < it->index.size(); ++v) {
      unsigned c = choice[it->index[v]];
      bool mapped = v < it->strategyOf.size() && !it->strategyOf[v].empty();
      wider.push_back(mapped ? it->strategyOf[v][c] : c);
    }
    choice = std::move(wider);
  }
  IntraOpPlan plan = *solved;
  plan.choice = choice;
  plan.ops.clear();
  plan.strategies.clear();
  for (unsigned v = 0; v < problem.nodes().size(); ++v) {
    plan.ops.push_back(problem.nodes()[v]);
    plan.strategies.push_back(problem.strategies(v)[choice[v]]);
  }
  plan.objective = problem.cost(plan.choice);
  plan.solvedNodes = current->nodes().size();
  plan.solveSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return plan;
}

FailureOr<IntraOpPlan> searchIntraOp(func::FuncOp func,
                                     const cost::Cluster &cluster,
                                     llvm::ArrayRef<int64_t> meshShape,
                                     const IntraOpOptions &options) {
  FailureOr<IntraOpProblem> problem =
      IntraOpProblem::build(func, cluster, meshShape, options);
  if (failed(problem))
    return failure();
  std::string whyNot;
  FailureOr<IntraOpPlan> plan = solveIntraOp(*problem, options, &whyNot);
  if (failed(plan) && whyNot == "infeasible")
    return func.emitOpError()
           << "no sharding fits the parameter memory limit of "
           << int64_t(problem->paramMemoryLimit()) << " bytes per device";
  if (failed(plan))
    return func.emitOpError()
           << "CBC found no sharding within the time limit of "
           << options.timeLimitSeconds << " s";
  return plan;
}

} // namespace cleave::search
