//===- LoweringPasses.cpp - The lowering's IR rewrites as passes ----------===//
//
// Context and tensor parallelism (the intra-op search held to what the
// plan priced, then the SPMD partitioner) and each pipeline stage's
// training step (ZeRO-3's parameter blocks, recomputation, fp32 gradient
// reductions, re-gathers for the backward pass). Passes.td says what each
// does; LoweringPipeline.cpp puts them in order.
//
//===----------------------------------------------------------------------===//

#include "cleave/Lowering/Passes.h"

#include "cleave/Analysis/LayerNumbering.h"
#include "cleave/Dialect/Graph/IR/GraphAttrs.h"
#include "cleave/Dialect/Graph/IR/GraphOps.h"
#include "cleave/Lowering/ProgramEmitter.h"
#include "cleave/Search/IntraOpSearch.h"
#include "cleave/Search/ShardingStrategy.h"
#include "cleave/Transforms/Autodiff.h"
#include "cleave/Transforms/Optimizer.h"
#include "cleave/Transforms/Passes.h"
#include "cleave/Transforms/TrainingStepBuilder.h"
#include "cleave/cost_model/Memory.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FormatVariadic.h"

namespace cleave::lowering {
#define GEN_PASS_DEF_PARTITIONCONTEXTPARALLEL
#define GEN_PASS_DEF_PARTITIONTENSORPARALLEL
#define GEN_PASS_DEF_STAGETRAININGSTEPS
#include "cleave/Lowering/Passes.h.inc"
} // namespace cleave::lowering

using namespace mlir;
namespace gr = cleave::graph;

namespace cleave::lowering {

namespace {

/// Where and how the intra-op search prices its choices.
struct SearchSettings {
  std::string clusterSpec, profilePath;
  bool training = true;
  double timeLimit = 60;
};

/// The intra-op search on one mesh axis, then the SPMD partitioner that
/// rewrites each function into one device's program on it.
LogicalResult searchAndPartition(ModuleOp module, IntraOpSearchOptions search,
                                 StringRef axis, int64_t size,
                                 const SearchSettings &o,
                                 bool zigzag = false) {
  PassManager pm(module.getContext());
  search.mesh = size;
  search.clusterSpec = o.clusterSpec;
  search.profilePath = o.profilePath;
  search.training = o.training;
  search.timeLimit = o.timeLimit;
  SpmdPartitionOptions spmd;
  spmd.axis = axis.str();
  spmd.size = size;
  spmd.zigzag = zigzag;
  OpPassManager &fpm = pm.nest<func::FuncOp>();
  fpm.addPass(createIntraOpSearch(search));
  fpm.addPass(createSpmdPartition(spmd));
  return pm.run(module);
}

/// Context parallelism: the search held to splitting tokens (parameters
/// whole, inputs split along the sequence) on the "cp" axis; the causal
/// softmax of a query block and the rotary embedding of a sequence block
/// learn their offset from the partitioner (`query_blocks`,
/// `position_blocks`). Parameter gradients are partial sums over the axis,
/// all-reduced where the parameters enter per-device work
/// (`copy_to_group`).
LogicalResult partitionContextParallel(ModuleOp module, int64_t cp,
                                       const SearchSettings &o) {
  if (cp <= 1)
    return success();
  // Shardings written before lowering are tensor-parallel ones (a graph
  // plan's, which has no cp); this search runs first and would keep them.
  if (auto forward = module.lookupSymbol<func::FuncOp>("forward")) {
    WalkResult annotated = forward.walk([](Operation *op) {
      return gr::getSharding(op) ? WalkResult::interrupt()
                                 : WalkResult::advance();
    });
    if (annotated.wasInterrupted())
      return forward.emitOpError(
          "carries tensor-parallel shardings (graph.sharding), which context "
          "parallelism cannot combine with: it partitions first");
  }
  IntraOpSearchOptions search;
  search.contextParallel = true;
  // The parameters stay whole on the cp axis by design, and this runs on
  // the whole model before pipeline stages and tensor parallelism divide
  // it: no per-device parameter limit applies here.
  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  if (forward)
    search.paramMemory = 2 * search::trainableParamBytes(forward) + 4096;
  // Fused causal attention skips the masked blocks, so contiguous blocks
  // would give the last rank 2 - 1/cp times the average work (the cost
  // model prices the balanced work): the blocks are zig-zag instead, chunks
  // g and 2cp - 1 - g of the sequence cut in 2cp. Unfused attention
  // computes every score and masks, the same work on every rank.
  bool causal = false;
  int64_t sequence = 0;
  if (forward) {
    forward.walk([&](gr::AttentionOp a) { causal |= a.getCausal(); });
    forward.walk([&](gr::InputOp input) {
      auto type = cast<RankedTensorType>(input.getType());
      if (!sequence && type.getRank() >= 2)
        sequence = type.getDimSize(1);
    });
  }
  bool zigzag = causal && sequence % (2 * cp) == 0;
  if (causal && !zigzag)
    forward.emitWarning("context parallelism keeps contiguous sequence "
                        "blocks: the sequence (")
        << sequence << ") is not a multiple of 2 x cp (" << 2 * cp
        << "), so the last cp rank computes up to "
        << llvm::formatv("{0:F2}", 2.0 - 1.0 / cp).str()
        << "x the average fused attention work";
  return searchAndPartition(module, search, "cp", cp, o, zigzag);
}

LogicalResult partitionTensorParallel(ModuleOp module, func::FuncOp forward,
                                      int64_t tp, bool sequenceParallel,
                                      bool residualBlocks,
                                      const SearchSettings &o) {
  if (tp <= 1)
    return success();
  IntraOpSearchOptions search;
  // The knob holds both ways: the search left free finds sequence-split
  // layouts by itself, and a plan priced without them would run them. A
  // graph without transformer layers has no such knob (its inputs'
  // dimension 1 is not a sequence: an image's channels), and its plan was
  // priced with the search left free (GraphPlan.h).
  search.sequenceParallel = sequenceParallel;
  search.noSequenceParallel = !sequenceParallel && !residualBlocks;
  // A transformer plan's tp splits the model; its batch is split by dp
  // (and ZeRO), which the plan prices as such. A graph plan's search is
  // free, as GraphPlan priced it.
  search.noBatchSplit = !residualBlocks;
  // A tensor-parallel degree means the parameters are split: hold each
  // device to its share and let the search choose how (tensorParallelLimits:
  // first with every divisible matrix split, which is what the plan's
  // memory was predicted with, so that a replicated 50k-row embedding does
  // not hide in the slack and cost its stage gigabytes).
  search::TensorParallelLimits limits = search::tensorParallelLimits(
      forward, tp, search.noSequenceParallel);
  search.paramMemory = limits.strict;
  if (residualBlocks) { // as the graph planner priced it (GraphPlan.h)
    search.relativeGap = limits.graphPlanGap;
    search.maxNodes = limits.graphPlanNodes;
  }
  {
    OwningOpRef<ModuleOp> attempt(module.clone());
    ScopedDiagnosticHandler quiet(module.getContext(),
                                  [](Diagnostic &) { return success(); });
    if (succeeded(searchAndPartition(*attempt, search, "tp", tp, o))) {
      module.getBodyRegion().takeBody(attempt->getBodyRegion());
      return success();
    }
  }
  search.paramMemory = limits.loose;
  return searchAndPartition(module, search, "tp", tp, o);
}

/// ZeRO-3: every trainable parameter of a stage with a dimension that the
/// replicas divide is stored as one replica's block and all-gathered where
/// it is read. The gather's gradient is the reduce-scatter of the
/// replicas' gradients (`varying_grad`), so each replica ends the backward
/// pass with its block's summed gradient and updates only that block.
void shardParametersOverReplicas(func::FuncOp stage, int64_t replicaCount,
                                 int64_t ep, int64_t cp) {
  OpBuilder b(stage.getContext());
  // Collected first: the rewrite erases the casts that read a parameter.
  SmallVector<gr::ParamOp> params;
  stage.walk([&](gr::ParamOp param) { params.push_back(param); });
  for (gr::ParamOp param : params) [&] {
    if (!param.isTrainable())
      return;
    // Under context parallelism a parameter copied into the "cp" group
    // (its gradient partial on each cp rank) is split over dp x cp: the
    // gather over them replaces the copy, and the gather's gradient, a
    // reduce-scatter over dp x cp, sums the cp ranks' partial gradients.
    // (Mixed precision may have cast the parameter before the copy.)
    SmallVector<gr::CopyToGroupOp> copies;
    auto collect = [&](Value v) {
      for (Operation *user : v.getUsers())
        if (auto copy = dyn_cast<gr::CopyToGroupOp>(user);
            copy && copy.getAxes().size() == 1 &&
            cast<StringAttr>(copy.getAxes()[0]).getValue() == "cp")
          copies.push_back(copy);
    };
    if (cp > 1) {
      collect(param.getResult());
      for (Operation *user : param->getUsers())
        if (isa<gr::CastOp>(user))
          collect(user->getResult(0));
    }
    Replicas replicas =
        zeroReplicasOf(param, replicaCount, ep, copies.empty() ? 1 : cp);
    int64_t dp = replicas.count;
    if (dp <= 1)
      return;
    auto type = cast<RankedTensorType>(param.getType());
    int64_t dim = -1;
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (type.getDimSize(d) >= dp && type.getDimSize(d) % dp == 0) {
        dim = d;
        break;
      }
    if (dim < 0)
      return;
    for (gr::CopyToGroupOp copy : copies) {
      copy.getResult().replaceAllUsesWith(copy.getInput());
      copy->erase();
    }
    SmallVector<std::string> axes(type.getRank());
    if (auto old = param->getAttrOfType<ArrayAttr>("cleave.shard_axes"))
      for (auto [d, a] : llvm::enumerate(old))
        axes[d] = cast<StringAttr>(a).getValue().str();
    for (const std::string &axis : replicas.axes)
      axes[dim] += (axes[dim].empty() ? "" : ",") + axis;
    if (!param->hasAttr("cleave.global_shape"))
      param->setAttr("cleave.global_shape",
                     b.getDenseI64ArrayAttr(type.getShape()));
    SmallVector<StringRef> refs(axes.begin(), axes.end());
    param->setAttr("cleave.shard_axes", b.getStrArrayAttr(refs));
    param->setAttr("cleave.zero_sharded", b.getUnitAttr());
    param->setAttr("cleave.zero_axes", b.getStringAttr(replicas.joined()));
    SmallVector<int64_t> shape(type.getShape());
    shape[dim] /= dp;
    param.getResult().setType(type.clone(shape));
    b.setInsertionPointAfter(param);
    SmallVector<StringRef> gatherAxes(replicas.axes.begin(),
                                      replicas.axes.end());
    // Mixed precision reads the parameter only through casts to one 16-bit
    // type: the block is cast and the gather carries 16 bits (FSDP's
    // param_dtype), the block itself staying the fp32 master.
    Type half;
    bool castOnly = !param->use_empty();
    for (Operation *user : param->getUsers()) {
      auto castOp = dyn_cast<gr::CastOp>(user);
      Type to = castOp ? cast<RankedTensorType>(castOp.getType())
                             .getElementType()
                       : Type();
      castOnly &= to && to.getIntOrFloatBitWidth() == 16 &&
                  (!half || half == to);
      half = to;
    }
    Value source = param;
    Type gathered = type;
    if (castOnly) {
      source = gr::CastOp::create(b, param.getLoc(),
                                  RankedTensorType::get(shape, half), param);
      gathered = RankedTensorType::get(type.getShape(), half);
    }
    auto gather = gr::AllGatherOp::create(
        b, param.getLoc(), gathered, source, b.getStrArrayAttr(gatherAxes),
        b.getI64IntegerAttr(dp), b.getI64IntegerAttr(dim), b.getUnitAttr());
    if (!castOnly) {
      param.getResult().replaceAllUsesExcept(gather, gather);
      return;
    }
    for (Operation *user : llvm::make_early_inc_range(param->getUsers()))
      if (user != source.getDefiningOp()) {
        user->getResult(0).replaceAllUsesWith(gather);
        user->erase();
      }
  }();
}

/// A 16-bit gradient reduce-scattered and then widened (the backward pass
/// of a ZeRO-3 parameter gathered in 16 bits, shardParametersOverReplicas)
/// is widened first and reduced in fp32, as the plan prices weight-gradient
/// reductions under bf16 and as Megatron-LM reduces them: a sum of dp
/// bf16 gradients rounded at every step would lose their low bits.
void reduceGradientsInFp32(func::FuncOp step) {
  SmallVector<gr::ReduceScatterOp> found;
  step.walk([&](gr::ReduceScatterOp rs) {
    auto type = cast<RankedTensorType>(rs.getType());
    if (type.getElementType().getIntOrFloatBitWidth() != 16 ||
        !rs->hasOneUse())
      return;
    auto widen = dyn_cast<gr::CastOp>(*rs->getUsers().begin());
    if (widen && cast<RankedTensorType>(widen.getType())
                     .getElementType()
                     .isF32())
      found.push_back(rs);
  });
  OpBuilder b(step.getContext());
  for (gr::ReduceScatterOp rs : found) {
    auto widen = cast<gr::CastOp>(*rs->getUsers().begin());
    b.setInsertionPoint(rs);
    auto inType = cast<RankedTensorType>(rs.getInput().getType());
    Value wide = gr::CastOp::create(
        b, widen.getLoc(),
        RankedTensorType::get(inType.getShape(), b.getF32Type()),
        rs.getInput());
    auto reduced = gr::ReduceScatterOp::create(
        b, rs.getLoc(), widen.getType(), wide, rs.getAxesAttr(),
        rs.getGroupSizeAttr(), rs.getDimAttr());
    for (NamedAttribute attr : rs->getDiscardableAttrs())
      reduced->setAttr(attr.getName(), attr.getValue());
    for (NamedAttribute attr : widen->getDiscardableAttrs())
      wide.getDefiningOp()->setAttr(attr.getName(), attr.getValue());
    widen.getResult().replaceAllUsesWith(reduced.getResult());
    widen.erase();
    rs.erase();
  }
}

/// A gathered value the backward pass reads is gathered again there from
/// its block instead of being stashed whole: a ZeRO-3 parameter (otherwise
/// every microbatch in flight would hold a gathered copy) and, under
/// sequence parallelism, the norm output that the column-parallel matmul
/// reads (stashed whole it costs t times its block; Megatron-LM gathers it
/// again in the backward pass for the same reason).
///
/// So too a parameter's bf16 copy under mixed precision (and the gather and
/// group copy it passes through): cast again from the fp32 master where
/// the backward pass reads it, as Megatron-LM reads its one bf16 copy,
/// rather than stashed once per microbatch in flight.
void regatherForBackward(func::FuncOp step) {
  // A forward op that only gathers, casts or copies a parameter into a
  // group (the chain is recomputed from the parameter).
  std::function<bool(Operation *)> viewsParam = [&](Operation *op) {
    if (!op || op->hasAttr("cleave.phase") ||
        !isa<gr::AllGatherOp, gr::CastOp, gr::CopyToGroupOp>(op))
      return false;
    Operation *def = op->getOperand(0).getDefiningOp();
    return isa_and_nonnull<gr::ParamOp>(def) || viewsParam(def);
  };
  // Such a chain through a cast (mixed precision's bf16 copy).
  std::function<bool(Operation *)> castsParam = [&](Operation *op) {
    return viewsParam(op) &&
           (isa<gr::CastOp>(op) ||
            castsParam(op->getOperand(0).getDefiningOp()));
  };
  // The gathers, the identity copies into a tensor-parallel group that
  // read them (the copy is what the matmul reads, so it is what would be
  // stashed), and the parameters' casts.
  // Zig-zag context parallelism puts a gathered block's chunks back in
  // sequence order (a gather of constant indices): that copy is what the
  // backward pass reads, and is made again with its all-gather.
  auto reordersGather = [](Operation *op) {
    auto gather = dyn_cast_or_null<gr::GatherOp>(op);
    return gather && gather.getData().getDefiningOp<gr::AllGatherOp>() &&
           gather.getIndices().getDefiningOp<gr::ConstantOp>();
  };
  SmallVector<Operation *> roots;
  step.walk([&](Operation *op) {
    if (op->hasAttr("cleave.phase"))
      return;
    if (isa<gr::AllGatherOp>(op) || castsParam(op) || reordersGather(op))
      roots.push_back(op);
    else if (auto copy = dyn_cast<gr::CopyToGroupOp>(op))
      if (copy.getInput().getDefiningOp<gr::AllGatherOp>())
        roots.push_back(op);
  });
  auto isBackward = [](OpOperand &use) {
    return use.getOwner()->hasAttr("cleave.phase");
  };
  OpBuilder b(step.getContext());
  for (Operation *root : roots) {
    Operation *first = nullptr;
    for (Operation *user : root->getUsers())
      if (user->hasAttr("cleave.phase") &&
          (!first || user->isBeforeInBlock(first)))
        first = user;
    if (!first)
      continue;
    b.setInsertionPoint(first);
    auto phase = first->getAttr("cleave.phase");
    // The chain below the root, source first: a parameter view's back to
    // the parameter, a group copy's gather.
    SmallVector<Operation *> chain;
    for (Operation *def = root->getOperand(0).getDefiningOp();
         def && (viewsParam(def) ||
                 ((isa<gr::CopyToGroupOp>(root) || reordersGather(root)) &&
                  chain.empty() && isa<gr::AllGatherOp>(def)));
         def = def->getOperand(0).getDefiningOp())
      chain.push_back(def);
    IRMapping map;
    for (Operation *op : llvm::reverse(chain))
      b.clone(*op, map)->setAttr("cleave.phase", phase);
    Operation *copy = b.clone(*root, map);
    copy->setAttr("cleave.phase", phase);
    root->getResult(0).replaceUsesWithIf(copy->getResult(0), isBackward);
  }
}

/// The derivative rules and sharding rules the passes' nested pipelines
/// (the intra-op search, autodiff) read, loaded as the passes' dependent
/// dialects' extensions.
void addSearchModels(DialectRegistry &registry) {
  registerAutodiffExternalModels(registry);
  search::registerShardingStrategyExternalModels(registry);
}

struct PartitionContextParallelPass
    : impl::PartitionContextParallelBase<PartitionContextParallelPass> {
  using PartitionContextParallelBase::PartitionContextParallelBase;
  void getDependentDialects(DialectRegistry &registry) const override {
    Base::getDependentDialects(registry);
    addSearchModels(registry);
  }
  void runOnOperation() override {
    if (failed(partitionContextParallel(
            getOperation(), cp,
            {clusterSpec, profilePath, training, timeLimit})))
      signalPassFailure();
  }
};

struct PartitionTensorParallelPass
    : impl::PartitionTensorParallelBase<PartitionTensorParallelPass> {
  using PartitionTensorParallelBase::PartitionTensorParallelBase;
  void getDependentDialects(DialectRegistry &registry) const override {
    Base::getDependentDialects(registry);
    addSearchModels(registry);
  }
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (tp <= 1)
      return;
    auto forward = module.lookupSymbol<func::FuncOp>("forward");
    if (!forward) {
      module.emitError("expected a func.func @forward holding the model");
      return signalPassFailure();
    }
    if (failed(partitionTensorParallel(
            module, forward, tp, sequenceParallel, residualBlocks,
            {clusterSpec, profilePath, training, timeLimit})))
      signalPassFailure();
  }
};

struct StageTrainingStepsPass
    : impl::StageTrainingStepsBase<StageTrainingStepsPass> {
  using StageTrainingStepsBase::StageTrainingStepsBase;
  void getDependentDialects(DialectRegistry &registry) const override {
    Base::getDependentDialects(registry);
    addSearchModels(registry);
  }
  void runOnOperation() override;
};

void StageTrainingStepsPass::runOnOperation() {
  ModuleOp module = getOperation();
  std::optional<Optimizer> chosen = parseOptimizer(optimizer.getValue());
  if (!chosen || !trains(*chosen)) {
    module.emitError("optimizer '")
        << optimizer << "' builds no training step (expected adamw or sgd)";
    return signalPassFailure();
  }
  SmallVector<cost::Recompute> modes;
  for (const std::string &name : recompute) {
    std::optional<cost::Recompute> mode = cost::parseRecompute(name);
    if (!mode) {
      module.emitError("recompute '")
          << name << "': expected none, selective or full";
      return signalPassFailure();
    }
    modes.push_back(*mode);
  }
  if (pp < 1 || stages < pp || stages % pp != 0) {
    module.emitError("stages (")
        << int64_t(stages) << ") must be a positive multiple of pp ("
        << int64_t(pp) << ")";
    return signalPassFailure();
  }
  StepOptions step;
  step.optimizer = *chosen;
  step.lr = lr;
  step.momentum = momentum;
  step.beta1 = beta1;
  step.beta2 = beta2;
  step.eps = eps;
  step.weightDecay = weightDecay;
  step.lossScale = lossScale;
  step.tagPhases = true;
  step.scaledLoss = scaledLoss;
  for (int64_t c = 0; c < stages; ++c) {
    auto stage =
        module.lookupSymbol<func::FuncOp>("stage" + std::to_string(c));
    if (!stage) {
      module.emitError("pipeline split made no @stage") << c;
      return signalPassFailure();
    }
    int64_t s = c % pp;
    if (zero >= 3 && dp * cp > 1)
      shardParametersOverReplicas(stage, dp, ep, cp);
    FailureOr<func::FuncOp> built = buildTrainingStep(
        stage, ("stage" + std::to_string(c) + "_step"), step);
    if (failed(built))
      return signalPassFailure();
    cost::Recompute mode =
        modes.empty() ? cost::Recompute::None
                      : modes[modes.size() == 1 ? 0 : s % modes.size()];
    if (mode != cost::Recompute::None) {
      PassManager pm(&getContext(), func::FuncOp::getOperationName());
      RecomputeOptions options;
      // The pass's option is its textual form (cleave-opt spells it).
      options.mode = std::string(cost::recomputeName(mode));
      options.residualBlocks = residualBlocks;
      pm.addPass(createRecompute(options));
      if (failed(pm.run(*built)))
        return signalPassFailure();
    }
    reduceGradientsInFp32(*built);
    regatherForBackward(*built);
  }
}

} // namespace

} // namespace cleave::lowering
