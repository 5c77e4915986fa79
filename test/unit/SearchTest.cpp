//===- SearchTest.cpp - Intra-operator sharding search
//---------------------===//
//
// The search on a GPT block, tensor-parallel over the 8 GPUs of a DGX A100,
// must rediscover Megatron-LM's split (Shoeybi et al. 2019): the first MLP
// matmul split on its output columns, the second on its input rows with
// one all-reduce of the partial sums, and the same column-then-row pattern
// through attention with the heads split in between.
//
//===----------------------------------------------------------------------===//

#include "SearchTestUtil.h"

#include "cleave/Dialect/Graph/IR/GraphOps.h"
#include "cleave/Dialect/Graph/IR/ShapeInference.h"
#include "cleave/Importers/ModelLoader.h"
#include "cleave/Importers/ModelZoo.h"
#include "cleave/cost_model/Cluster.h"
#include "cleave/cost_model/Collectives.h"
#include "cleave/cost_model/OperatorCost.h"
#include "cleave/cost_model/Profile.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "gtest/gtest.h"

#include <iostream>

using namespace mlir;
using namespace cleave;
using namespace cleave::search;
using namespace cleave::search::testutil;

namespace {

constexpr llvm::StringLiteral kGptBlock =
    "gpt,layers=1,hidden=1024,heads=16,seq=512,vocab=1000,batch=4";
constexpr llvm::StringLiteral kGpt2Layers =
    "gpt,layers=2,hidden=1024,heads=16,seq=512,vocab=1000,batch=4";
constexpr llvm::StringLiteral kMoeLayer =
    "moe,layers=1,hidden=256,heads=4,kv_heads=4,ffn=512,vocab=100,seq=256,"
    "batch=8,experts=8,top_k=2";

/// Training keeps about 16 bytes of state per 4-byte fp32 parameter
/// (weights, gradients, Adam's moments); a budget of 1.5x the even share
/// forces the large weights to be sharded, as it would in training.
IntraOpOptions shardedParamOptions(func::FuncOp f, int64_t mesh) {
  IntraOpOptions o;
  o.paramMemoryBytes = 1.5 * totalParamBytes(f) / mesh;
  return o;
}

/// The matmul whose right operand is the parameter `name`.
graph::MatmulOp matmulOf(func::FuncOp f, llvm::StringRef name) {
  graph::MatmulOp found;
  f.walk([&](graph::MatmulOp mm) {
    if (auto p = mm.getRhs().getDefiningOp<graph::ParamOp>())
      if (p.getName() == name)
        found = mm;
  });
  EXPECT_TRUE(found) << name.str();
  return found;
}

const ShardingStrategy &chosen(const IntraOpProblem &p, const IntraOpPlan &plan,
                               Operation *op) {
  unsigned node = *p.nodeOf(op);
  return p.strategies(node)[plan.choice[node]];
}

/// Megatron-LM's assignment written by hand: q/k/v/fc column-split,
/// o_proj/proj row-split with an all-reduce, the score and context
/// matmuls split over heads; every other op follows its producers when a
/// strategy reads exactly their layouts (else runs replicated); parameters
/// take the layout their consumer reads.
std::vector<unsigned> megatronChoice(const IntraOpProblem &p) {
  std::vector<unsigned> choice = p.replicatedChoice();
  auto pick = [&](unsigned node, llvm::StringRef name) {
    for (auto [i, s] : llvm::enumerate(p.strategies(node)))
      if (s.name == name) {
        choice[node] = i;
        return true;
      }
    return false;
  };
  llvm::DenseMap<unsigned, llvm::SmallVector<const IntraOpEdge *>> inEdges;
  for (const IntraOpEdge &e : p.edges())
    inEdges[e.consumer].push_back(&e);

  for (auto [node, op] : llvm::enumerate(p.nodes())) {
    if (isa<graph::ParamOp>(op))
      continue;
    if (auto mm = dyn_cast<graph::MatmulOp>(op)) {
      if (auto w = mm.getRhs().getDefiningOp<graph::ParamOp>()) {
        llvm::StringRef name = w.getName();
        if (name.contains("q_proj") || name.contains("k_proj") ||
            name.contains("v_proj") || name.contains("mlp.fc")) {
          EXPECT_TRUE(pick(node, "matmul.n")) << name.str();
        } else if (name.contains("o_proj") || name.contains("mlp.proj")) {
          EXPECT_TRUE(pick(node, "matmul.k+ar")) << name.str();
        } else if (name == "wte.weight") { // vocab-parallel LM head
          EXPECT_TRUE(pick(node, "matmul.n")) << name.str();
        }
        continue;
      }
      if (pick(node, "matmul.b1"))
        continue;
    }
    if (isa<graph::GatherOp>(op) && pick(node, "gather.rows+ar"))
      continue;
    // Follow the producers: the cheapest strategy that reads exactly the
    // layouts its non-parameter producers chose.
    bool found = false;
    for (unsigned st = 0; st < p.strategies(node).size(); ++st) {
      bool exact = llvm::all_of(inEdges[node], [&](const IntraOpEdge *e) {
        return isa<graph::ParamOp>(p.nodes()[e->producer]) ||
               p.strategies(e->producer)[choice[e->producer]]
                       .results[e->result] ==
                   p.strategies(node)[st].operands[e->operand];
      });
      if (exact &&
          (!found || p.nodeCost(node, st) < p.nodeCost(node, choice[node]))) {
        choice[node] = st;
        found = true;
      }
    }
  }
  // Parameters: the layout their (first) consumer reads.
  for (const IntraOpEdge &e : p.edges()) {
    if (!isa<graph::ParamOp>(p.nodes()[e.producer]))
      continue;
    int64_t want =
        p.strategies(e.consumer)[choice[e.consumer]].operands[e.operand];
    for (auto [i, s] : llvm::enumerate(p.strategies(e.producer)))
      if (s.results[0] == want)
        choice[e.producer] = i;
  }
  return choice;
}

/// The forward pass's collectives of the chosen plan among `ops`: their
/// own, and resharding on the edges into them (a layout read that the
/// producer's is not, unless the producer's is replicated: slicing).
int countCollectives(const IntraOpProblem &p, const IntraOpPlan &plan,
                     llvm::ArrayRef<Operation *> ops) {
  int count = 0;
  llvm::DenseSet<unsigned> nodes;
  for (Operation *op : ops) {
    nodes.insert(*p.nodeOf(op));
    count += chosen(p, plan, op).collectives.size();
  }
  for (const IntraOpEdge &e : p.edges()) {
    if (!nodes.contains(e.consumer))
      continue;
    int64_t made =
        p.strategies(e.producer)[plan.choice[e.producer]].results[e.result];
    int64_t read = e.required[plan.choice[e.consumer]];
    if (made != read && made != kReplicated)
      ++count;
  }
  return count;
}

void printPlan(const IntraOpProblem &p, const IntraOpPlan &plan) {
  for (auto [op, s] : llvm::zip(plan.ops, plan.strategies)) {
    if (isa<graph::ParamOp, graph::InputOp, graph::ConstantOp>(op))
      continue;
    std::cout << "  " << op->getName().getStringRef().str() << " -> " << s.name
              << "\n";
  }
}

/// Prints the problem's size and the solve (the numbers in the docs), and
/// the plan itself when CLEAVE_PRINT_PLAN is set.
void report(const char *label, const IntraOpProblem &problem,
            const IntraOpPlan &plan) {
  std::cout << label << ": " << problem.nodes().size() << " ops, "
            << problem.edges().size() << " edges; ILP " << plan.numVariables
            << " variables (" << plan.numIntegerVariables << " binary), "
            << plan.numConstraints << " constraints; solved in "
            << plan.solveSeconds << " s, objective " << plan.objective * 1e3
            << " ms, gap " << plan.gap << (plan.optimal ? " (optimal)" : "")
            << "\n";
  if (getenv("CLEAVE_PRINT_PLAN"))
    printPlan(problem, plan);
}

TEST(IntraOpSearch, GptBlockRediscoversMegatron) {
  Model m = load(kGptBlock);
  ASSERT_TRUE(m.forward);
  cost::Cluster cluster = dgx();
  IntraOpOptions options = shardedParamOptions(m.forward, 8);
  auto problem = IntraOpProblem::build(m.forward, cluster, 8, options);
  ASSERT_TRUE(succeeded(problem));
  auto plan = solveIntraOp(*problem, options);
  ASSERT_TRUE(succeeded(plan));
  report("GPT block", *problem, *plan);
  EXPECT_TRUE(plan->optimal);
  EXPECT_LE(problem->paramBytes(plan->choice), options.paramMemoryBytes);

  // MLP: column split, then row split with partial sums.
  auto fc = matmulOf(m.forward, "h.0.mlp.fc.weight");
  auto proj = matmulOf(m.forward, "h.0.mlp.proj.weight");
  EXPECT_EQ(chosen(*problem, *plan, fc).name, "matmul.n");
  EXPECT_EQ(chosen(*problem, *plan, fc).operands[1], 1);
  const ShardingStrategy &projS = chosen(*problem, *plan, proj);
  EXPECT_EQ(projS.operands[1], 0);
  EXPECT_NE(projS.partial, PartialReduction::None);

  // Exactly one all-reduce for the MLP (or reduce-scatter + all-gather):
  // the ops from the fc matmul to the proj bias add.
  SmallVector<Operation *> mlp;
  bool inside = false;
  for (Operation &op : m.forward.getBody().front()) {
    if (&op == fc.getOperation())
      inside = true;
    if (inside && !isa<graph::ParamOp>(op))
      mlp.push_back(&op);
    if (inside && op.getNumOperands() && op.getOperand(0) == proj.getResult())
      break;
  }
  int mlpCollectives = countCollectives(*problem, *plan, mlp);
  // Megatron-LM's all-reduce, or its sequence-parallel form (Korthikanti
  // et al. 2022): all-gather into fc, reduce-scatter out of proj.
  if (projS.partial == PartialReduction::AllReduce) {
    EXPECT_EQ(mlpCollectives, 1);
  } else {
    EXPECT_EQ(mlpCollectives, 2);
  }

  // Attention: q/k/v column split, heads split, o_proj row split.
  for (llvm::StringRef w : {"h.0.attn.q_proj.weight", "h.0.attn.k_proj.weight",
                            "h.0.attn.v_proj.weight"})
    EXPECT_EQ(chosen(*problem, *plan, matmulOf(m.forward, w)).name, "matmul.n")
        << w.str();
  const ShardingStrategy &oProj =
      chosen(*problem, *plan, matmulOf(m.forward, "h.0.attn.o_proj.weight"));
  EXPECT_EQ(oProj.operands[1], 0);
  EXPECT_NE(oProj.partial, PartialReduction::None);
  m.forward.walk([&](graph::MatmulOp mm) {
    if (!mm.getRhs().getDefiningOp<graph::ParamOp>()) {
      EXPECT_EQ(chosen(*problem, *plan, mm).name, "matmul.b1");
    }
  });
  m.forward.walk([&](graph::SoftmaxOp sm) {
    EXPECT_EQ(chosen(*problem, *plan, sm).results[0], 1);
  });
}

TEST(IntraOpSearch, ObjectiveBeatsReplicatedAndMegatron) {
  Model m = load(kGptBlock);
  ASSERT_TRUE(m.forward);
  cost::Cluster cluster = dgx();

  // No memory pressure: the replicated choice is feasible.
  IntraOpOptions free;
  auto p0 = IntraOpProblem::build(m.forward, cluster, 8, free);
  ASSERT_TRUE(succeeded(p0));
  auto plan0 = solveIntraOp(*p0, free);
  ASSERT_TRUE(succeeded(plan0));
  double replicated = p0->cost(p0->replicatedChoice());
  EXPECT_LE(plan0->objective, replicated * (1 + 1e-9));
  EXPECT_LT(plan0->objective, replicated / 2);

  // Under the parameter budget, against Megatron written by hand.
  IntraOpOptions options = shardedParamOptions(m.forward, 8);
  auto p = IntraOpProblem::build(m.forward, cluster, 8, options);
  ASSERT_TRUE(succeeded(p));
  auto plan = solveIntraOp(*p, options);
  ASSERT_TRUE(succeeded(plan));
  std::vector<unsigned> megatron = megatronChoice(*p);
  EXPECT_LE(p->paramBytes(megatron), options.paramMemoryBytes);
  double megatronCost = p->cost(megatron);
  std::cout << "replicated " << replicated * 1e3 << " ms, unconstrained ILP "
            << plan0->objective * 1e3 << " ms; Megatron by hand "
            << megatronCost * 1e3 << " ms, ILP " << plan->objective * 1e3
            << " ms\n";
  EXPECT_LE(plan->objective, megatronCost * (1 + 1e-9));
  EXPECT_LT(megatronCost, replicated);
  // The program prices a choice as IntraOpProblem::cost does (with values
  // read by several consumers resharded once per layout).
  EXPECT_NEAR(plan->solverObjective, plan->objective, 1e-6 * plan->objective);
  EXPECT_NEAR(plan0->solverObjective, plan0->objective,
              1e-6 * plan0->objective);
}

TEST(IntraOpSearch, TwoLayerGpt) {
  Model m = load(kGpt2Layers);
  ASSERT_TRUE(m.forward);
  IntraOpOptions options = shardedParamOptions(m.forward, 8);
  auto p = IntraOpProblem::build(m.forward, dgx(), 8, options);
  ASSERT_TRUE(succeeded(p));
  auto plan = solveIntraOp(*p, options);
  ASSERT_TRUE(succeeded(plan));
  std::cout << "GPT 2 layers: " << p->nodes().size() << " ops; ILP "
            << plan->numVariables << " variables, " << plan->numConstraints
            << " constraints; solved in " << plan->solveSeconds << " s, gap "
            << plan->gap << "\n";
  EXPECT_TRUE(plan->optimal);
  EXPECT_NEAR(plan->solverObjective, plan->objective, 1e-6 * plan->objective);
  for (int layer = 0; layer < 2; ++layer) {
    std::string prefix = "h." + std::to_string(layer) + ".mlp.";
    EXPECT_EQ(chosen(*p, *plan, matmulOf(m.forward, prefix + "fc.weight")).name,
              "matmul.n");
    EXPECT_NE(
        chosen(*p, *plan, matmulOf(m.forward, prefix + "proj.weight")).partial,
        PartialReduction::None);
  }
}

/// A Mixtral-style MoE layer (8 experts, top-2) on 8 GPUs whose expert
/// weights cannot be replicated: the search must find expert parallelism
/// (Lepikhin et al. 2020, GShard): every expert weight split on the expert
/// dimension, tokens sent to their experts' devices by an all-to-all after
/// dispatch and brought back by one before combine.
TEST(IntraOpSearch, MoeLayerRediscoversExpertParallelAllToAll) {
  Model m = load(kMoeLayer);
  ASSERT_TRUE(m.forward);
  cost::Cluster cluster = dgx();
  IntraOpOptions options = shardedParamOptions(m.forward, 8);
  auto p = IntraOpProblem::build(m.forward, cluster, 8, options);
  ASSERT_TRUE(succeeded(p));
  auto plan = solveIntraOp(*p, options);
  ASSERT_TRUE(succeeded(plan));
  report("MoE layer", *p, *plan);
  EXPECT_TRUE(plan->optimal);
  EXPECT_LE(p->paramBytes(plan->choice), options.paramMemoryBytes);
  EXPECT_NEAR(plan->solverObjective, plan->objective, 1e-6 * plan->objective);

  // Expert weights [E, H, F] split on E, each device holding 1/8 of them.
  int experts = 0;
  m.forward.walk([&](graph::ParamOp w) {
    if (!w.getName().contains("experts."))
      return;
    ++experts;
    unsigned node = *p->nodeOf(w);
    EXPECT_EQ(chosen(*p, *plan, w).results[0], 0) << w.getName().str();
    EXPECT_DOUBLE_EQ(p->paramBytes(node, plan->choice[node]),
                     graph::tensorBytes(w.getType()) / 8.0);
  });
  EXPECT_EQ(experts, 3);

  auto hasAllToAll = [](const ShardingStrategy &s) {
    return llvm::any_of(s.collectives, [](const StrategyCollective &c) {
      return c.kind == cost::Collective::AllToAll;
    });
  };
  int dispatches = 0, combines = 0;
  m.forward.walk([&](graph::MoeDispatchOp d) {
    ++dispatches;
    const ShardingStrategy &s = chosen(*p, *plan, d);
    EXPECT_EQ(s.results[0], 0);
    EXPECT_TRUE(hasAllToAll(s)) << s.name;
  });
  m.forward.walk([&](graph::MoeCombineOp c) {
    ++combines;
    const ShardingStrategy &s = chosen(*p, *plan, c);
    EXPECT_EQ(s.operands[0], 0);
    EXPECT_TRUE(hasAllToAll(s)) << s.name;
  });
  EXPECT_EQ(dispatches, 1);
  EXPECT_EQ(combines, 1);
  // The expert matmuls run one expert per device.
  m.forward.walk([&](graph::MatmulOp mm) {
    auto w = mm.getRhs().getDefiningOp<graph::ParamOp>();
    if (w && w.getName().contains("experts.")) {
      EXPECT_EQ(chosen(*p, *plan, mm).name, "matmul.b0") << w.getName().str();
    }
  });

  // Without the budget, replicating everything is feasible; the search,
  // priced by the same cost function, does no worse.
  IntraOpOptions free;
  auto p0 = IntraOpProblem::build(m.forward, cluster, 8, free);
  ASSERT_TRUE(succeeded(p0));
  auto plan0 = solveIntraOp(*p0, free);
  ASSERT_TRUE(succeeded(plan0));
  double replicated = p0->cost(p0->replicatedChoice());
  std::cout << "MoE layer: replicated " << replicated * 1e3
            << " ms, unconstrained ILP " << plan0->objective * 1e3
            << " ms, budgeted ILP " << plan->objective * 1e3 << " ms\n";
  EXPECT_LE(plan0->objective, replicated * (1 + 1e-9));
  EXPECT_LE(plan->objective, replicated * (1 + 1e-9));
}

TEST(ShardingStrategies, MoeOpsOfferExpertParallelism) {
  Model m = parse(
      "func.func @f(%x: tensor<64x16xf32>, %l: tensor<64x8xf32>) -> "
      "tensor<64x16xf32> {\n"
      "  %w, %i = graph.moe_gate %l top_k = 2 renormalize : tensor<64x8xf32>\n"
      "  %d = graph.moe_dispatch %x, %i experts = 8 capacity = 16 : "
      "tensor<64x16xf32>, tensor<64x2xi64>\n"
      "  %c = graph.moe_combine %d, %w, %i : tensor<8x16x16xf32>, "
      "tensor<64x2xf32>, tensor<64x2xi64>\n"
      "  return %c : tensor<64x16xf32>\n}");
  ASSERT_TRUE(m.module);
  std::vector<std::string> names;
  SmallVector<ShardingStrategy, 8> all;
  m.module->walk([&](ShardingStrategyOpInterface op) {
    SmallVector<ShardingStrategy, 4> strategies;
    op.getShardingStrategies(8, strategies);
    for (ShardingStrategy &s : strategies) {
      names.push_back(s.name);
      all.push_back(std::move(s));
    }
  });
  EXPECT_EQ(names, (std::vector<std::string>{
                       "replicated", "split0", "replicated", "dispatch.a2a",
                       "dispatch.experts", "replicated", "combine.a2a",
                       "combine.experts+ar"}));
  ASSERT_EQ(all.size(), 8u);
  EXPECT_EQ(all[1].results, (SmallVector<int64_t>{0, 0}));
  // Tokens split on T, result on E, one all-to-all of result / n bytes.
  EXPECT_EQ(all[3].operands, (SmallVector<int64_t>{0, 0}));
  EXPECT_EQ(all[3].results, (SmallVector<int64_t>{0}));
  ASSERT_EQ(all[3].collectives.size(), 1u);
  EXPECT_EQ(all[3].collectives[0].kind, cost::Collective::AllToAll);
  EXPECT_DOUBLE_EQ(all[3].collectives[0].bytes, 8 * 16 * 16 * 4 / 8.0);
  // Replicated tokens, each device keeps its experts' slots for free.
  EXPECT_EQ(all[4].operands, (SmallVector<int64_t>{kReplicated, kReplicated}));
  EXPECT_TRUE(all[4].collectives.empty());
  EXPECT_EQ(all[6].operands, (SmallVector<int64_t>{0, 0, 0}));
  EXPECT_EQ(all[6].results, (SmallVector<int64_t>{0}));
  EXPECT_EQ(all[6].collectives[0].kind, cost::Collective::AllToAll);
  EXPECT_EQ(all[7].operands,
            (SmallVector<int64_t>{0, kReplicated, kReplicated}));
  EXPECT_EQ(all[7].results, (SmallVector<int64_t>{kReplicated}));
  EXPECT_EQ(all[7].partial, PartialReduction::AllReduce);
  EXPECT_EQ(all[7].collectives[0].kind, cost::Collective::AllReduce);
  EXPECT_DOUBLE_EQ(all[7].collectives[0].bytes, 64 * 16 * 4);
}

TEST(IntraOpSearch, MeshOfOneIsReplicated) {
  Model m = load(kGptBlock);
  ASSERT_TRUE(m.forward);
  IntraOpOptions options;
  auto plan = searchIntraOp(m.forward, dgx(), 1, options);
  ASSERT_TRUE(succeeded(plan));
  for (const ShardingStrategy &s : plan->strategies)
    EXPECT_EQ(s.name, "replicated");
}

TEST(IntraOpSearch, ImpossibleMemoryLimitFails) {
  Model m = load(kGptBlock);
  ASSERT_TRUE(m.forward);
  IntraOpOptions options;
  options.paramMemoryBytes = totalParamBytes(m.forward) / 64;
  ScopedDiagnosticHandler quiet(m.ctx.get(),
                                [](Diagnostic &) { return success(); });
  EXPECT_TRUE(failed(searchIntraOp(m.forward, dgx(), 8, options)));
}

/// The (operand, result) layouts an op's strategies offer on `mesh`.
std::vector<std::pair<int64_t, int64_t>> layouts(llvm::StringRef body,
                                                 int64_t mesh) {
  Model m = parse("func.func @f(%x: " + body.str());
  std::vector<std::pair<int64_t, int64_t>> out;
  if (!m.module)
    return out;
  m.module->walk([&](ShardingStrategyOpInterface op) {
    SmallVector<ShardingStrategy, 4> strategies;
    op.getShardingStrategies(mesh, strategies);
    for (const ShardingStrategy &s : strategies)
      out.push_back({s.operands[0], s.results[0]});
  });
  return out;
}

TEST(ShardingStrategies, ReshapeSplitsLeadingFactorOfAGroup) {
  using L = std::vector<std::pair<int64_t, int64_t>>;
  // [8, 6] -> [48] is one group led by 8; [16] -> [16] is its own.
  EXPECT_EQ(layouts("tensor<8x6x16xf32>) -> tensor<48x16xf32> {\n"
                    "  %r = graph.reshape %x : tensor<8x6x16xf32> -> "
                    "tensor<48x16xf32>\n  return %r : tensor<48x16xf32>\n}",
                    8),
            (L{{-1, -1}, {0, 0}, {2, 1}}));
  // A leading factor the mesh does not divide falls back to replicated.
  EXPECT_EQ(layouts("tensor<6x8xf32>) -> tensor<48xf32> {\n"
                    "  %r = graph.reshape %x : tensor<6x8xf32> -> "
                    "tensor<48xf32>\n  return %r : tensor<48xf32>\n}",
                    4),
            (L{{-1, -1}}));
}

TEST(ShardingStrategies, MatmulOffersBatchMNAndK) {
  Model m = parse(
      "func.func @f(%a: tensor<8x64x32xf32>, %b: tensor<32x16xf32>) -> "
      "tensor<8x64x16xf32> {\n"
      "  %c = graph.matmul %a, %b : tensor<8x64x32xf32>, tensor<32x16xf32>\n"
      "  return %c : tensor<8x64x16xf32>\n}");
  ASSERT_TRUE(m.module);
  SmallVector<ShardingStrategy, 8> strategies;
  m.module->walk([&](graph::MatmulOp mm) {
    cast<ShardingStrategyOpInterface>(mm.getOperation())
        .getShardingStrategies(8, strategies);
  });
  std::vector<std::string> names;
  for (const ShardingStrategy &s : strategies)
    names.push_back(s.name);
  EXPECT_EQ(names, (std::vector<std::string>{"replicated", "matmul.b0",
                                             "matmul.m", "matmul.n",
                                             "matmul.k+rs0", "matmul.k+rs1",
                                             "matmul.k+rs2", "matmul.k+ar"}));
  // b0 splits the lhs batch and leaves the 2-D rhs whole; k splits both.
  EXPECT_EQ(strategies[1].operands, (SmallVector<int64_t>{0, kReplicated}));
  EXPECT_EQ(strategies[7].operands, (SmallVector<int64_t>{2, 0}));
  EXPECT_EQ(strategies[7].partial, PartialReduction::AllReduce);
  ASSERT_TRUE(strategies[3].gemm);
  EXPECT_EQ(strategies[3].gemm->n, 2);
  EXPECT_EQ(strategies[0].gemm->n, 16);
}

/// The names of the strategies that the last op before the return offers.
std::vector<std::string> strategyNames(llvm::StringRef func, int64_t mesh) {
  Model m = parse(func.str());
  std::vector<std::string> names;
  if (!m.module)
    return names;
  Operation *last = nullptr;
  m.module->walk([&](ShardingStrategyOpInterface op) { last = op; });
  if (!last)
    return names;
  SmallVector<ShardingStrategy, 8> strategies;
  cast<ShardingStrategyOpInterface>(last).getShardingStrategies(mesh,
                                                                strategies);
  for (const ShardingStrategy &s : strategies)
    names.push_back(s.name);
  return names;
}

using Names = std::vector<std::string>;

TEST(ShardingStrategies, ConvolutionSplitsImagesOrChannels) {
  auto conv = [](llvm::StringRef filter, int groups, bool bias) {
    std::string f = filter.str();
    std::string b = bias ? " bias(%b : tensor<" +
                               f.substr(0, f.find('x')) + "xf32>)"
                         : "";
    return "func.func @f(%x: tensor<4x16x8x8xf32>, %w: tensor<" + f +
           "xf32>, %b: tensor<" + f.substr(0, f.find('x')) +
           "xf32>) -> tensor<4x32x8x8xf32> {\n"
           "  %y = graph.conv2d %x, %w" + b +
           " strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups = " +
           std::to_string(groups) + " : tensor<4x16x8x8xf32>, tensor<" + f +
           "xf32>\n  return %y : tensor<4x32x8x8xf32>\n}";
  };
  // Images, output channels, input channels (partial sums reduced).
  EXPECT_EQ(strategyNames(conv("32x16x3x3", 1, false), 2),
            (Names{"replicated", "conv.batch", "conv.out", "conv.in+rs0",
                   "conv.in+rs1", "conv.in+ar"}));
  // With a bias every device would add it to its partial sum.
  EXPECT_EQ(strategyNames(conv("32x16x3x3", 1, true), 2),
            (Names{"replicated", "conv.batch", "conv.out"}));
  // Grouped: whole groups per device; 16 groups do not divide over 32.
  EXPECT_EQ(strategyNames(conv("32x1x3x3", 16, false), 4),
            (Names{"replicated", "conv.batch", "conv.groups"}));
  EXPECT_EQ(strategyNames(conv("32x1x3x3", 16, false), 32),
            (Names{"replicated"}));
}

TEST(ShardingStrategies, BatchNormInTrainingSplitsOnlyChannels) {
  auto bn = [](bool training) {
    std::string t = "tensor<8x16x4x4xf32>", c = "tensor<16xf32>";
    return "func.func @f(%x: " + t + ", %s: " + c + ") -> " + t +
           " {\n  %y = graph.batch_norm %x, %s, %s, %s, %s epsilon = "
           "1.000000e-05" +
           (training ? " training" : "") + " : " + t + ", " + c + ", " + c +
           ", " + c + ", " + c + "\n  return %y : " + t + "\n}";
  };
  EXPECT_EQ(strategyNames(bn(true), 2), (Names{"replicated", "split1"}));
  EXPECT_EQ(strategyNames(bn(false), 2),
            (Names{"replicated", "split0", "split1", "split2", "split3"}));
}

TEST(ShardingStrategies, SliceSplitsWhatItTakesWhole) {
  // Dimension 1 is cut, 0 and 2 are taken whole.
  EXPECT_EQ(strategyNames("func.func @f(%x: tensor<4x8x6xf32>) -> "
                          "tensor<4x2x6xf32> {\n"
                          "  %y = graph.slice %x starts [0, 2, 0] limits "
                          "[4, 4, 6] strides [1, 1, 1] : tensor<4x8x6xf32>\n"
                          "  return %y : tensor<4x2x6xf32>\n}",
                          2),
            (Names{"replicated", "split0", "split2"}));
}

TEST(ShardingStrategies, ReductionsKeepOrSumTheirDimensions) {
  auto reduce = [](llvm::StringRef op) {
    return "func.func @f(%x: tensor<4x8x6xf32>) -> tensor<4x6xf32> {\n"
           "  %y = graph." + op.str() + " %x [1] : tensor<4x8x6xf32>\n"
           "  return %y : tensor<4x6xf32>\n}";
  };
  // A sum over a split dimension leaves partial sums; a mean or a maximum
  // does not offer it.
  EXPECT_EQ(strategyNames(reduce("reduce_sum"), 2),
            (Names{"replicated", "split0", "reduce.partial1", "split1"}));
  EXPECT_EQ(strategyNames(reduce("reduce_max"), 2),
            (Names{"replicated", "split0", "split1"}));
}

TEST(IntraOpSearch, SharedReshardingIsPaidOnce) {
  // Three projections of one activation, as q/k/v are.
  Model m = parse(
      "func.func @f() -> (tensor<512x256xf32>, tensor<512x256xf32>, "
      "tensor<512x256xf32>) {\n"
      "  %x = graph.input \"x\" : tensor<512x256xf32>\n"
      "  %w = graph.param \"w\" : tensor<256x256xf32>\n"
      "  %a = graph.matmul %x, %w : tensor<512x256xf32>, tensor<256x256xf32>\n"
      "  %b = graph.matmul %x, %w : tensor<512x256xf32>, tensor<256x256xf32>\n"
      "  %c = graph.matmul %x, %w : tensor<512x256xf32>, tensor<256x256xf32>\n"
      "  return %a, %b, %c : tensor<512x256xf32>, tensor<512x256xf32>, "
      "tensor<512x256xf32>\n}");
  ASSERT_TRUE(m.forward);
  auto p = IntraOpProblem::build(m.forward, dgx(), 8, {});
  ASSERT_TRUE(succeeded(p));
  // x split by rows, every matmul replicated: one all-gather of x, which
  // the three matmuls share.
  std::vector<unsigned> choice = p->replicatedChoice();
  double replicated = p->cost(choice);
  unsigned x = 0;
  ASSERT_EQ(p->strategies(x)[1].name, "split0");
  choice[x] = 1;
  const IntraOpEdge &edge = p->edges().front();
  ASSERT_EQ(edge.producer, x);
  double allGather = edge.cost[1][0];
  EXPECT_GT(allGather, 0);
  EXPECT_NEAR(p->cost(choice), replicated + allGather, 1e-15);
}

TEST(IntraOpSearch, CollectivesWaitForTheSlowestRankWhereRanksShareCores) {
  // On 8 ranks sharing 4 cores, a profile's in_step_collective_wait makes
  // every collective wait for the slowest time-sliced rank: the all-gather
  // of x costs its own time plus cost::inStepCollectiveWait.
  // With a core a rank there is no wait.
  Model m = parse(
      "func.func @f() -> tensor<512x256xf32> {\n"
      "  %x = graph.input \"x\" : tensor<512x256xf32>\n"
      "  %w = graph.param \"w\" : tensor<256x256xf32>\n"
      "  %a = graph.matmul %x, %w : tensor<512x256xf32>, tensor<256x256xf32>\n"
      "  return %a : tensor<512x256xf32>\n}");
  ASSERT_TRUE(m.forward);
  cost::Profile plain, slowed;
  slowed.inStepCollectiveWait = 1e-3;
  auto gatherOfX = [&](const char *spec, const cost::Profile &profile) {
    auto cluster = cost::parseCluster(spec);
    EXPECT_TRUE(cluster.ok());
    IntraOpOptions options;
    options.profile = &profile;
    auto p = IntraOpProblem::build(m.forward, *cluster, 8, options);
    EXPECT_TRUE(succeeded(p));
    if (failed(p) || p->edges().empty())
      return 0.0;
    const IntraOpEdge &edge = p->edges().front();
    EXPECT_EQ(p->strategies(edge.producer)[1].name, "split0");
    return edge.cost[1][0];
  };
  auto shared = cost::parseCluster("cpu-local,devices=8,cores=4");
  ASSERT_TRUE(shared.ok());
  double wait = cost::inStepCollectiveWait(*shared, &slowed);
  EXPECT_GT(wait, 0);
  const char *sharedSpec = "cpu-local,devices=8,cores=4";
  EXPECT_NEAR(gatherOfX(sharedSpec, slowed) - gatherOfX(sharedSpec, plain),
              wait, 1e-12);
  const char *ownCores = "cpu-local,devices=8,cores=8";
  EXPECT_NEAR(gatherOfX(ownCores, slowed), gatherOfX(ownCores, plain), 1e-15);
}

} // namespace

namespace {

/// Two chained linear layers whose first reads a graph input: h needs a
/// gradient (it depends on w0), x does not.
constexpr llvm::StringLiteral kTwoLinears =
    "func.func @f() -> tensor<512x256xf32> {\n"
    "  %x = graph.input \"x\" : tensor<512x256xf32>\n"
    "  %w0 = graph.param \"w0\" : tensor<256x256xf32>\n"
    "  %w1 = graph.param \"w1\" : tensor<256x256xf32>\n"
    "  %h = graph.matmul %x, %w0 : tensor<512x256xf32>, tensor<256x256xf32>\n"
    "  %y = graph.matmul %h, %w1 : tensor<512x256xf32>, tensor<256x256xf32>\n"
    "  return %y : tensor<512x256xf32>\n}";

unsigned strategyNamed(const IntraOpProblem &p, unsigned node,
                       llvm::StringRef name) {
  for (auto [i, s] : llvm::enumerate(p.strategies(node)))
    if (s.name == name)
      return i;
  ADD_FAILURE() << "no strategy " << name.str();
  return 0;
}

double collectiveSeconds(cost::Collective kind, double bytes) {
  auto c = cost::estimateCollective(kind, bytes, cost::Group::strided(0, 8),
                                    dgx());
  EXPECT_TRUE(c.ok());
  return c->seconds;
}

TEST(IntraOpSearch, TrainingPricesTheBackwardPass) {
  Model m = parse(kTwoLinears);
  ASSERT_TRUE(m.forward);
  func::FuncOp f = m.forward;
  IntraOpOptions forwardOnly;
  forwardOnly.training = false;
  auto train = IntraOpProblem::build(f, dgx(), 8, {});
  auto fwd = IntraOpProblem::build(f, dgx(), 8, forwardOnly);
  ASSERT_TRUE(succeeded(train) && succeeded(fwd));
  // Nodes: x, w0, w1, h, y.
  const unsigned w1 = 2, h = 3, y = 4;

  // Compute: h's backward computes dw0 only (x is an input), y's both dh
  // and dw1, each a GEMM of the forward's size.
  EXPECT_NEAR(train->nodeCost(h, 0), 2 * fwd->nodeCost(h, 0), 1e-12);
  EXPECT_NEAR(train->nodeCost(y, 0), 3 * fwd->nodeCost(y, 0), 1e-12);

  // A reduce-scatter of y's partial sums comes back as an all-gather of its
  // gradient.
  unsigned rs = strategyNamed(*train, y, "matmul.k+rs0");
  double bytes = 512 * 256 * 4;
  double rsSeconds = collectiveSeconds(cost::Collective::ReduceScatter, bytes);
  double agSeconds = collectiveSeconds(cost::Collective::AllGather, bytes);
  EXPECT_NEAR(fwd->nodeCost(y, rs) - fwd->nodeCost(y, 0) / 8,
              rsSeconds, 0.2 * rsSeconds);
  EXPECT_NEAR(train->nodeCost(y, rs) - fwd->nodeCost(y, rs),
              2 * (fwd->nodeCost(y, rs) - rsSeconds) + agSeconds,
              1e-3 * agSeconds);

  // Megatron's column-parallel y reads h whole: dh is partial on every
  // device, all-reduced onto a replicated h (the `f` operator), or
  // reduce-scattered onto a split one (sequence parallelism).
  const IntraOpEdge *hy = nullptr, *w1y = nullptr;
  for (const IntraOpEdge &e : train->edges()) {
    if (e.producer == h && e.consumer == y)
      hy = &e;
    if (e.producer == w1 && e.consumer == y)
      w1y = &e;
  }
  ASSERT_TRUE(hy && w1y);
  unsigned columns = strategyNamed(*train, y, "matmul.n");
  unsigned rows = strategyNamed(*train, y, "matmul.m");
  unsigned split0 = strategyNamed(*train, h, "matmul.m");
  EXPECT_TRUE(hy->partialAxes[columns]);
  EXPECT_FALSE(hy->partialAxes[rows]);
  EXPECT_FALSE(hy->partialAxes[0]); // replicated work: whole gradients
  EXPECT_DOUBLE_EQ(hy->gradReduce[0][1],
                   collectiveSeconds(cost::Collective::AllReduce, bytes));
  EXPECT_DOUBLE_EQ(hy->gradReduce[split0][1], rsSeconds);
  EXPECT_DOUBLE_EQ(hy->cost[0][columns], hy->gradReduce[0][1]);
  // h made split by rows and read replicated: an all-gather forward, the
  // reduce-scatter of the partial gradient backward.
  EXPECT_DOUBLE_EQ(hy->cost[split0][columns], agSeconds + rsSeconds);
  // Read split by rows from a replicated h: sliced forward (a copy of the
  // device's share), the gradient all-gathered back.
  cost::GenericOp slice;
  slice.bytesRead = slice.bytesWritten = bytes / 8;
  absl::StatusOr<cost::OpCost> copy = cost::estimateGeneric(slice, dgx());
  ASSERT_TRUE(copy.ok());
  EXPECT_DOUBLE_EQ(hy->cost[0][rows], copy->seconds + agSeconds);
  for (const IntraOpEdge &e : fwd->edges())
    EXPECT_TRUE(llvm::all_of(e.partialAxes, [](unsigned m) { return m == 0; }));

  // Data parallelism: y split by rows reads w1 whole, whose gradient is
  // then all-reduced, as a share of a 25 MiB bucket.
  EXPECT_TRUE(w1y->partialAxes[rows]);
  double weight = 256 * 256 * 4, bucket = 25 << 20;
  EXPECT_NEAR(w1y->gradReduce[0][1],
              collectiveSeconds(cost::Collective::AllReduce, bucket) *
                  weight / bucket,
              1e-15);

  // The program prices every choice as IntraOpProblem::cost does.
  IntraOpOptions options;
  options.paramMemoryBytes = 2 * 256 * 256 * 4 / 4.0;
  auto constrained = IntraOpProblem::build(f, dgx(), 8, options);
  ASSERT_TRUE(succeeded(constrained));
  auto plan = solveIntraOp(*constrained, options);
  ASSERT_TRUE(succeeded(plan));
  EXPECT_NEAR(plan->solverObjective, plan->objective, 1e-6 * plan->objective);
}

/// A value with one strategy read by several consumers: its partial
/// gradient is reduced once, whichever consumers leave it partial.
TEST(IntraOpSearch, PartialGradientIsReducedOnce) {
  Model m = parse(
      "func.func @f() -> (tensor<512x256xf32>, tensor<512x256xf32>) {\n"
      "  %x = graph.input \"x\" : tensor<512x256xf32>\n"
      "  %w = graph.param \"w\" : tensor<256x256xf32>\n"
      "  %h = graph.matmul %x, %w : tensor<512x256xf32>, tensor<256x256xf32>\n"
      "  %a = graph.matmul %h, %w : tensor<512x256xf32>, tensor<256x256xf32>\n"
      "  %b = graph.matmul %h, %w : tensor<512x256xf32>, tensor<256x256xf32>\n"
      "  return %a, %b : tensor<512x256xf32>, tensor<512x256xf32>\n}");
  ASSERT_TRUE(m.forward);
  auto p = IntraOpProblem::build(m.forward, dgx(), 8, {});
  ASSERT_TRUE(succeeded(p));
  const unsigned h = 2, a = 3, b = 4;
  std::vector<unsigned> choice = p->replicatedChoice();
  double base = p->cost(choice);
  choice[a] = strategyNamed(*p, a, "matmul.n");
  double one = p->cost(choice);
  choice[b] = strategyNamed(*p, b, "matmul.n");
  double two = p->cost(choice);
  double allReduce =
      collectiveSeconds(cost::Collective::AllReduce, 512 * 256 * 4);
  // Each column-parallel consumer gains its compute share and the shared
  // w's partial gradient; h's gradient is all-reduced once for both.
  double share = p->nodeCost(a, choice[a]) - p->nodeCost(a, 0);
  EXPECT_GT(one - base, allReduce + share);
  EXPECT_LT(two - one, allReduce);
  (void)h;
  auto plan = solveIntraOp(*p, {});
  ASSERT_TRUE(succeeded(plan));
  EXPECT_NEAR(plan->solverObjective, plan->objective, 1e-6 * plan->objective);
}

} // namespace

namespace {

/// Layers of one structure are solved once: the tied program is smaller,
/// prices every choice as the whole problem does, and (with no memory
/// knapsack to fill unevenly) loses nothing against solving every layer.
TEST(IntraOpSearch, RepeatedLayersAreSolvedOnce) {
  Model m = load(
      "gpt,layers=4,hidden=1024,heads=16,seq=512,vocab=1000,batch=4");
  ASSERT_TRUE(m.forward);
  IntraOpOptions tied = shardedParamOptions(m.forward, 8);
  tied.mergeFollowers = false; // tying alone
  IntraOpOptions untied = tied;
  untied.tieRepeatedLayers = false;
  auto p = IntraOpProblem::build(m.forward, dgx(), 8, tied);
  ASSERT_TRUE(succeeded(p));

  // Every op of layers 1-3 stands for the op at its place in layer 0.
  std::vector<unsigned> rep = repeatedLayerRepresentatives(*p);
  unsigned tiedOps = 0;
  for (auto [v, r] : llvm::enumerate(rep)) {
    if (r == v)
      continue;
    ++tiedOps;
    EXPECT_LT(r, v);
    EXPECT_EQ(p->nodes()[v]->getName(), p->nodes()[r]->getName());
    EXPECT_EQ(rep[r], r);
  }
  unsigned perLayer = 0;
  m.forward.walk([&](Operation *op) {
    if (auto param = dyn_cast<graph::ParamOp>(op))
      perLayer += param.getName().starts_with("h.1.");
  });
  EXPECT_GT(perLayer, 0u);
  EXPECT_GE(tiedOps, 3 * perLayer);

  auto a = solveIntraOp(*p, tied);
  auto b = solveIntraOp(*p, untied);
  ASSERT_TRUE(succeeded(a) && succeeded(b));
  report("GPT 4 layers, tied", *p, *a);
  report("GPT 4 layers, untied", *p, *b);
  EXPECT_EQ(a->solvedNodes, int64_t(p->nodes().size() - tiedOps));
  EXPECT_EQ(b->solvedNodes, int64_t(p->nodes().size()));
  EXPECT_LT(a->numVariables, b->numVariables / 2);
  // The tied program's objective is the whole problem's cost of the
  // expanded choice, which is feasible.
  EXPECT_NEAR(a->solverObjective, a->objective, 1e-6 * a->objective);
  EXPECT_NEAR(a->objective, p->cost(a->choice), 1e-12);
  EXPECT_LE(p->paramBytes(a->choice), tied.paramMemoryBytes);
  // Tying restricts the choice: never better than solving every layer,
  // and here (the budget is met layer by layer alike) no worse.
  EXPECT_GE(a->objective, b->objective * (1 - 1e-3));
  EXPECT_LE(a->objective, b->objective * (1 + 1e-3));
  for (auto [v, r] : llvm::enumerate(rep))
    EXPECT_EQ(a->choice[v], a->choice[r]);
}

/// A layer of another shape keeps its own choice.
TEST(IntraOpSearch, LayersOfAnotherShapeAreNotTied) {
  Model m = parse(
      "func.func @f() -> tensor<512x512xf32> {\n"
      "  %x = graph.input \"x\" : tensor<512x256xf32>\n"
      "  %w0 = graph.param \"h.0.w\" : tensor<256x256xf32>\n"
      "  %a = graph.matmul %x, %w0 : tensor<512x256xf32>, tensor<256x256xf32>\n"
      "  %w1 = graph.param \"h.1.w\" : tensor<256x256xf32>\n"
      "  %b = graph.matmul %a, %w1 : tensor<512x256xf32>, tensor<256x256xf32>\n"
      "  %w2 = graph.param \"h.2.w\" : tensor<256x256xf32>\n"
      "  %c = graph.matmul %b, %w2 : tensor<512x256xf32>, tensor<256x256xf32>\n"
      "  %w3 = graph.param \"h.3.w\" : tensor<256x512xf32>\n"
      "  %d = graph.matmul %c, %w3 : tensor<512x256xf32>, tensor<256x512xf32>\n"
      "  return %d : tensor<512x512xf32>\n}");
  ASSERT_TRUE(m.forward);
  auto p = IntraOpProblem::build(m.forward, dgx(), 8, {});
  ASSERT_TRUE(succeeded(p));
  // Nodes: x, w0, a, w1, b, w2, c, w3, d. Layer 0 reads an input, which
  // has no gradient, so its matmul is priced unlike layers 1 and 2 (the
  // backward pass computes dw0 only): it is not tied to them.
  std::vector<unsigned> rep = repeatedLayerRepresentatives(*p);
  EXPECT_EQ(rep, (std::vector<unsigned>{0, 1, 2, 3, 4, 3, 4, 7, 8}));
  auto plan = solveIntraOp(*p, {});
  ASSERT_TRUE(succeeded(plan));
  EXPECT_EQ(plan->solvedNodes, 7);
  EXPECT_NEAR(plan->solverObjective, plan->objective, 1e-6 * plan->objective);
}

} // namespace

namespace {

TEST(IntraOpSearch, LayoutsPackPerAxis) {
  EXPECT_EQ(packLayout({3}), 3);
  EXPECT_EQ(packLayout({kReplicated}), kReplicated);
  EXPECT_EQ(packLayout({kReplicated, kReplicated}), kReplicated);
  for (auto dims : std::vector<SmallVector<int64_t, 3>>{
           {0, kReplicated}, {kReplicated, 2}, {1, 0}, {2, kReplicated, 0},
           {kReplicated, kReplicated, 5}}) {
    int64_t packed = packLayout(dims);
    EXPECT_NE(packed, kReplicated);
    EXPECT_EQ(unpackLayout(packed, dims.size()), dims);
  }
  EXPECT_NE(packLayout({0, 1}), packLayout({1, 0}));
}


/// Pricing an edge's resharding and its gradient reduction with separate
/// product families is exact: on a mesh of two axes, where consumers leave
/// gradients partial over either or both, the optimum is the joint
/// product's, with fewer columns.
TEST_F(TwoNodeGpt, SplitEdgeCostsKeepTheOptimum) {
  options.relativeGap = 0;
  options.lpRounding = false; // both formulations through branch and bound
  auto p = build();
  ASSERT_TRUE(succeeded(p));
  auto split = solveIntraOp(*p, options);
  options.splitEdgeCosts = false;
  auto joint = solveIntraOp(*p, options);
  ASSERT_TRUE(succeeded(split) && succeeded(joint));
  EXPECT_TRUE(split->optimal && joint->optimal);
  EXPECT_NEAR(split->objective, joint->objective, 1e-9 * joint->objective);
  EXPECT_NEAR(split->solverObjective, split->objective,
              1e-6 * split->objective);
  EXPECT_LT(split->numVariables, joint->numVariables);
}

/// CBC is given a start (each op keeping the fewest parameter bytes), so a
/// search cut short by its time limit still returns a sharding that fits,
/// with its gap, instead of none.
TEST_F(TwoNodeGpt, TimeLimitStillReturnsAFittingSharding) {
  options.timeLimitSeconds = 1e-4;
  auto p = build();
  ASSERT_TRUE(succeeded(p));
  std::string whyNot;
  auto plan = solveIntraOp(*p, options, &whyNot);
  ASSERT_TRUE(succeeded(plan)) << whyNot;
  EXPECT_LE(p->paramBytes(plan->choice), options.paramMemoryBytes);
  EXPECT_DOUBLE_EQ(plan->objective, p->cost(plan->choice));
  EXPECT_GE(plan->gap, 0.0);
}

/// On two DGX nodes seen as a 2 x 8 mesh (the first axis across the
/// nodes, the second over each node's NVLink), the search splits the batch
/// across the nodes, whose gradients are reduced once a step, and runs
/// Megatron's column-then-row split inside each node, whose activations
/// are reduced every layer: data x tensor parallelism, found, not told.
TEST_F(TwoNodeGpt, TwoDimensionalMeshPutsTensorParallelismInsideNodes) {
  auto p = build();
  ASSERT_TRUE(succeeded(p));
  auto plan = solveIntraOp(*p, options);
  ASSERT_TRUE(succeeded(plan));
  report("GPT 2 layers, mesh 2x8", *p, *plan);
  EXPECT_EQ(plan->meshAxes, 2u);
  EXPECT_NEAR(plan->solverObjective, plan->objective, 1e-6 * plan->objective);
  EXPECT_LE(p->paramBytes(plan->choice), options.paramMemoryBytes);
  for (int layer = 0; layer < 2; ++layer) {
    std::string prefix = "h." + std::to_string(layer) + ".";
    for (const char *w : {"attn.q_proj.weight", "attn.k_proj.weight",
                          "attn.v_proj.weight", "mlp.fc.weight"})
      EXPECT_EQ(chosen(*p, *plan, matmulOf(m.forward, prefix + w)).name,
                "matmul.b0|matmul.n")
          << prefix << w;
    for (const char *w : {"attn.o_proj.weight", "mlp.proj.weight"}) {
      const ShardingStrategy &s = chosen(*p, *plan, matmulOf(m.forward, prefix + w));
      EXPECT_TRUE(llvm::StringRef(s.name).starts_with("matmul.b0|matmul.k+"))
          << prefix << w << ": " << s.name;
      // The partial sums are reduced over the node's axis.
      ASSERT_FALSE(s.collectives.empty());
      EXPECT_EQ(s.collectives.front().axis, 1u);
    }
  }
  // A weight's gradient partial over both axes is reduced hierarchically:
  // over the node's axis on the whole gradient (as its share of a 25 MiB
  // bucket), then across the nodes on the eighth that leaves.
  {
    const IntraOpEdge *edge = nullptr;
    for (const IntraOpEdge &e : p->edges())
      if (isa<graph::ParamOp>(p->nodes()[e.producer]) &&
          e.gradReduce[0].size() == 4 && e.gradReduce[0][3] > 0)
        edge = &e;
    ASSERT_TRUE(edge);
    double bytes = graph::tensorBytes(
        p->nodes()[edge->producer]->getResult(0).getType());
    double bucket = 25 << 20;
    auto share = [&](cost::Group g, double b) {
      auto c = cost::estimateCollective(cost::Collective::AllReduce, bucket,
                                        g, cluster);
      EXPECT_TRUE(c.ok());
      return c->seconds * b / bucket;
    };
    double inner = share(cost::Group::strided(0, 8, 1), bytes);
    double outer = share(cost::Group::strided(0, 2, 8), bytes / 8);
    EXPECT_NEAR(edge->gradReduce[0][2], inner, 1e-9 * inner);
    EXPECT_NEAR(edge->gradReduce[0][1], share(cost::Group::strided(0, 2, 8),
                                              bytes),
                1e-9 * inner);
    EXPECT_NEAR(edge->gradReduce[0][3], inner + outer, 1e-9 * inner);
  }
  // Flat over 16 GPUs, the same search does worse: its tensor-parallel
  // collectives cross the nodes.
  auto flat = IntraOpProblem::build(m.forward, cluster, 16, options);
  ASSERT_TRUE(succeeded(flat));
  auto flatPlan = solveIntraOp(*flat, options);
  ASSERT_TRUE(succeeded(flatPlan));
  std::cout << "mesh 2x8: " << plan->objective * 1e3 << " ms, flat 16: "
            << flatPlan->objective * 1e3 << " ms\n";
  EXPECT_LT(plan->objective, flatPlan->objective);
}

} // namespace

namespace {

/// Views that carry every layout their producer makes follow it: their
/// choice is the producer's, and the program without them has the same
/// optimum.
TEST(IntraOpSearch, ViewsFollowTheirProducerExactly) {
  Model m = load(kGptBlock);
  ASSERT_TRUE(m.forward);
  IntraOpOptions merged = shardedParamOptions(m.forward, 8);
  IntraOpOptions whole = merged;
  whole.mergeFollowers = false;
  auto p = IntraOpProblem::build(m.forward, dgx(), 8, merged);
  ASSERT_TRUE(succeeded(p));
  Followers f = findFollowers(*p);
  int followers = 0;
  for (auto [v, u] : llvm::enumerate(f.followed)) {
    if (u < 0)
      continue;
    ++followers;
    EXPECT_TRUE((isa<graph::ReshapeOp, graph::TransposeOp>(p->nodes()[v])))
        << p->nodes()[v]->getName().getStringRef().str();
    EXPECT_EQ(f.strategyOf[v].size(),
              p->strategies(f.into[v]).size());
  }
  // The q, k and v reshapes to heads (a transpose moves data, so it is not
  // free and keeps its own choice).
  EXPECT_EQ(followers, 3);

  auto a = solveIntraOp(*p, merged);
  auto b = solveIntraOp(*p, whole);
  ASSERT_TRUE(succeeded(a) && succeeded(b));
  report("GPT block, views merged", *p, *a);
  EXPECT_TRUE(a->optimal && b->optimal);
  EXPECT_LT(a->numVariables, b->numVariables);
  EXPECT_EQ(a->solvedNodes + followers, b->solvedNodes);
  EXPECT_NEAR(a->solverObjective, a->objective, 1e-6 * a->objective);
  EXPECT_NEAR(a->objective, b->objective, 1e-3 * b->objective);
  // Every follower reads exactly what its producer makes.
  for (const IntraOpEdge &e : p->edges())
    if (f.followed[e.consumer] == int(e.producer)) {
      EXPECT_EQ(e.made[a->choice[e.producer]],
                e.required[a->choice[e.consumer]]);
    }
}

} // namespace
