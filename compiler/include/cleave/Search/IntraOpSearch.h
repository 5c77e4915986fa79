//===- IntraOpSearch.h - Optimal sharding of every op on a 1-D mesh -*- C++
//-*-===//
//
// Alpa's intra-operator pass (Zheng et al., OSDI 2022) on a 1-D mesh: pick
// one ShardingStrategy per op of a function so that compute (priced by the
// cost model on each device's share), the strategies' own collectives and
// the resharding between a producer's layout and each consumer's required
// layout add up to the least time, with the parameters' per-device bytes
// under a limit. Solved exactly as an integer program with COIN-OR CBC.
//
// Resharding a value of B bytes from layout p to required layout c:
//   p == c or p replicated (every device slices its part) -> free;
//   c replicated -> all-gather(B); otherwise all-to-all(B / n).
// A value read by several consumers is resharded once per distinct layout
// they read (Alpa pays every edge; three projections reading one all-gathered
// activation would pay it three times). For training (the default), every
// cost gains its backward counterpart (IntraOpOptions::training).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_SEARCH_INTRAOPSEARCH_H
#define CLEAVE_SEARCH_INTRAOPSEARCH_H

#include "cleave/Search/ShardingStrategy.h"
#include "cleave/cost_model/Cluster.h"
#include "cleave/cost_model/Profile.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"

#include <optional>
#include <vector>

namespace cleave::search {

struct IntraOpOptions {
  /// Per-device bytes of parameters; 0: the device's memory.
  double paramMemoryBytes = 0;
  /// CBC's time limit in seconds.
  double timeLimitSeconds = 60;
  /// Stop once the best choice is proven within this fraction of the
  /// optimum (the cost model's own error is far larger).
  double relativeGap = 1e-3;
  /// Mesh ranks are cluster ranks first, first + 1, ...
  int64_t firstRank = 0;
  /// Megatron's sequence parallelism, asked for: normalisations run on
  /// activations split along the sequence (the dimension before the
  /// normalised one) instead of replicated, so their inputs arrive by
  /// reduce-scatter and leave by all-gather.
  bool sequenceParallel = false;
  /// Sequence parallelism ruled out (a plan with sp=off, whose memory was
  /// predicted without it): no value that carries the sequence (followed
  /// from the inputs' dimension 1) is split along it, normalisations
  /// included. With neither flag the search is free to choose.
  bool noSequenceParallel = false;
  /// Tensor parallelism of a model, not data parallelism: no value that
  /// carries the batch (followed from the inputs' dimension 0) is split
  /// along it. A transformer plan's lowering sets it: its dp and zero knobs
  /// are the batch's split, priced as such.
  bool noBatchSplit = false;
  /// Context parallelism: the devices share the sequence, not the weights.
  /// Parameters stay whole on every device and inputs are either whole or
  /// split along their sequence dimension (dimension 1), so the work splits
  /// by tokens; attention reads keys and values from the other blocks
  /// (all-gathered or exchanged by all-to-all, as the costs decide).
  bool contextParallel = false;
  /// Price a training step, not only the forward pass (see
  /// docs/intra-op-search.md, "Training costs"): each op's backward pass,
  /// the backward counterpart of every collective and resharding, the
  /// reduction of gradients left partial by a split op reading a replicated
  /// operand (the data-parallel gradient all-reduce among them), and the
  /// optimizer update of each parameter's per-device share.
  bool training = true;
  /// Solve each distinct repeated layer once: the ops at one place in
  /// layers of the same structure take one strategy, chosen with the costs
  /// of all of them (RepeatedLayers.cpp). The answer is then optimal among
  /// the choices that treat those layers alike.
  bool tieRepeatedLayers = true;
  /// Merge the ops that must follow their producer (views that carry every
  /// layout it makes) into it (ProblemReduction.cpp); exact.
  bool mergeFollowers = true;
  /// Price an edge's resharding and its gradient reduction with two
  /// families of ILP products (one over the layouts the consumer reads, one
  /// over the axes it leaves partial) instead of one over both: fewer
  /// columns, the same optimum (IntraOpIlp.cpp). Off only to compare.
  bool splitEdgeCosts = true;
  /// Solve the LP relaxation first and round it (LocalSearch.cpp): a
  /// rounded choice within `relativeGap` of the relaxation's bound is
  /// returned without branch and bound, any other is CBC's start. Off only
  /// to compare, or to test the branch and bound itself.
  bool lpRounding = true;
  /// Branch-and-bound nodes CBC may explore after the relaxation (-1: no
  /// limit but the time; 0: none, the rounded relaxation is returned with
  /// its gap, whatever it is). A node limit, unlike the time limit, gives
  /// the same answer on every machine: a planner that prices a sharding
  /// and the lowering that runs it later agree.
  int64_t maxNodes = -1;
  /// Prices ops and collectives with this machine's measurements where it
  /// has them (the knob search prices a graph's tensor parallelism with the
  /// profile it prices everything else with); null: the cluster's peaks.
  const cost::Profile *profile = nullptr;
};

/// The per-device parameter limits a tensor-parallel degree holds the
/// search to, first `strict`, then `loose` where nothing fits: strict is
/// the share with every divisible matrix split (as Megatron-LM splits the
/// embedding, attention and MLP weights; what the plan's memory was
/// predicted with), loose a tenth over an even share (a matrix the rules
/// cannot split stays whole). The lowering and the graph planner use the
/// same limits, so that the plan priced is the plan run. With
/// `wholeResidualStream` (tensor parallelism without sequence parallelism,
/// IntraOpOptions::noSequenceParallel) a matrix added onto the residual
/// stream counts whole in both, as the search must keep it whole there
/// (Megatron-LM's learned position embedding: at sequence 1024 and hidden
/// 512 its whole table outweighs a tenth of a 2-layer model's share).
struct TensorParallelLimits {
  double strict = 0, loose = 0;
  /// The relative gap both use for a graph without transformer layers,
  /// whose planner searches a sharding for every tensor-parallel degree and
  /// microbatch size it tries: 1%, far below the cost model's own error,
  /// where the default 0.1% sends some of them into minutes of branch and
  /// bound (ResNet-50 on 8 devices: 8 s each).
  double graphPlanGap = 1e-2;
  /// And no branch and bound (IntraOpOptions::maxNodes 0): the planner
  /// tries a sharding per degree and microbatch size, and ResNet-type
  /// graphs at small microbatches leave a rounding just over 1% that CBC
  /// then works on for seconds (Wide ResNet-50-2, one image, 8 devices:
  /// rounded 1.04% above the bound; 6 s of branch and bound to 0.5%, 2.6 s
  /// even with a limit of 20 nodes).
  int64_t graphPlanNodes = 0;
};
TensorParallelLimits tensorParallelLimits(mlir::func::FuncOp forward,
                                          int64_t tp,
                                          bool wholeResidualStream = false);
/// Bytes of the trainable parameters of `func`.
double trainableParamBytes(mlir::func::FuncOp func);

/// A mesh has one to three logical axes (e.g. data x tensor x sequence).
inline constexpr unsigned kMaxMeshAxes = 3;

/// A tensor's layout on a mesh of `dims.size()` axes: for each axis the
/// tensor dimension split over it, or kReplicated; packed into one integer
/// so that layouts compare as numbers. On a 1-D mesh it is the dimension
/// itself; kReplicated when no axis splits the tensor.
int64_t packLayout(llvm::ArrayRef<int64_t> dims);
llvm::SmallVector<int64_t, 3> unpackLayout(int64_t layout, unsigned axes);

/// One edge of the problem: operand `operand` of node `consumer` reads
/// result `result` of node `producer`.
struct IntraOpEdge {
  unsigned producer, result, consumer, operand;
  /// Resharding seconds, [producer strategy][consumer strategy].
  std::vector<std::vector<double>> cost;
  /// The layout the consumer reads, per consumer strategy, and the layout
  /// the producer makes, per producer strategy.
  std::vector<int64_t> required;
  std::vector<int64_t> made;
  /// Training only: per consumer strategy, the mesh axes (a bit each) over
  /// which the operand's gradient is partial (the consumer splits its work
  /// there but reads the operand whole); and per producer strategy and set
  /// of axes (indexed by the bits), the reduction of the value's gradient
  /// back to the producer's layout (all-reduce onto a replicated value,
  /// reduce-scatter onto a split one; over several axes hierarchically,
  /// inner axes first). `cost` includes it; a value pays it once per
  /// distinct set however many consumers leave partial gradients.
  std::vector<unsigned> partialAxes;
  std::vector<std::vector<double>> gradReduce;

  /// The gradient-reduction part of `cost`.
  double reduceCost(unsigned from, unsigned to) const {
    return gradReduce[from][partialAxes[to]];
  }
  /// The resharding part of `cost` (forward, and its backward counterpart).
  double reshardCost(unsigned from, unsigned to) const {
    return cost[from][to] - reduceCost(from, to);
  }
};

/// The search problem of one function: its ops (nodes), their strategies
/// and costs, and the data edges between them. Build once, then solve or
/// price any assignment with the same cost function.
class IntraOpProblem {
public:
  static llvm::FailureOr<IntraOpProblem> build(mlir::func::FuncOp func,
                                               const cost::Cluster &cluster,
                                               int64_t meshSize,
                                               const IntraOpOptions &options);
  /// On a mesh of several logical axes, laid row-major over the ranks
  /// from IntraOpOptions::firstRank (the last axis over neighbouring
  /// ranks): every op's strategies are the per-axis rules composed, layouts
  /// are packed (packLayout), and each axis's collectives run on its groups.
  static llvm::FailureOr<IntraOpProblem>
  build(mlir::func::FuncOp func, const cost::Cluster &cluster,
        llvm::ArrayRef<int64_t> meshShape, const IntraOpOptions &options);

  llvm::ArrayRef<mlir::Operation *> nodes() const { return ops; }
  llvm::ArrayRef<ShardingStrategy> strategies(unsigned node) const {
    return nodeStrategies[node];
  }
  /// Compute plus own collectives of strategy `s` of `node`, seconds.
  double nodeCost(unsigned node, unsigned s) const {
    return nodeCosts[node][s];
  }
  /// Per-device parameter bytes of strategy `s` of `node`.
  double paramBytes(unsigned node, unsigned s) const {
    return nodeParamBytes[node][s];
  }
  llvm::ArrayRef<IntraOpEdge> edges() const { return dataEdges; }
  /// The edges grouped by the value they read, in program order.
  llvm::ArrayRef<std::vector<unsigned>> valueEdges() const {
    return edgesOfValue;
  }
  std::optional<unsigned> nodeOf(mlir::Operation *op) const;
  int64_t meshSize() const { return mesh; }
  llvm::ArrayRef<int64_t> meshShape() const { return shape; }
  double paramMemoryLimit() const { return memoryLimit; }

  /// Total seconds of one strategy index per node.
  double cost(llvm::ArrayRef<unsigned> choice) const;
  /// The seconds that the edges of `valueEdges()[group]` add to a choice:
  /// one resharding per distinct layout its consumers read, one gradient
  /// reduction per distinct set of axes they leave partial.
  double valueCost(unsigned group, llvm::ArrayRef<unsigned> choice) const;
  /// Per-device parameter bytes of a choice.
  double paramBytes(llvm::ArrayRef<unsigned> choice) const;
  /// The choice with strategy 0 (replicated) everywhere.
  std::vector<unsigned> replicatedChoice() const;

  /// The problem in which every node v takes the strategy of
  /// `representative[v]` (itself, or a node with the same strategies and
  /// costs): one node per representative, carrying the costs and parameter
  /// bytes of all the nodes it stands for; the edges of values whose
  /// producer and consumers map alike, with the same costs, merged into one
  /// group weighted by their count. Any choice of it costs what its
  /// expansion costs here. `reducedIndex[v]` is v's node in the result.
  IntraOpProblem tied(llvm::ArrayRef<unsigned> representative,
                      std::vector<unsigned> &reducedIndex) const;

  /// The general form: node v takes strategy `strategyOf[v][i]` when node
  /// `into[v]` (a root: into[r] == r) takes strategy i (an empty map: the
  /// same i); a root carries the costs and bytes of the nodes it decides;
  /// edges are rewritten in the roots' terms, and the edge from the node
  /// `followed[v]` into v (free by construction) is dropped.
  IntraOpProblem merged(llvm::ArrayRef<unsigned> into,
                        llvm::ArrayRef<std::vector<unsigned>> strategyOf,
                        llvm::ArrayRef<int> followed,
                        std::vector<unsigned> &reducedIndex) const;

private:
  int64_t mesh = 1;
  llvm::SmallVector<int64_t, 3> shape = {1};
  double memoryLimit = 0;
  std::vector<mlir::Operation *> ops;
  llvm::DenseMap<mlir::Operation *, unsigned> index;
  std::vector<llvm::SmallVector<ShardingStrategy, 0>> nodeStrategies;
  std::vector<std::vector<double>> nodeCosts;
  std::vector<std::vector<double>> nodeParamBytes;
  std::vector<IntraOpEdge> dataEdges;
  std::vector<std::vector<unsigned>> edgesOfValue;
};

/// For every node of `problem`, the node at the same place in the first
/// layer of the same structure (LayerNumbering.h: ops numbered by their
/// parameters' layer), or the node itself outside repeated layers: the
/// same op with the same attributes and types, reading the same places of
/// its layer, and offering the same strategies at the same costs.
std::vector<unsigned> repeatedLayerRepresentatives(const IntraOpProblem &problem);

/// The ops of `problem` that must follow their producer: views (no work,
/// no parameter bytes) with one incoming edge that, for every strategy of
/// the producer, have exactly one strategy reading what it makes, free and
/// leaving no partial gradient. Chains follow their first producer.
struct Followers {
  std::vector<unsigned> into;
  std::vector<std::vector<unsigned>> strategyOf;
  std::vector<int> followed;
};
Followers findFollowers(const IntraOpProblem &problem);

struct IntraOpPlan {
  /// The chosen strategy index per node of the problem, and the op and
  /// strategy themselves.
  std::vector<unsigned> choice;
  std::vector<mlir::Operation *> ops;
  std::vector<ShardingStrategy> strategies;
  /// Seconds of the choice (the ILP's objective).
  double objective = 0;
  /// The objective as CBC computed it; equals `objective` up to
  /// tolerances (a check of the formulation against IntraOpProblem::cost).
  double solverObjective = 0;
  /// CBC's lower bound and the relative gap to it.
  double bound = 0;
  double gap = 0;
  /// Proven within IntraOpOptions::relativeGap of the optimum.
  bool optimal = false;
  /// Found by rounding the LP relaxation, within the gap of its bound, so
  /// without branch and bound (IntraOpOptions::lpRounding).
  bool rounded = false;
  double solveSeconds = 0;
  /// Size of the integer program.
  int64_t numVariables = 0, numIntegerVariables = 0, numConstraints = 0;
  /// Nodes the program chose for; fewer than `ops` where repeated layers
  /// were tied.
  int64_t solvedNodes = 0;
  /// Axes of the mesh: the strategies' layouts are packed over them.
  unsigned meshAxes = 1;
};

/// A choice rounded from weights per strategy (the ILP's LP relaxation):
/// every node takes its heaviest strategy; where that breaks the memory
/// limit, the nodes give up parameter bytes where it costs least per byte.
/// None when no choice within the limit is reached that way.
std::optional<std::vector<unsigned>>
roundRelaxation(const IntraOpProblem &problem,
                llvm::ArrayRef<std::vector<double>> weight);

/// Local search from a choice within the memory limit, while a move lowers
/// the cost and keeps within the limit: one node to another strategy; a
/// producer and its consumer together; one node to a cheaper strategy that
/// holds more bytes and another to one that holds fewer; and chains that
/// start from a strategy in the support of `weight` (the relaxation) and
/// re-optimise the neighbours outward. At most `passes` rounds. Returns
/// the cost.
double improveChoice(const IntraOpProblem &problem,
                     std::vector<unsigned> &choice,
                     llvm::ArrayRef<std::vector<double>> weight = {},
                     unsigned passes = 16);

/// Solves `problem` exactly (up to the time limit and relative gap); fails
/// when no choice fits the memory limit (`whyNot`: "infeasible") or none
/// was found in time ("time limit").
llvm::FailureOr<IntraOpPlan> solveIntraOp(const IntraOpProblem &problem,
                                          const IntraOpOptions &options,
                                          std::string *whyNot = nullptr);

/// build + solve; errors are emitted at `func`.
llvm::FailureOr<IntraOpPlan> searchIntraOp(mlir::func::FuncOp func,
                                           const cost::Cluster &cluster,
                                           llvm::ArrayRef<int64_t> meshShape,
                                           const IntraOpOptions &options);

/// `s` on `op` as a #graph.op_sharding: the strategy's name, per operand
/// and result the mesh axes (of `meshAxes`) that split each dimension, and
/// how the op reduces partial sums itself.
mlir::Attribute shardingAttrOf(mlir::Operation *op, const ShardingStrategy &s,
                               unsigned meshAxes);

/// Writes the choice on every op as `graph.sharding`, a verified
/// #graph.op_sharding (GraphAttrs.td): the strategy's name, per operand
/// and result the mesh axes that split each dimension, and how the op
/// reduces partial sums itself.
void annotateIntraOpPlan(const IntraOpPlan &plan);

} // namespace cleave::search

#endif // CLEAVE_SEARCH_INTRAOPSEARCH_H
