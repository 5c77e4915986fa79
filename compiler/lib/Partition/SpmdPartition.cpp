//===- SpmdPartition.cpp - cleave-spmd-partition --------------------------===//
//
// Rewrites a function whose ops carry the intra-op search's shardings into
// the program every device of one mesh axis runs. The walk is in program
// order and in place: each op's operands are replaced by local values in
// the layout it reads, its results get local types, and a map from every
// original value to its local value and layout drives the next ops.
//
//===----------------------------------------------------------------------===//

#include "VocabParallel.h"

#include "cleave/Dialect/Graph/IR/GraphAttrs.h"
#include "cleave/Dialect/Graph/IR/GraphOps.h"
#include "cleave/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"

#include <optional>
#include <string>

namespace cleave {
#define GEN_PASS_DEF_SPMDPARTITION
#include "cleave/Transforms/Passes.h.inc"
} // namespace cleave

using namespace mlir;
using namespace cleave::graph;

namespace {

constexpr int64_t kReplicated = -1;

/// A value as one device holds it: the local value and the dimension of
/// the global value it is split on (kReplicated: whole).
struct Local {
  Value value;
  int64_t layout = kReplicated;
};

/// The dimension mesh axis 0 splits in each of `shardings` (kReplicated
/// when none; every value replicated without a sharding).
SmallVector<int64_t> readLayouts(ArrayRef<TensorShardingAttr> shardings,
                                 unsigned count) {
  SmallVector<int64_t> layouts(count, kReplicated);
  for (auto [i, tensor] : llvm::enumerate(shardings))
    if (i < count)
      layouts[i] = tensor.dimOf(0);
  return layouts;
}

/// True when a sharding splits a dimension over a mesh axis other than 0.
bool usesOtherAxes(OpShardingAttr sharding) {
  for (ArrayRef<TensorShardingAttr> list :
       {sharding.getOperands(), sharding.getResults()})
    for (TensorShardingAttr tensor : list)
      for (int64_t d = 0; d < tensor.getRank(); ++d)
        if (llvm::any_of(tensor.axesOf(d), [](int64_t a) { return a != 0; }))
          return true;
  return false;
}

/// Strategies whose local computation is neither the op itself on local
/// operands nor an expansion (VocabParallel.h): MoE dispatch and combine
/// split over experts need kernels that know which experts a device owns
/// (expert parallelism is cleave-expert-parallel's, on its own axis).
bool needsOwnKernel(Operation *op, StringRef strategy) {
  if (auto gather = dyn_cast<GatherOp>(op))
    return strategy.starts_with("gather.rows") && gather.getAxis() != 0;
  return strategy.starts_with("dispatch.") || strategy.starts_with("combine.");
}

/// Strategies expanded into graph ops and collectives.
bool isExpanded(Operation *op, StringRef strategy) {
  return (isa<GatherOp>(op) && strategy.starts_with("gather.rows")) ||
         (isa<CrossEntropyOp>(op) && strategy.starts_with("ce.classes"));
}

bool isFloatTensor(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && isa<FloatType>(t.getElementType());
}

RankedTensorType splitType(Type type, int64_t dim, int64_t n) {
  auto t = cast<RankedTensorType>(type);
  if (dim == kReplicated)
    return t;
  SmallVector<int64_t> shape(t.getShape());
  shape[dim] /= n;
  return t.clone(shape);
}

RankedTensorType wholeType(Type type, int64_t dim, int64_t n) {
  auto t = cast<RankedTensorType>(type);
  if (dim == kReplicated)
    return t;
  SmallVector<int64_t> shape(t.getShape());
  shape[dim] *= n;
  return t.clone(shape);
}

class Partitioner {
public:
  Partitioner(func::FuncOp func, StringRef axis, int64_t size, bool zigzag)
      : func(func), b(func.getContext()), size(size),
        zigzag(zigzag && size > 1) {
    axes = b.getStrArrayAttr({axis});
    sizeAttr = b.getI64IntegerAttr(size);
  }

  LogicalResult run();
  int64_t collectives = 0, fallbacks = 0;

private:
  /// The local value of `v` in layout `required`, resharding if needed.
  Value reshard(Local from, int64_t required, Location loc);
  Value copyToGroup(Value v, Location loc);
  /// An all-gather whose gradient is reduce-scattered, for consumers whose
  /// gradients differ between devices.
  Value gatherForDevices(Local from, Location loc);
  LogicalResult partitionOp(Operation *op);
  void partitionParam(ParamOp param, int64_t layout);
  /// `v` (whole) with its dimension `dim` reordered between sequence order
  /// and the devices' zig-zag blocks laid end to end (`toBlocks`), or back.
  Value reorderChunks(Value v, int64_t dim, bool toBlocks, Location loc);
  /// An all-gather of `from`, its chunks put back in sequence order.
  Value gatherWhole(Local from, Location loc, bool varyingGrad);

  func::FuncOp func;
  OpBuilder b;
  int64_t size;
  bool zigzag;
  /// The first error a reshard met (reshard returns a value regardless).
  std::optional<std::string> reshardError;
  ArrayAttr axes;
  IntegerAttr sizeAttr;
  llvm::DenseMap<Value, Local> locals;
  /// Collectives already built, so that a value read in one layout by
  /// several consumers is resharded once.
  llvm::DenseMap<std::pair<Value, int64_t>, Value> reshards;
  llvm::DenseMap<Value, Value> copies, varyingGathers;
  /// Ops replaced by expansions, erased once nothing reads them.
  SmallVector<Operation *> expanded;
};

Value Partitioner::reshard(Local from, int64_t required, Location loc) {
  if (from.layout == required)
    return from.value;
  Value &cached = reshards[{from.value, required}];
  if (cached)
    return cached;
  ++collectives;
  Type type = from.value.getType();
  if (from.layout == kReplicated) {
    cached = ShardSliceOp::create(b, loc, splitType(type, required, size),
                                  from.value, axes, sizeAttr,
                                  b.getI64IntegerAttr(required),
                                  zigzag ? b.getUnitAttr() : UnitAttr());
  } else if (required == kReplicated) {
    cached = gatherWhole(from, loc, /*varyingGrad=*/false);
  } else {
    if (zigzag && !reshardError)
      reshardError = "a value split along dimension " +
                std::to_string(from.layout) + " is read split along " +
                std::to_string(required) +
                ": zig-zag blocks have no all-to-all";
    cached = AllToAllOp::create(
        b, loc,
        splitType(wholeType(type, from.layout, size), required, size),
        from.value, axes, sizeAttr, b.getI64IntegerAttr(required),
        b.getI64IntegerAttr(from.layout));
  }
  return cached;
}

Value Partitioner::reorderChunks(Value v, int64_t dim, bool toBlocks,
                                 Location loc) {
  return ShardSliceOp::reorderZigzag(b, loc, v, dim, size, toBlocks);
}

Value Partitioner::gatherWhole(Local from, Location loc, bool varyingGrad) {
  Value gathered = AllGatherOp::create(
      b, loc, wholeType(from.value.getType(), from.layout, size), from.value,
      axes, sizeAttr, b.getI64IntegerAttr(from.layout),
      varyingGrad ? b.getUnitAttr() : UnitAttr());
  if (!zigzag)
    return gathered;
  return reorderChunks(gathered, from.layout, /*toBlocks=*/false, loc);
}

Value Partitioner::gatherForDevices(Local from, Location loc) {
  Value &cached = varyingGathers[from.value];
  if (!cached) {
    ++collectives;
    cached = gatherWhole(from, loc, /*varyingGrad=*/true);
  }
  return cached;
}

Value Partitioner::copyToGroup(Value v, Location loc) {
  Value &cached = copies[v];
  if (!cached)
    cached = CopyToGroupOp::create(b, loc, v, axes, sizeAttr);
  return cached;
}

void Partitioner::partitionParam(ParamOp param, int64_t layout) {
  auto global = cast<RankedTensorType>(param.getType());
  if (layout != kReplicated) {
    // A parameter an earlier pass split (expert parallelism: its experts
    // over "ep") keeps that pass's global shape, and this axis splits each
    // of its blocks again: "ep,tp" (major first).
    SmallVector<std::string> shardAxes(global.getRank());
    if (auto old = param->getAttrOfType<ArrayAttr>("cleave.shard_axes"))
      for (auto [d, a] : llvm::enumerate(old))
        if (d < shardAxes.size())
          shardAxes[d] = cast<StringAttr>(a).getValue().str();
    StringRef axis = cast<StringAttr>(axes[0]).getValue();
    shardAxes[layout] += (shardAxes[layout].empty() ? "" : ",") + axis.str();
    if (!param->hasAttr("cleave.global_shape"))
      param->setAttr("cleave.global_shape",
                     b.getDenseI64ArrayAttr(global.getShape()));
    SmallVector<StringRef> refs(shardAxes.begin(), shardAxes.end());
    param->setAttr("cleave.shard_axes", b.getStrArrayAttr(refs));
    param.getResult().setType(splitType(global, layout, size));
    // Weights the model carries stay whole, in a discardable attribute: the
    // plan stores them once and each device reads its block.
    if (auto value = param.getValueAttr()) {
      param->setAttr("cleave.global_value", value);
      param.setValueAttr(nullptr);
    }
  }
  locals[param] = {param, layout};
}

LogicalResult Partitioner::partitionOp(Operation *op) {
  unsigned numOperands = op->getNumOperands(), numResults = op->getNumResults();
  // A search on a mesh of several axes may split over the others; this
  // pass partitions one axis.
  OpShardingAttr sharding = getSharding(op);
  if (sharding && usesOtherAxes(sharding))
    return op->emitOpError()
           << kShardingAttrName
           << " splits over mesh axes other than 0; cleave-spmd-partition "
              "partitions one axis (search with mesh=N)";
  SmallVector<int64_t> required = readLayouts(
      sharding ? sharding.getOperands() : ArrayRef<TensorShardingAttr>(),
      numOperands);
  SmallVector<int64_t> produced = readLayouts(
      sharding ? sharding.getResults() : ArrayRef<TensorShardingAttr>(),
      numResults);
  StringRef strategy = sharding ? sharding.getStrategy() : "replicated";
  PartialReduction partial =
      sharding ? sharding.getPartial() : PartialReduction::None;

  if (size > 1 && needsOwnKernel(op, strategy)) {
    ++fallbacks;
    op->emitRemark() << "strategy '" << strategy
                     << "' has no local kernel yet; the op runs replicated";
    required.assign(numOperands, kReplicated);
    produced.assign(numResults, kReplicated);
    strategy = "replicated";
    partial = PartialReduction::None;
  }
  // `strategy` reads the attribute's storage, which the context keeps.
  op->removeAttr(kShardingAttrName);

  // Sources: inputs and constants stay whole (consumers slice them for
  // free); parameters are stored split.
  if (auto param = dyn_cast<ParamOp>(op)) {
    partitionParam(param, size > 1 ? produced[0] : kReplicated);
    return success();
  }
  if (isa<InputOp, ConstantOp, OptimizerStateOp>(op)) {
    for (Value r : op->getResults())
      locals[r] = {r, kReplicated};
    return success();
  }

  b.setInsertionPoint(op);
  bool perDevice = strategy != "replicated" && size > 1;
  for (unsigned i = 0; i < numOperands; ++i) {
    Value operand = op->getOperand(i);
    auto it = locals.find(operand);
    if (it == locals.end())
      return op->emitOpError("operand ") << i << " has no local value";
    int64_t want = size > 1 ? required[i] : kReplicated;
    if (!isa<RankedTensorType>(operand.getType()))
      want = kReplicated;
    Value v;
    if (perDevice && want == kReplicated && isFloatTensor(operand) &&
        it->second.layout != kReplicated) {
      // Gathered for per-device work: the devices' gradients differ, and
      // the gather's gradient reduce-scatters them (what Megatron's
      // sequence parallelism and context parallelism do), instead of an
      // all-reduce of the whole gradient followed by a slice.
      v = gatherForDevices(it->second, op->getLoc());
    } else {
      v = reshard(it->second, want, op->getLoc());
      // Constants carry no gradient: nothing to all-reduce.
      if (perDevice && want == kReplicated && isFloatTensor(v) &&
          !v.getDefiningOp<ConstantOp>())
        v = copyToGroup(v, op->getLoc());
    }
    op->setOperand(i, v);
  }

  if (size > 1 && isExpanded(op, strategy)) {
    // Vocabulary-parallel lookup (a partial sum, all-reduced below) or
    // cross-entropy (whole on every device).
    b.setInsertionPoint(op);
    cleave::partition::Group group{axes, size};
    Value local;
    if (auto gather = dyn_cast<GatherOp>(op))
      local = cleave::partition::expandRowParallelGather(
          b, gather, gather.getData(), gather.getIndices(), group);
    else
      local = cleave::partition::expandClassParallelCrossEntropy(
          b, cast<CrossEntropyOp>(op), op->getOperand(0), op->getOperand(1),
          group);
    int64_t layout = kReplicated;
    if (isa<GatherOp>(op)) {
      ++collectives;
      if (partial == PartialReduction::ReduceScatter) {
        // Summed onto a block of the result (gather.rows+rs<d>: sequence
        // parallelism's norms read their sequence block straight away).
        layout = produced[0];
        local = ReduceScatterOp::create(
            b, op->getLoc(), splitType(local.getType(), layout, size),
            zigzag ? reorderChunks(local, layout, /*toBlocks=*/true,
                                   op->getLoc())
                   : local,
            axes, sizeAttr, b.getI64IntegerAttr(layout));
      } else {
        local = AllReduceOp::create(b, op->getLoc(), local.getType(), local,
                                    axes, sizeAttr, b.getStringAttr("sum"));
      }
    }
    locals[op->getResult(0)] = {local, layout};
    expanded.push_back(op);
    return success();
  }

  b.setInsertionPointAfter(op);
  for (unsigned j = 0; j < numResults; ++j) {
    Value result = op->getResult(j);
    int64_t layout = size > 1 ? produced[j] : kReplicated;
    if (partial == PartialReduction::None) {
      result.setType(splitType(result.getType(), layout, size));
      locals[result] = {result, layout};
      // Queries split (context parallelism): the causal mask must know
      // where this device's block sits in the sequence.
      if (auto softmax = dyn_cast<SoftmaxOp>(op);
          softmax && softmax.getCausal() && layout != kReplicated &&
          layout == softmax.getType().getRank() - 2)
        softmax.setQueryBlocksAttr(axes), softmax.setZigzag(zigzag);
      if (auto attention = dyn_cast<AttentionOp>(op);
          attention && j == 0 && attention.getCausal() &&
          layout != kReplicated &&
          layout == attention.getOut().getType().getRank() - 2)
        attention.setQueryBlocksAttr(axes), attention.setZigzag(zigzag);
      // Positions of a sequence block start at its offset.
      if (auto rope = dyn_cast<RopeOp>(op);
          rope && layout == 1 && !rope.getPositions())
        rope.setPositionBlocksAttr(axes), rope.setZigzag(zigzag);
      // A slice taking a split dimension whole takes the local block whole.
      if (auto slice = dyn_cast<SliceOp>(op); slice && layout != kReplicated) {
        SmallVector<int64_t> limits(slice.getLimits());
        limits[layout] = cast<RankedTensorType>(slice.getInput().getType())
                             .getDimSize(layout);
        slice.setLimits(limits);
      }
      // Whole groups on each device.
      if (auto conv = dyn_cast<Conv2dOp>(op); conv && strategy == "conv.groups")
        conv.setGroups(conv.getGroups() / size);
      continue;
    }
    // The op leaves whole-shaped partial values; reduce them.
    ++collectives;
    Value reduced;
    if (partial == PartialReduction::ReduceScatter)
      reduced = ReduceScatterOp::create(
          b, op->getLoc(), splitType(result.getType(), layout, size),
          zigzag ? reorderChunks(result, layout, /*toBlocks=*/true,
                                 op->getLoc())
                 : result,
          axes, sizeAttr, b.getI64IntegerAttr(layout));
    else
      reduced = AllReduceOp::create(
          b, op->getLoc(), result.getType(), result, axes, sizeAttr,
          b.getStringAttr(partial == PartialReduction::AllReduce ? "sum"
                                                                 : "mean"));
    locals[result] = {reduced, partial == PartialReduction::ReduceScatter
                                   ? layout
                                   : kReplicated};
  }
  return success();
}

LogicalResult Partitioner::run() {
  if (!func.getBody().hasOneBlock())
    return func.emitOpError("the SPMD partitioner handles single-block "
                            "functions");
  for (BlockArgument arg : func.getArguments())
    locals[arg] = {arg, kReplicated};
  SmallVector<Operation *> ops;
  for (Operation &op : func.front())
    ops.push_back(&op);
  for (Operation *op : ops) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      b.setInsertionPoint(ret);
      for (unsigned i = 0; i < ret.getNumOperands(); ++i)
        ret.setOperand(i, reshard(locals.lookup(ret.getOperand(i)),
                                  kReplicated, ret.getLoc()));
      continue;
    }
    if (failed(partitionOp(op)))
      return failure();
    if (reshardError)
      return op->emitOpError(*reshardError);
  }
  for (Operation *op : llvm::reverse(expanded)) {
    if (!op->use_empty())
      return op->emitOpError("is still read after its expansion");
    op->erase();
  }
  return success();
}

struct SpmdPartitionPass
    : public cleave::impl::SpmdPartitionBase<SpmdPartitionPass> {
  using SpmdPartitionBase::SpmdPartitionBase;

  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<GraphDialect>();
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    if (size < 1) {
      func.emitOpError("spmd partition size must be positive, got ")
          << static_cast<int64_t>(size);
      return signalPassFailure();
    }
    if (axis.empty()) {
      func.emitOpError("spmd partition needs a mesh axis name");
      return signalPassFailure();
    }
    Partitioner partitioner(func, axis, size, zigzag);
    if (failed(partitioner.run()))
      return signalPassFailure();
    numCollectives += partitioner.collectives;
    numFallbacks += partitioner.fallbacks;
  }
};

} // namespace
