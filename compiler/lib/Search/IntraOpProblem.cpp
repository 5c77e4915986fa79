//===- IntraOpProblem.cpp - Nodes, strategies and costs of the search ----===//

#include "cleave/Search/IntraOpSearch.h"

#include "cleave/Dialect/Graph/IR/GraphInterfaces.h"
#include "cleave/Dialect/Graph/IR/GraphAttrs.h"
#include "cleave/Dialect/Graph/IR/GraphOps.h"
#include "cleave/Dialect/Graph/IR/ShapeInference.h"

#include "llvm/ADT/DenseSet.h"

#include <algorithm>
#include <map>
#include <tuple>

using namespace mlir;

namespace cleave::search {

namespace {

/// Prices ops and collectives on one cluster and mesh, caching collectives
/// (a block asks for the same few sizes again and again). The mesh has up
/// to three logical axes laid row-major over the ranks from the first: the
/// last axis runs over neighbouring ranks (inside a node first), the first
/// over the farthest.
class Pricer {
public:
  Pricer(const cost::Cluster &cluster, llvm::ArrayRef<int64_t> shape,
         int64_t firstRank, const cost::Profile *profile)
      : cluster(cluster), shape(shape), profile(profile),
        inStepWait(cost::inStepCollectiveWait(cluster, profile)) {
    groups.resize(shape.size());
    int64_t stride = 1;
    for (int a = int(shape.size()) - 1; a >= 0; --a) {
      groups[a] = cost::Group::strided(firstRank, shape[a], stride);
      stride *= shape[a];
    }
  }

  FailureOr<double> collective(unsigned axis, cost::Collective kind,
                               double bytes) {
    if (shape[axis] <= 1 || bytes <= 0)
      return 0.0;
    auto key = std::make_tuple(axis, int(kind), bytes);
    if (auto it = cache.find(key); it != cache.end())
      return it->second;
    auto c = cost::estimateCollective(kind, bytes, groups[axis], cluster,
                                      profile);
    if (!c.ok()) {
      error = std::string(c.status().message());
      return failure();
    }
    // Every collective here runs between the layer's compute: where ranks
    // share cores it also waits for the slowest, however small it is, so
    // a layout with fewer collectives wins there.
    return cache[key] = c->seconds + inStepWait;
  }

  /// The bytes a device holds of a `bytes` tensor laid out as `dims`,
  /// leaving out the split over `axis` (what a collective on that axis
  /// moves per device).
  double bytesBeside(double bytes, llvm::ArrayRef<int64_t> dims,
                     unsigned axis) const {
    for (unsigned b = 0; b < dims.size(); ++b)
      if (b != axis && dims[b] != kReplicated)
        bytes /= shape[b];
    return bytes;
  }

  /// from -> to, axis by axis (see IntraOpSearch.h). A split of what a
  /// device holds whole moves nothing between devices, but forward
  /// (`sliceCopies`) the slice is a copy of its share (the runtime's
  /// shard_slice): without its price a weight kept whole and sliced every
  /// step ties with one stored split, and a Llama 3 70B tp=8 generation
  /// step kept every v_proj whole (2.3 GiB a device). A gradient split
  /// back comes from its reduce-scatter (gradReduce) or is sliced beside
  /// it, not priced again.
  FailureOr<double> reshard(int64_t from, int64_t to, Type type,
                            bool sliceCopies = false) {
    if (from == to)
      return 0.0;
    double bytes = graph::tensorBytes(type), total = 0;
    auto f = unpackLayout(from, shape.size()), t = unpackLayout(to, shape.size());
    bool slices = false;
    for (unsigned a = 0; a < shape.size(); ++a)
      slices = slices || (f[a] == kReplicated && t[a] != kReplicated);
    if (slices && sliceCopies) {
      FailureOr<double> c = copy(bytesBeside(bytes, t, shape.size()));
      if (failed(c))
        return failure();
      total += *c;
    }
    for (unsigned a = 0; a < shape.size(); ++a) {
      if (f[a] == t[a] || f[a] == kReplicated)
        continue;
      double share = bytesBeside(bytes, f, a);
      FailureOr<double> c =
          t[a] == kReplicated
              ? collective(a, cost::Collective::AllGather, share)
              : collective(a, cost::Collective::AllToAll, share / shape[a]);
      if (failed(c))
        return failure();
      total += *c;
    }
    return total;
  }

  /// A copy of `bytes` within a device (read once, written once).
  FailureOr<double> copy(double bytes) {
    if (bytes <= 0)
      return 0.0;
    cost::GenericOp g;
    g.bytesRead = bytes;
    g.bytesWritten = bytes;
    auto c = cost::estimateGeneric(g, cluster, profile);
    if (!c.ok()) {
      error = std::string(c.status().message());
      return failure();
    }
    return c->seconds;
  }

  /// A parameter's gradient is not reduced alone: the lowering packs them
  /// into buckets of 25 MiB (GradientLowering.cpp, as PyTorch DDP does), so
  /// each pays its share of a bucket's reduction, not a latency of its own.
  /// On `axis`, onto the layout `dims` of the value, of which earlier
  /// reductions on other axes left a `share`.
  FailureOr<double> reduceOnto(unsigned axis, llvm::ArrayRef<int64_t> dims,
                               Type type, bool bucketed, double share = 1) {
    constexpr double kBucketBytes = 25 << 20;
    double bytes = bytesBeside(graph::tensorBytes(type), dims, axis) * share;
    auto kind = dims[axis] == kReplicated ? cost::Collective::AllReduce
                                          : cost::Collective::ReduceScatter;
    if (!bucketed || bytes >= kBucketBytes)
      return collective(axis, kind, bytes);
    FailureOr<double> bucket = collective(axis, kind, kBucketBytes);
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
      return collective(c.axis, cost::Collective::ReduceScatter, c.bytes);
    case cost::Collective::ReduceScatter:
      return collective(c.axis, cost::Collective::AllGather, c.bytes);
    case cost::Collective::AllToAll:
      return collective(c.axis, cost::Collective::AllToAll, c.bytes);
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
    auto c = cost::estimateGeneric(g, cluster, profile);
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
      c = cost::estimateGemm(*s.gemm, cluster, profile);
    } else {
      auto work = dyn_cast<graph::CostOpInterface>(op);
      if (!work)
        return 0.0;
      cost::GenericOp g;
      g.flops = work.getFlops() * s.workShare;
      g.bytesRead = work.getBytesRead() * s.workShare;
      g.bytesWritten = work.getBytesWritten() * s.workShare;
      g.tensorCores = work.usesTensorCores();
      if (g.flops == 0 && g.bytesRead == 0 && g.bytesWritten == 0)
        return 0.0;
      if (op->getNumResults())
        if (auto t = dyn_cast<ShapedType>(op->getResult(0).getType()))
          g.dtype = costDType(t.getElementType());
      c = cost::estimateGeneric(g, cluster, profile);
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
  llvm::SmallVector<int64_t, 3> shape;
  const cost::Profile *profile;
  /// What each collective waits for the slowest rank where ranks share
  /// cores (cost::inStepCollectiveWait).
  double inStepWait;
  std::vector<cost::Group> groups;
  std::map<std::tuple<unsigned, int, double>, double> cache;
};

/// Whether strategy `s` divides the op's work over its axis: an operand it
/// reads whole then receives a partial gradient from each device.
bool splitsWork(const ShardingStrategy &s) {
  auto split = [](int64_t d) { return d != kReplicated; };
  return s.partial != PartialReduction::None ||
         llvm::any_of(s.operands, split) || llvm::any_of(s.results, split);
}

/// The strategies of one op on every axis of the mesh, composed: one per
/// combination (Alpa's 2-D strategies), where a dimension split over
/// several axes must be divisible by their sizes together (axis 0's blocks
/// outermost). Layouts are packed
/// (packLayout), the work share and per-device GEMM multiply, each axis's
/// collectives run on that axis's groups over the bytes the other axes
/// leave a device. `splitAxes` gets, per composite, the axes it splits work
/// over.
void compose(Operation *op, llvm::ArrayRef<int64_t> shape,
             llvm::ArrayRef<llvm::SmallVector<ShardingStrategy, 0>> perAxis,
             llvm::SmallVectorImpl<ShardingStrategy> &out,
             std::vector<unsigned> &splitAxes) {
  unsigned axes = perAxis.size();
  if (axes == 1) {
    for (const ShardingStrategy &s : perAxis[0]) {
      out.push_back(s);
      splitAxes.push_back(splitsWork(s) ? 1u : 0u);
    }
    return;
  }
  const ShardingStrategy &whole = perAxis[0].front();
  llvm::SmallVector<size_t, 3> pick(axes, 0);
  while (true) {
    llvm::SmallVector<const ShardingStrategy *, 3> parts;
    for (unsigned a = 0; a < axes; ++a)
      parts.push_back(&perAxis[a][pick[a]]);
    // Packs one tensor's layout, or fails where two axes split one dim.
    // Packs one tensor's layout, or fails where several axes split one
    // dimension that their sizes together do not divide.
    auto layout = [&](auto member, size_t i, Type type, int64_t &packed) {
      llvm::SmallVector<int64_t, 3> dims;
      for (const ShardingStrategy *s : parts)
        dims.push_back(((*s).*member)[i]);
      auto ranked = dyn_cast<RankedTensorType>(type);
      for (unsigned a = 0; a < axes; ++a) {
        if (dims[a] == kReplicated)
          continue;
        int64_t ways = 1;
        for (unsigned b = 0; b < axes; ++b)
          if (dims[b] == dims[a])
            ways *= shape[b];
        if (!ranked || ranked.getDimSize(dims[a]) % ways != 0)
          return false;
      }
      packed = packLayout(dims);
      return true;
    };
    ShardingStrategy c;
    bool ok = true;
    for (size_t i = 0; ok && i < whole.operands.size(); ++i)
      ok = layout(&ShardingStrategy::operands, i, op->getOperand(i).getType(),
                  c.operands.emplace_back());
    for (size_t i = 0; ok && i < whole.results.size(); ++i)
      ok = layout(&ShardingStrategy::results, i, op->getResult(i).getType(),
                  c.results.emplace_back());
    if (ok) {
      unsigned mask = 0;
      bool allReplicated = true;
      for (unsigned a = 0; a < axes; ++a) {
        const ShardingStrategy &s = *parts[a];
        allReplicated &= s.name == whole.name;
        c.name += (a ? "|" : "") + s.name;
        c.workShare *= s.workShare;
        if (c.partial == PartialReduction::None)
          c.partial = s.partial;
        if (splitsWork(s))
          mask |= 1u << a;
        for (StrategyCollective k : s.collectives) {
          k.axis = a;
          for (unsigned b = 0; b < axes; ++b)
            if (b != a)
              k.bytes *= parts[b]->workShare;
          c.collectives.push_back(k);
        }
      }
      if (allReplicated)
        c.name = whole.name;
      if (whole.gemm && llvm::all_of(parts, [](auto *s) { return s->gemm; })) {
        cost::Gemm g = *whole.gemm;
        for (const ShardingStrategy *s : parts) {
          auto shrink = [](int64_t &dim, int64_t full, int64_t part) {
            if (part > 0 && full % part == 0)
              dim /= full / part;
          };
          shrink(g.m, whole.gemm->m, s->gemm->m);
          shrink(g.n, whole.gemm->n, s->gemm->n);
          shrink(g.k, whole.gemm->k, s->gemm->k);
          shrink(g.batch, whole.gemm->batch, s->gemm->batch);
        }
        c.gemm = g;
      }
      out.push_back(std::move(c));
      splitAxes.push_back(mask);
    }
    unsigned a = 0;
    while (a < axes && ++pick[a] == perAxis[a].size())
      pick[a++] = 0;
    if (a == axes)
      break;
  }
}

} // namespace

int64_t packLayout(llvm::ArrayRef<int64_t> dims) {
  if (dims.size() == 1)
    return dims[0];
  int64_t packed = 0;
  bool split = false;
  for (auto [a, d] : llvm::enumerate(dims)) {
    split |= d != kReplicated;
    packed |= (d + 1) << (8 * a);
  }
  return split ? packed : kReplicated;
}

llvm::SmallVector<int64_t, 3> unpackLayout(int64_t layout, unsigned axes) {
  if (axes == 1)
    return {layout};
  llvm::SmallVector<int64_t, 3> dims(axes, kReplicated);
  if (layout != kReplicated)
    for (unsigned a = 0; a < axes; ++a)
      dims[a] = ((layout >> (8 * a)) & 255) - 1;
  return dims;
}

namespace {
/// The token (sequence) dimension of each value that carries one: the
/// inputs' dimension 1, followed through the strategies' own dimension
/// mappings. With `inputDim` 0, the batch dimension instead.
class TokenDims {
public:
  explicit TokenDims(int64_t inputDim = 1) : inputDim(inputDim) {}

  int64_t of(Value v) const {
    auto it = dims.find(v);
    return it == dims.end() ? kReplicated : it->second;
  }

  /// Whether `s` reads every operand of `op` that carries the sequence
  /// whole or split along it; `splitsTokens` tells whether one is split.
  bool readsTokens(Operation &op, const ShardingStrategy &s,
                   bool &splitsTokens) const {
    splitsTokens = false;
    for (auto [i, operand] : llvm::enumerate(op.getOperands())) {
      int64_t seq = of(operand);
      if (seq == kReplicated)
        continue;
      if (s.operands[i] != kReplicated && s.operands[i] != seq)
        return false;
      splitsTokens |= s.operands[i] == seq;
    }
    return true;
  }

  /// Records and returns the sequence dimension of `op`'s first result
  /// (kReplicated: none), read off `strategies` before any is ruled out.
  int64_t record(Operation &op, ArrayRef<ShardingStrategy> strategies) {
    if (op.getNumResults() == 0)
      return kReplicated;
    Value result = op.getResult(0);
    int64_t seq = kReplicated;
    if (isa<graph::InputOp>(op)) {
      auto type = dyn_cast<RankedTensorType>(result.getType());
      if (type && type.getRank() >= std::max<int64_t>(2, inputDim + 1))
        seq = inputDim;
    } else {
      // The first strategy (in operand order) that carries an operand's
      // sequence into a split result names the result's sequence
      // dimension: a query's, not a key's, for the attention scores.
      for (auto [i, operand] : llvm::enumerate(op.getOperands())) {
        int64_t operandSeq = of(operand);
        if (operandSeq == kReplicated || seq != kReplicated)
          continue;
        for (const ShardingStrategy &s : strategies) {
          bool splits;
          if (s.partial == PartialReduction::None &&
              s.operands[i] == operandSeq && s.results[0] != kReplicated &&
              readsTokens(op, s, splits)) {
            seq = s.results[0];
            break;
          }
        }
      }
    }
    if (seq != kReplicated)
      dims[result] = seq;
    return seq;
  }

private:
  int64_t inputDim;
  llvm::DenseMap<Value, int64_t> dims;
};
} // namespace

/// Context parallelism splits tokens: every value that carries the
/// sequence may be split only along it, weights are never split for their
/// own sake, and partial sums are left only by reductions over the tokens
/// (the loss). So the only strategies kept are the replicated one and
/// those that split along the sequence; attention then reads the other
/// blocks' keys and values whole (an all-gather), and a causal softmax of
/// a query block is told its place by the partitioner.
static void restrictToTokenSplits(Operation &op,
                                  SmallVectorImpl<ShardingStrategy> &strategies,
                                  int64_t seq, const TokenDims &tokens) {
  if (op.getNumResults() == 0)
    return;
  llvm::erase_if(strategies, [&](const ShardingStrategy &s) {
    if (s.name == "replicated")
      return false;
    bool splits;
    if (!tokens.readsTokens(op, s, splits))
      return true;
    if (s.partial != PartialReduction::None)
      return !splits; // a reduction over tokens (the loss) may leave partials
    return s.results[0] != seq;
  });
}

/// Sequence parallelism ruled out: Megatron's tensor parallelism without
/// it, which is what a plan with sp=off was priced as. Partial sums are
/// completed by all-reduces, never reduce-scattered, and no value that
/// carries the sequence is split along it, so the activations between the
/// blocks stay whole on every device. Left free, the search scatters the
/// blocks' partial sums by itself (along the sequence, or along the hidden
/// dimension, which saves the same memory; a reduce-scatter and the
/// all-gather before the next norm cost what the all-reduce does), and
/// the plan would run the sequence parallelism its knob says it has not.
/// Whether `op`'s result is on the residual stream: read by a norm, or by
/// an element-wise op (the residual add, the bias add and dropout before
/// it) whose own result is. Memoised in `memo`: the search asks op by op,
/// and a chain runs through every layer.
static bool feedsResidualStream(Operation *op,
                                llvm::DenseMap<Operation *, bool> &memo) {
  if (op->getNumResults() == 0)
    return false;
  if (auto it = memo.find(op); it != memo.end())
    return it->second;
  memo[op] = false; // SSA has no cycles; this only guards the recursion
  bool feeds = llvm::any_of(op->getResult(0).getUsers(), [&](Operation *u) {
    if (isa<graph::LayerNormOp, graph::RmsNormOp>(u))
      return true;
    return isa<graph::AddOp, graph::SubOp, graph::MulOp, graph::DropoutOp,
               graph::CastOp>(u) &&
           feedsResidualStream(u, memo);
  });
  return memo[op] = feeds;
}

static void ruleOutSequenceParallel(Operation &op,
                                    SmallVectorImpl<ShardingStrategy> &strategies,
                                    int64_t seq, const TokenDims &tokens,
                                    llvm::DenseMap<Operation *, bool> &residual) {
  // The residual stream is whole, as in Megatron-LM without sequence
  // parallelism: what a norm reads, and the element-wise ops on the way
  // there (bias add, dropout, residual add) with what they read of it. Left
  // to split those along the hidden dimension, the search saves a bias add
  // on a quarter of the elements at the price of a gather each: an output
  // projection run column-parallel between two all-gathers, or an
  // all-reduce sliced and gathered again, where Megatron's row-parallel
  // projection needs its all-reduce alone.
  bool onResidual = feedsResidualStream(&op, residual);
  auto scatters = [&](const ShardingStrategy &s) {
    if (s.partial == PartialReduction::ReduceScatter ||
        (onResidual && s.results[0] != kReplicated))
      return true;
    for (auto [i, operand] : llvm::enumerate(op.getOperands()))
      if (int64_t d = tokens.of(operand); d != kReplicated && s.operands[i] == d)
        return true;
    return seq != kReplicated && s.results[0] == seq;
  };
  if (!llvm::all_of(strategies, scatters))
    llvm::erase_if(strategies, scatters);
}

/// Tensor parallelism of a transformer's weights (a transformer plan's
/// tp, `noBatchSplit`): no value that carries the batch (the inputs'
/// dimension 0, followed as TokenDims follows the sequence; `batchDim` is
/// what TokenDims recorded for `op`) is split along it, and a contraction
/// with a weight (an operand made from parameters alone) splits none of
/// the tokens it reads, along the batch or the sequence, so it runs on its
/// stored block of the weight (Megatron's column and row splits) instead
/// of gathering the weight for a block of tokens. Each rule holds where
/// the op has a strategy that keeps it. Splitting the tokens over the
/// devices with the weights gathered is data parallelism with ZeRO-3's
/// gathers: the plan's own dp and zero knobs, priced as such. Left free on
/// a small model (hidden 512, 1024 tokens a microbatch) the search runs
/// the attention projections that way, which the plan was not priced as;
/// sequence parallelism still splits the norms and the values between the
/// blocks along the sequence.
static void ruleOutTokenSplitsOfTheModel(
    Operation &op, SmallVectorImpl<ShardingStrategy> &strategies,
    int64_t batchDim, const TokenDims &batch, const TokenDims &tokens,
    const llvm::DenseSet<Value> &weights) {
  auto splitsBatch = [&](const ShardingStrategy &s) {
    for (auto [i, operand] : llvm::enumerate(op.getOperands()))
      if (int64_t d = batch.of(operand);
          d != kReplicated && i < s.operands.size() && s.operands[i] == d)
        return true;
    return batchDim != kReplicated && !s.results.empty() &&
           s.results[0] == batchDim;
  };
  if (!llvm::all_of(strategies, splitsBatch))
    llvm::erase_if(strategies, splitsBatch);
  bool readsWeight = llvm::any_of(
      op.getOperands(), [&](Value v) { return weights.contains(v); });
  if (!readsWeight)
    return;
  auto splitsTokens = [&](const ShardingStrategy &s) {
    if (!s.gemm)
      return false;
    for (auto [i, operand] : llvm::enumerate(op.getOperands())) {
      if (i >= s.operands.size() || s.operands[i] == kReplicated)
        continue;
      if (s.operands[i] == tokens.of(operand) ||
          s.operands[i] == batch.of(operand))
        return true;
    }
    return false;
  };
  if (!llvm::all_of(strategies, splitsTokens))
    llvm::erase_if(strategies, splitsTokens);
}

FailureOr<IntraOpProblem> IntraOpProblem::build(func::FuncOp func,
                                                const cost::Cluster &cluster,
                                                int64_t meshSize,
                                                const IntraOpOptions &options) {
  return build(func, cluster, llvm::ArrayRef<int64_t>{meshSize}, options);
}

FailureOr<IntraOpProblem>
IntraOpProblem::build(func::FuncOp func, const cost::Cluster &cluster,
                      llvm::ArrayRef<int64_t> meshShape,
                      const IntraOpOptions &options) {
  if (meshShape.empty() || meshShape.size() > kMaxMeshAxes)
    return func.emitOpError() << "a mesh has 1 to " << kMaxMeshAxes
                              << " axes, got " << meshShape.size();
  int64_t meshSize = 1;
  for (int64_t n : meshShape) {
    if (n < 1)
      return func.emitOpError() << "mesh size must be positive, got " << n;
    meshSize *= n;
  }
  if (options.firstRank + meshSize > cluster.numDevices())
    return func.emitOpError()
           << "mesh of " << meshSize << " ranks does not fit cluster '"
           << cluster.name << "' of " << cluster.numDevices() << " devices";
  if (!func.getBody().hasOneBlock())
    return func.emitOpError() << "intra-op search needs a single-block body";
  unsigned axes = meshShape.size();
  if (axes > 1 && (options.sequenceParallel || options.contextParallel))
    return func.emitOpError()
           << "sequence and context parallelism are searched on a 1-D mesh";
  // Its rules compare one axis's layouts (ruleOutTokenSplitsOfTheModel).
  if (axes > 1 && options.noBatchSplit)
    return func.emitOpError()
           << "no-batch-split (a transformer plan's tensor parallelism) is "
              "searched on a 1-D mesh";

  IntraOpProblem p;
  p.mesh = meshSize;
  p.shape.assign(meshShape.begin(), meshShape.end());
  p.memoryLimit = options.paramMemoryBytes > 0 ? options.paramMemoryBytes
                                               : cluster.device.memoryBytes;
  Pricer pricer(cluster, meshShape, options.firstRank, options.profile);
  auto pricingError = [&]() {
    return func.emitOpError() << "cost model: " << pricer.error;
  };

  llvm::DenseMap<Value, unsigned> valueGroup;
  TokenDims tokenDims, batchDims(/*inputDim=*/0);
  llvm::DenseMap<Operation *, bool> residualStream;
  // Values made from trainable parameters alone (a weight, its transpose).
  llvm::DenseSet<Value> weights;
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
    // The strategies on each axis, composed over the mesh.
    llvm::SmallVector<llvm::SmallVector<ShardingStrategy, 0>, 3> perAxis(axes);
    for (unsigned a = 0; a < axes; ++a) {
      if (auto rules = dyn_cast<ShardingStrategyOpInterface>(&op))
        rules.getShardingStrategies(meshShape[a], perAxis[a]);
      if (perAxis[a].empty())
        perAxis[a].push_back(replicatedStrategy(&op));
    }
    auto &strategies = p.nodeStrategies.emplace_back();
    std::vector<unsigned> splitAxes;
    compose(&op, meshShape, perAxis, strategies, splitAxes);
    // An op that already carries a sharding (the planner's choice, or one
    // written by hand) keeps it: the search solves for the others only.
    graph::OpShardingAttr chosen = graph::getSharding(&op);
    std::optional<size_t> pinned;
    if (chosen) {
      for (auto [i, s] : llvm::enumerate(strategies))
        if (shardingAttrOf(&op, s, axes) == chosen) {
          pinned = i;
          break;
        }
      if (!pinned) {
        InFlightDiagnostic d = op.emitOpError()
                               << "carries the sharding '"
                               << chosen.getStrategy()
                               << "', which is not one of its strategies on a "
                                  "mesh of shape [";
        llvm::interleave(meshShape, [&](int64_t n) { d << n; },
                         [&] { d << ", "; });
        d << "]";
        return failure();
      }
    }
    const ShardingStrategy pinnedStrategy =
        pinned ? strategies[*pinned] : ShardingStrategy();
    unsigned pinnedSplit = pinned ? splitAxes[*pinned] : 0u;
    // The token dimensions of a transformer plan's tensor parallelism
    // (ruleOutTokenSplitsOfTheModel), read off the strategies before any
    // is ruled out (a norm under sequence parallelism keeps only its
    // sequence splits, which carry no batch).
    int64_t batchDim = kReplicated;
    if (options.noBatchSplit)
      batchDim = batchDims.record(op, strategies);
    // Likewise the sequence dimension, before the norms below keep only
    // their replicated strategy without sequence parallelism: read after,
    // a norm's result would carry no sequence, nor would anything computed
    // from it, and the rules that follow the sequence would let the
    // attention projections split the tokens with gathered weights (which
    // they did on GPT-3 Small at tp=4, sp=off).
    int64_t seqDim = kReplicated;
    if (options.contextParallel || options.noSequenceParallel ||
        options.noBatchSplit)
      seqDim = tokenDims.record(op, strategies);
    if ((options.sequenceParallel || options.noSequenceParallel) &&
        isa<graph::LayerNormOp, graph::RmsNormOp>(op)) {
      auto type = cast<RankedTensorType>(op.getResult(0).getType());
      int64_t seqDim = type.getRank() - 2;
      auto onSequence = [&](const ShardingStrategy &s) {
        return s.results[0] == seqDim;
      };
      // Without sequence parallelism a norm runs whole, as in Megatron-LM
      // (not on batch blocks either: its output then feeds the column-
      // parallel GEMMs through an all-gather).
      auto kept = [&](const ShardingStrategy &s) {
        return options.sequenceParallel ? onSequence(s)
                                        : s.name == "replicated";
      };
      if (seqDim >= 0 && llvm::any_of(strategies, kept))
        llvm::erase_if(strategies,
                       [&](const ShardingStrategy &s) { return !kept(s); });
    }

    if (options.contextParallel)
      restrictToTokenSplits(op, strategies, seqDim, tokenDims);
    else if (options.noSequenceParallel)
      ruleOutSequenceParallel(op, strategies, seqDim, tokenDims,
                              residualStream);
    if (options.noBatchSplit) {
      ruleOutTokenSplitsOfTheModel(op, strategies, batchDim, batchDims,
                                   tokenDims, weights);
      auto param = dyn_cast<graph::ParamOp>(op);
      if ((param && param.isTrainable()) ||
          (!param && op.getNumOperands() > 0 &&
           llvm::all_of(op.getOperands(),
                        [&](Value v) { return weights.contains(v); })))
        for (Value r : op.getResults())
          weights.insert(r);
    }
    if (pinned) { // over whatever the restrictions above kept
      strategies.assign(1, pinnedStrategy);
      splitAxes.assign(1, pinnedSplit);
    }
    if (axes == 1) { // the 1-D restrictions above may have dropped some
      splitAxes.clear();
      for (const ShardingStrategy &s : strategies)
        splitAxes.push_back(splitsWork(s) ? 1u : 0u);
    }

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
        FailureOr<double> t = pricer.collective(c.axis, c.kind, c.bytes);
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
      if (isa<graph::ParamOp>(op)) {
        bytes = double(graph::tensorBytes(op.getResult(0).getType()));
        auto dims = unpackLayout(s.results[0], axes);
        for (unsigned a = 0; a < axes; ++a)
          if (dims[a] != kReplicated)
            bytes /= meshShape[a];
      }
      if (trainableParam && options.training) {
        FailureOr<double> t = pricer.update(bytes);
        if (failed(t))
          return pricingError();
        total += *t;
      }
      costs.push_back(total);
      params.push_back(bytes);
    }

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
      // The operand's gradient is partial over every axis on which the
      // consumer splits its work but reads the operand whole.
      for (auto [j, to] : llvm::enumerate(strategies)) {
        int64_t read = to.operands[e.operand];
        e.required.push_back(read);
        unsigned partial = 0;
        if (grad) {
          auto dims = unpackLayout(read, axes);
          for (unsigned a = 0; a < axes; ++a)
            if (dims[a] == kReplicated && (splitAxes[j] >> a & 1))
              partial |= 1u << a;
        }
        e.partialAxes.push_back(partial);
      }
      for (const ShardingStrategy &from : p.nodeStrategies[e.producer]) {
        int64_t produced = from.results[e.result];
        e.made.push_back(produced);
        // Per set of axes: hierarchically, the innermost (fastest) axis
        // first on the whole gradient, each outer one on the share the
        // inner ones leave (NCCL's tree over NVLink then the network).
        auto &reduce = e.gradReduce.emplace_back(1u << axes, 0.0);
        if (grad) {
          auto dims = unpackLayout(produced, axes);
          for (unsigned mask = 1; mask < (1u << axes); ++mask) {
            double share = 1;
            for (int a = int(axes) - 1; a >= 0; --a) {
              if (!(mask >> a & 1))
                continue;
              FailureOr<double> t =
                  pricer.reduceOnto(a, dims, result.getType(),
                                    isa<graph::ParamOp>(result.getOwner()),
                                    share);
              if (failed(t))
                return pricingError();
              reduce[mask] += *t;
              share /= meshShape[a];
            }
          }
        }
        auto &row = e.cost.emplace_back();
        for (auto [j, to] : llvm::enumerate(strategies)) {
          int64_t read = to.operands[e.operand];
          FailureOr<double> t =
              pricer.reshard(produced, read, result.getType(),
                             /*sliceCopies=*/true);
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
          row.push_back(total);
        }
      }
      for (size_t i = 0; i < e.cost.size(); ++i)
        for (size_t j = 0; j < strategies.size(); ++j)
          e.cost[i][j] += e.reduceCost(i, j);
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
  for (unsigned group = 0; group < edgesOfValue.size(); ++group)
    total += valueCost(group, choice);
  return total;
}

double IntraOpProblem::valueCost(unsigned group,
                                 llvm::ArrayRef<unsigned> choice) const {
  // Each value pays once per distinct layout its consumers read, and once
  // per distinct set of axes over which consumers leave its gradient
  // partial (one set in practice: consumers that split work alike).
  double total = 0;
  llvm::SmallVector<int64_t> paid;
  llvm::SmallVector<unsigned> reduced;
  for (unsigned index : edgesOfValue[group]) {
    const IntraOpEdge &e = dataEdges[index];
    unsigned from = choice[e.producer], to = choice[e.consumer];
    unsigned mask = e.partialAxes[to];
    if (mask && !llvm::is_contained(reduced, mask)) {
      reduced.push_back(mask);
      total += e.gradReduce[from][mask];
    }
    int64_t layout = e.required[to];
    if (llvm::is_contained(paid, layout))
      continue;
    paid.push_back(layout);
    total += e.reshardCost(from, to);
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

double trainableParamBytes(func::FuncOp func) {
  double bytes = 0;
  func.walk([&](graph::ParamOp p) {
    if (p.isTrainable())
      bytes += graph::tensorBytes(p.getType());
  });
  return bytes;
}

TensorParallelLimits tensorParallelLimits(func::FuncOp forward, int64_t tp,
                                          bool wholeResidualStream) {
  double split = 0, whole = 0, frozen = 0;
  llvm::DenseMap<Operation *, bool> residual;
  forward.walk([&](graph::ParamOp p) {
    // Frozen state (a generation step's key/value caches, an imported
    // model's folded tables) counts where it is held, whole at worst: the
    // limit is the trainable parameters' share on top of it.
    if (!p.isTrainable()) {
      frozen += graph::tensorBytes(p.getType());
      return;
    }
    auto type = cast<RankedTensorType>(p.getType());
    bool splits = type.getRank() >= 2 &&
                  llvm::any_of(type.getShape(),
                               [&](int64_t d) { return d % tp == 0; });
    // ruleOutSequenceParallel keeps what feeds the residual stream whole.
    if (splits && wholeResidualStream && feedsResidualStream(p, residual)) {
      splits = false;
      whole += graph::tensorBytes(type) * (1 - 1.0 / double(tp));
    }
    split += graph::tensorBytes(type) / (splits ? double(tp) : 1.0);
  });
  // 4 KiB of slack: limits are compared with sums of tensor sizes.
  return {split * 1.02 + frozen + 4096,
          trainableParamBytes(forward) / double(tp) * 1.1 + whole + frozen +
              4096};
}

} // namespace cleave::search
