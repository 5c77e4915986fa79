//===- IntraOpProblem.cpp - Nodes, strategies and costs of the search ----===//

#include "cleave/Search/IntraOpSearch.h"

#include "cleave/Dialect/Graph/IR/GraphInterfaces.h"
#include "cleave/Dialect/Graph/IR/GraphOps.h"
#include "cleave/Dialect/Graph/IR/ShapeInference.h"

#include "llvm/ADT/DenseSet.h"

#include <algorithm>
#include <map>

using namespace mlir;

namespace cleave::search {

namespace {

/// Prices ops and collectives on one cluster and mesh, caching collectives
/// (a block asks for the same few sizes again and again).
class Pricer {
public:
  Pricer(const cost::Cluster &cluster, int64_t mesh, int64_t firstRank)
      : cluster(cluster), mesh(mesh),
        group(cost::Group::strided(firstRank, mesh)) {}

  FailureOr<double> collective(cost::Collective kind, double bytes) {
    if (mesh <= 1 || bytes <= 0)
      return 0.0;
    auto key = std::make_pair(int(kind), bytes);
    if (auto it = cache.find(key); it != cache.end())
      return it->second;
    auto c = cost::estimateCollective(kind, bytes, group, cluster);
    if (!c.ok()) {
      error = std::string(c.status().message());
      return failure();
    }
    return cache[key] = c->seconds;
  }

  /// a -> b for a value of type `type` (see IntraOpSearch.h).
  FailureOr<double> reshard(int64_t from, int64_t to, Type type) {
    if (from == to || from == kReplicated)
      return 0.0;
    double bytes = graph::tensorBytes(type);
    if (to == kReplicated)
      return collective(cost::Collective::AllGather, bytes);
    return collective(cost::Collective::AllToAll, bytes / mesh);
  }

  /// The gradient of a value of `type`, partial over the mesh, reduced
  /// onto `layout`: all-reduced onto a replicated value, reduce-scattered
  /// onto a split one.
  /// A parameter's gradient is not reduced alone: the lowering packs them
  /// into buckets of 25 MiB (GradientLowering.cpp, as PyTorch DDP does), so
  /// each pays its share of a bucket's reduction, not a latency of its own.
  FailureOr<double> reduceOnto(int64_t layout, Type type, bool bucketed) {
    constexpr double kBucketBytes = 25 << 20;
    double bytes = graph::tensorBytes(type);
    auto kind = layout == kReplicated ? cost::Collective::AllReduce
                                      : cost::Collective::ReduceScatter;
    if (!bucketed || bytes >= kBucketBytes)
      return collective(kind, bytes);
    FailureOr<double> bucket = collective(kind, kBucketBytes);
    if (failed(bucket))
      return failure();
    return *bucket * bytes / kBucketBytes;
  }

  /// The backward pass's counterpart of a collective the forward pass
  /// issues: an all-reduce's gradient passes through (Megatron's `g`), an
  /// all-gather's is reduce-scattered and vice versa, an all-to-all's goes
  /// back by an all-to-all of the same size.
  FailureOr<double> backwardOf(const StrategyCollective &c) {
    switch (c.kind) {
    case cost::Collective::AllGather:
      return collective(cost::Collective::ReduceScatter, c.bytes);
    case cost::Collective::ReduceScatter:
      return collective(cost::Collective::AllGather, c.bytes);
    case cost::Collective::AllToAll:
      return collective(cost::Collective::AllToAll, c.bytes);
    default:
      return 0.0;
    }
  }

  /// AdamW on `bytes` of fp32 parameters: read the parameter, its gradient
  /// and two moments, write three of them back, about ten FLOPs an element.
  FailureOr<double> update(double bytes) {
    if (bytes <= 0)
      return 0.0;
    cost::GenericOp g;
    double elements = bytes / 4;
    g.flops = 10 * elements;
    g.bytesRead = 4 * bytes;
    g.bytesWritten = 3 * bytes;
    auto c = cost::estimateGeneric(g, cluster);
    if (!c.ok()) {
      error = std::string(c.status().message());
      return failure();
    }
    return c->seconds;
  }

  FailureOr<double> compute(Operation *op, const ShardingStrategy &s) {
    if (isa<graph::ParamOp, graph::InputOp, graph::ConstantOp>(op))
      return 0.0;
    absl::StatusOr<cost::OpCost> c;
    if (s.gemm) {
      c = cost::estimateGemm(*s.gemm, cluster);
    } else {
      auto work = dyn_cast<graph::CostOpInterface>(op);
      if (!work)
        return 0.0;
      cost::GenericOp g;
      g.flops = work.getFlops() * s.workShare;
      g.bytesRead = work.getBytesRead() * s.workShare;
      g.bytesWritten = work.getBytesWritten() * s.workShare;
      if (g.flops == 0 && g.bytesRead == 0 && g.bytesWritten == 0)
        return 0.0;
      if (op->getNumResults())
        if (auto t = dyn_cast<ShapedType>(op->getResult(0).getType()))
          g.dtype = costDType(t.getElementType());
      c = cost::estimateGeneric(g, cluster);
    }
    if (!c.ok()) {
      error = std::string(c.status().message());
      return failure();
    }
    return c->seconds;
  }

  std::string error;

private:
  const cost::Cluster &cluster;
  int64_t mesh;
  cost::Group group;
  std::map<std::pair<int, double>, double> cache;
};

} // namespace

/// Context parallelism splits tokens: every value that carries the
/// sequence (from the inputs' dimension 1, followed through the strategies'
/// own dimension mappings) may be split only along it, weights are never
/// split for their own sake, and partial sums are left only by reductions
/// over the tokens (the loss). So the only strategies kept are the
/// replicated one and those that split along the sequence; attention then
/// reads the other blocks' keys and values whole (an all-gather), and a
/// causal softmax of a query block is told its place by the partitioner.
/// Records the sequence dimension of `op`'s first result in `dims`.
static void restrictToTokenSplits(Operation &op,
                                  SmallVectorImpl<ShardingStrategy> &strategies,
                                  llvm::DenseMap<Value, int64_t> &dims) {
  if (op.getNumResults() == 0)
    return;
  Value result = op.getResult(0);
  auto seqOf = [&](Value v) -> int64_t {
    auto it = dims.find(v);
    return it == dims.end() ? kReplicated : it->second;
  };
  // Whether every operand that carries the sequence is read whole or split
  // along it, and whether one of them is split.
  auto readsTokens = [&](const ShardingStrategy &s, bool &splitsTokens) {
    splitsTokens = false;
    for (auto [i, operand] : llvm::enumerate(op.getOperands())) {
      int64_t seq = seqOf(operand);
      if (seq == kReplicated)
        continue;
      if (s.operands[i] != kReplicated && s.operands[i] != seq)
        return false;
      splitsTokens |= s.operands[i] == seq;
    }
    return true;
  };
  int64_t seq = kReplicated;
  if (isa<graph::InputOp>(op)) {
    auto type = dyn_cast<RankedTensorType>(result.getType());
    if (type && type.getRank() >= 2)
      seq = 1;
  } else {
    // The first strategy (in operand order) that carries an operand's
    // sequence into a split result names the result's sequence dimension:
    // a query's, not a key's, for the attention scores.
    for (auto [i, operand] : llvm::enumerate(op.getOperands())) {
      int64_t operandSeq = seqOf(operand);
      if (operandSeq == kReplicated || seq != kReplicated)
        continue;
      for (const ShardingStrategy &s : strategies) {
        bool splits;
        if (s.partial == PartialReduction::None &&
            s.operands[i] == operandSeq && s.results[0] != kReplicated &&
            readsTokens(s, splits)) {
          seq = s.results[0];
          break;
        }
      }
    }
  }
  if (seq != kReplicated)
    dims[result] = seq;
  llvm::erase_if(strategies, [&](const ShardingStrategy &s) {
    if (s.name == "replicated")
      return false;
    bool splits;
    if (!readsTokens(s, splits))
      return true;
    if (s.partial != PartialReduction::None)
      return !splits; // a reduction over tokens (the loss) may leave partials
    return s.results[0] != seq;
  });
}

FailureOr<IntraOpProblem> IntraOpProblem::build(func::FuncOp func,
                                                const cost::Cluster &cluster,
                                                int64_t meshSize,
                                                const IntraOpOptions &options) {
  if (meshSize < 1)
    return func.emitOpError() << "mesh size must be positive, got " << meshSize;
  if (options.firstRank + meshSize > cluster.numDevices())
    return func.emitOpError()
           << "mesh of " << meshSize << " ranks does not fit cluster '"
           << cluster.name << "' of " << cluster.numDevices() << " devices";
  if (!func.getBody().hasOneBlock())
    return func.emitOpError() << "intra-op search needs a single-block body";

  IntraOpProblem p;
  p.mesh = meshSize;
  p.memoryLimit = options.paramMemoryBytes > 0 ? options.paramMemoryBytes
                                               : cluster.device.memoryBytes;
  Pricer pricer(cluster, meshSize, options.firstRank);
  auto pricingError = [&]() {
    return func.emitOpError() << "cost model: " << pricer.error;
  };

  llvm::DenseMap<Value, unsigned> valueGroup;
  llvm::DenseMap<Value, int64_t> sequenceDims;
  // Training: the values the backward pass computes a gradient for, the
  // floating-point values that depend on a trainable parameter.
  llvm::DenseSet<Value> hasGrad;
  auto isFloat = [](Value v) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    return t && isa<FloatType>(t.getElementType());
  };
  for (Operation &op : func.getBody().front().without_terminator()) {
    if (!options.training)
      break;
    bool grad = false;
    if (auto param = dyn_cast<graph::ParamOp>(op))
      grad = param.isTrainable();
    else if (!isa<graph::StopGradientOp>(op))
      grad = llvm::any_of(op.getOperands(),
                          [&](Value v) { return hasGrad.contains(v); });
    if (grad)
      for (Value r : op.getResults())
        if (isFloat(r))
          hasGrad.insert(r);
  }

  for (Operation &op : func.getBody().front().without_terminator()) {
    unsigned node = p.ops.size();
    p.ops.push_back(&op);
    p.index[&op] = node;
    auto &strategies = p.nodeStrategies.emplace_back();
    if (auto rules = dyn_cast<ShardingStrategyOpInterface>(&op))
      rules.getShardingStrategies(meshSize, strategies);
    if (strategies.empty())
      strategies.push_back(replicatedStrategy(&op));
    if (options.sequenceParallel &&
        isa<graph::LayerNormOp, graph::RmsNormOp>(op)) {
      auto type = cast<RankedTensorType>(op.getResult(0).getType());
      int64_t seqDim = type.getRank() - 2;
      auto onSequence = [&](const ShardingStrategy &s) {
        return s.results[0] == seqDim;
      };
      if (seqDim >= 0 && llvm::any_of(strategies, onSequence))
        llvm::erase_if(strategies, [&](const ShardingStrategy &s) {
          return !onSequence(s);
        });
    }

    if (options.contextParallel)
      restrictToTokenSplits(op, strategies, sequenceDims);

    // The backward pass computes a gradient per operand that has one, each
    // about the forward op's work (a matmul's dA and dB are GEMMs of its
    // size on the same shares); two at most, since the rules of ops with
    // more operands (a norm's weight and bias) share their passes.
    int gradOperands = llvm::count_if(
        op.getOperands(), [&](Value v) { return hasGrad.contains(v); });
    double backwardFactor = std::min(gradOperands, 2);
    bool resultHasGrad =
        op.getNumResults() && hasGrad.contains(op.getResult(0));
    auto trainableParam = dyn_cast<graph::ParamOp>(op);
    if (trainableParam && !trainableParam.isTrainable())
      trainableParam = {};

    auto &costs = p.nodeCosts.emplace_back();
    auto &params = p.nodeParamBytes.emplace_back();
    for (const ShardingStrategy &s : strategies) {
      FailureOr<double> seconds = pricer.compute(&op, s);
      if (failed(seconds))
        return pricingError();
      double total = *seconds * (1 + backwardFactor);
      for (const StrategyCollective &c : s.collectives) {
        FailureOr<double> t = pricer.collective(c.kind, c.bytes);
        if (failed(t))
          return pricingError();
        total += *t;
        if (!resultHasGrad)
          continue;
        t = pricer.backwardOf(c);
        if (failed(t))
          return pricingError();
        total += *t;
      }
      double bytes = 0;
      if (isa<graph::ParamOp>(op))
        bytes = double(graph::tensorBytes(op.getResult(0).getType())) /
                (s.results[0] == kReplicated ? 1 : meshSize);
      if (trainableParam && options.training) {
        FailureOr<double> t = pricer.update(bytes);
        if (failed(t))
          return pricingError();
        total += *t;
      }
      costs.push_back(total);
      params.push_back(bytes);
    }
    // Whether strategy `s` divides the op's work over the mesh: an operand
    // it reads whole then receives a partial gradient from each device.
    auto splitsWork = [](const ShardingStrategy &s) {
      auto split = [](int64_t d) { return d != kReplicated; };
      return s.partial != PartialReduction::None ||
             llvm::any_of(s.operands, split) || llvm::any_of(s.results, split);
    };

    for (OpOperand &use : op.getOpOperands()) {
      auto result = dyn_cast<OpResult>(use.get());
      if (!result || !isa<RankedTensorType>(result.getType()))
        continue;
      auto it = p.index.find(result.getOwner());
      if (it == p.index.end())
        continue;
      IntraOpEdge e{it->second,
                    result.getResultNumber(),
                    node,
                    use.getOperandNumber(),
                    {}};
      bool grad = hasGrad.contains(result);
      for (const ShardingStrategy &to : strategies) {
        e.required.push_back(to.operands[e.operand]);
        e.partialGrad.push_back(grad && to.operands[e.operand] == kReplicated &&
                                splitsWork(to));
      }
      for (const ShardingStrategy &from : p.nodeStrategies[e.producer]) {
        int64_t produced = from.results[e.result];
        double reduce = 0;
        if (grad) {
          FailureOr<double> t =
              pricer.reduceOnto(produced, result.getType(),
                                isa<graph::ParamOp>(result.getOwner()));
          if (failed(t))
            return pricingError();
          reduce = *t;
        }
        e.gradReduce.push_back(reduce);
        auto &row = e.cost.emplace_back();
        for (auto [j, to] : llvm::enumerate(strategies)) {
          int64_t read = to.operands[e.operand];
          FailureOr<double> t = pricer.reshard(produced, read, result.getType());
          if (failed(t))
            return pricingError();
          double total = *t;
          // The gradient goes back from the layout read to the one made.
          if (grad) {
            t = pricer.reshard(read, produced, result.getType());
            if (failed(t))
              return pricingError();
            total += *t;
          }
          if (e.partialGrad[j])
            total += reduce;
          row.push_back(total);
        }
      }
      auto [group, inserted] =
          valueGroup.try_emplace(result, p.edgesOfValue.size());
      if (inserted)
        p.edgesOfValue.emplace_back();
      p.edgesOfValue[group->second].push_back(p.dataEdges.size());
      p.dataEdges.push_back(std::move(e));
    }
  }
  return p;
}

std::optional<unsigned> IntraOpProblem::nodeOf(Operation *op) const {
  auto it = index.find(op);
  if (it == index.end())
    return std::nullopt;
  return it->second;
}

double IntraOpProblem::cost(llvm::ArrayRef<unsigned> choice) const {
  double total = 0;
  for (unsigned n = 0; n < ops.size(); ++n)
    total += nodeCosts[n][choice[n]];
  // Each value pays once per distinct layout its consumers read, and once
  // for reducing its gradient if some consumer leaves it partial.
  for (const std::vector<unsigned> &group : edgesOfValue) {
    llvm::SmallVector<int64_t> paid;
    bool reduced = false;
    for (unsigned index : group) {
      const IntraOpEdge &e = dataEdges[index];
      unsigned from = choice[e.producer], to = choice[e.consumer];
      if (e.partialGrad[to] && !reduced) {
        reduced = true;
        total += e.gradReduce[from];
      }
      int64_t layout = e.required[to];
      if (llvm::is_contained(paid, layout))
        continue;
      paid.push_back(layout);
      total += e.reshardCost(from, to);
    }
  }
  return total;
}

double IntraOpProblem::paramBytes(llvm::ArrayRef<unsigned> choice) const {
  double total = 0;
  for (unsigned n = 0; n < ops.size(); ++n)
    total += nodeParamBytes[n][choice[n]];
  return total;
}

std::vector<unsigned> IntraOpProblem::replicatedChoice() const {
  return std::vector<unsigned>(ops.size(), 0);
}

} // namespace cleave::search
