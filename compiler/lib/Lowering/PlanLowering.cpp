//===- PlanLowering.cpp - A model and its knobs to a plan artifact --------===//

#include "cleave/Lowering/PlanLowering.h"

#include "cleave/Analysis/LayerNumbering.h"
#include "cleave/Dialect/Graph/IR/GraphOps.h"
#include "cleave/Lowering/ProgramEmitter.h"
#include "cleave/Search/IntraOpSearch.h"
#include "cleave/Search/ShardingStrategy.h"
#include "cleave/Transforms/Autodiff.h"
#include "cleave/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/Support/FormatVariadic.h"

#include <functional>
#include "mlir/Pass/PassManager.h"

using namespace mlir;
namespace gr = cleave::graph;

namespace cleave::lowering {

namespace {

/// The intra-op search on one mesh axis, then the SPMD partitioner that
/// rewrites each function into one device's program on it.
LogicalResult searchAndPartition(ModuleOp module, IntraOpSearchOptions search,
                                 StringRef axis, int64_t size,
                                 const LoweringOptions &o,
                                 bool zigzag = false) {
  PassManager pm(module.getContext());
  search.mesh = size;
  search.clusterSpec = o.clusterSpec;
  search.profilePath = o.profilePath;
  search.training = trains(o.step.optimizer);
  search.timeLimit = o.searchTimeLimit;
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
LogicalResult partitionContextParallel(ModuleOp module,
                                       const LoweringOptions &o) {
  if (o.cp <= 1)
    return success();
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
  bool zigzag = causal && sequence % (2 * o.cp) == 0;
  if (causal && !zigzag)
    forward.emitWarning("context parallelism keeps contiguous sequence "
                        "blocks: the sequence (")
        << sequence << ") is not a multiple of 2 x cp (" << 2 * o.cp
        << "), so the last cp rank computes up to "
        << llvm::formatv("{0:F2}", 2.0 - 1.0 / o.cp).str()
        << "x the average fused attention work";
  return searchAndPartition(module, search, "cp", o.cp, o, zigzag);
}

LogicalResult partitionTensorParallel(ModuleOp module, func::FuncOp forward,
                                      const LoweringOptions &o) {
  if (o.tp <= 1)
    return success();
  IntraOpSearchOptions search;
  // The knob holds both ways: the search left free finds sequence-split
  // layouts by itself, and a plan priced without them would run them. A
  // graph without transformer layers has no such knob (its inputs'
  // dimension 1 is not a sequence: an image's channels), and its plan was
  // priced with the search left free (GraphPlan.h).
  search.sequenceParallel = o.sequenceParallel;
  search.noSequenceParallel = !o.sequenceParallel && !o.residualBlocks;
  // A transformer plan's tp splits the model; its batch is split by dp
  // (and ZeRO), which the plan prices as such. A graph plan's search is
  // free, as GraphPlan priced it.
  search.noBatchSplit = !o.residualBlocks;
  // A tensor-parallel degree means the parameters are split: hold each
  // device to its share and let the search choose how (tensorParallelLimits:
  // first with every divisible matrix split, which is what the plan's
  // memory was predicted with, so that a replicated 50k-row embedding does
  // not hide in the slack and cost its stage gigabytes).
  search::TensorParallelLimits limits = search::tensorParallelLimits(
      forward, o.tp, search.noSequenceParallel);
  search.paramMemory = limits.strict;
  if (o.residualBlocks) { // as the graph planner priced it (GraphPlan.h)
    search.relativeGap = limits.graphPlanGap;
    search.maxNodes = limits.graphPlanNodes;
  }
  {
    OwningOpRef<ModuleOp> attempt(module.clone());
    ScopedDiagnosticHandler quiet(module.getContext(),
                                  [](Diagnostic &) { return success(); });
    if (succeeded(searchAndPartition(*attempt, search, "tp", o.tp, o))) {
      module.getBodyRegion().takeBody(attempt->getBodyRegion());
      return success();
    }
  }
  search.paramMemory = limits.loose;
  return searchAndPartition(module, search, "tp", o.tp, o);
}

/// ZeRO-3: every trainable parameter of a stage with a dimension that the
/// replicas divide is stored as one replica's block and all-gathered where
/// it is read. The gather's gradient is the reduce-scatter of the
/// replicas' gradients (`varying_grad`), so each replica ends the backward
/// pass with its block's summed gradient and updates only that block.
void shardParametersOverReplicas(func::FuncOp stage, const LoweringOptions &o) {
  OpBuilder b(stage.getContext());
  // Collected first: the rewrite erases the casts that read a parameter.
  SmallVector<gr::ParamOp> params;
  stage.walk([&](gr::ParamOp param) { params.push_back(param); });
  for (gr::ParamOp param : params) [&] {
    if (!param.isTrainable())
      return;
    Replicas replicas = replicasOf(param, o.dp, o.ep);
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

void addMeshAndRanks(const LoweringOptions &o, plan::Plan &plan) {
  // Major to minor: tensor-parallel peers are adjacent ranks (one node's
  // NVLink domain), pipeline stages the farthest apart.
  // The "dp" and "ep" axes together are the data-parallel replicas.
  constexpr int kAxes = 5;
  const int64_t sizes[kAxes] = {o.pp, o.dp / o.ep, o.ep, o.cp, o.tp};
  const char *names[kAxes] = {"pp", "dp", "ep", "cp", "tp"};
  for (int a = 0; a < kAxes; ++a) {
    plan::MeshAxis *axis = plan.mutable_mesh()->add_axes();
    axis->set_name(names[a]);
    axis->set_size(sizes[a]);
  }
  int64_t perNode = std::max<int64_t>(1, o.cluster.devicesPerNode);
  int64_t total = o.pp * o.dp * o.cp * o.tp;
  for (int64_t r = 0; r < total; ++r) {
    plan::RankAssignment *rank = plan.add_ranks();
    rank->set_rank(r);
    int64_t coords[kAxes], rest = r;
    for (int a = kAxes; a-- > 0;) {
      coords[a] = rest % sizes[a];
      rest /= sizes[a];
    }
    rank->set_program(coords[0]);
    for (int64_t c : coords)
      rank->add_coords(c);
    rank->set_node(r / perNode);
    rank->set_local_device(r % perNode);
  }
  // One group per axis and coordinate of the others.
  for (int a = 0; a < kAxes; ++a) {
    if (sizes[a] <= 1)
      continue;
    std::map<std::vector<int64_t>, plan::CommGroup> groups;
    for (const plan::RankAssignment &r : plan.ranks()) {
      std::vector<int64_t> key;
      for (int b = 0; b < kAxes; ++b)
        if (b != a)
          key.push_back(r.coords(b));
      plan::CommGroup &g = groups[key];
      if (g.axes_size() == 0)
        g.add_axes(names[a]);
      g.add_ranks(r.rank());
    }
    for (auto &[key, g] : groups)
      *plan.add_groups() = g;
  }
}

} // namespace

FailureOr<plan::Plan> lowerToPlan(ModuleOp module,
                                  const LoweringOptions &o) {
  MLIRContext *ctx = module.getContext();
  DialectRegistry registry;
  registerAutodiffExternalModels(registry);
  search::registerShardingStrategyExternalModels(registry);
  ctx->appendDialectRegistry(registry);

  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  if (!forward)
    return module.emitError("expected a func.func @forward holding the model");
  if (o.dp < 1 || o.tp < 1 || o.pp < 1 || o.cp < 1 || o.microbatches < 1)
    return module.emitError("parallel degrees and microbatches must be "
                            "positive");
  if (o.ep < 1 || o.dp % o.ep != 0)
    return module.emitError("expert parallelism (ep=")
           << o.ep << ") must divide the data-parallel replicas (dp=" << o.dp
           << "): the experts are shared by groups of ep replicas";
  if (o.virtualStages < 1 || (o.virtualStages > 1 && o.pp < 2))
    return module.emitError("virtual stages (")
           << o.virtualStages
           << ") must be positive, and more than one needs pipeline stages";
  if (o.pp > 1 && o.microbatches < o.pp)
    module.emitWarning("fewer microbatches (")
        << o.microbatches << ") than pipeline stages (" << o.pp
        << "): most of the step is bubble";

  // The runtime cuts the batched inputs' first dimension from the global
  // batch: those whose first dimension is the first input's (the model's
  // batch, which must be the microbatch size); the others (constant
  // operands of an imported graph) are whole on every rank.
  int64_t modelBatch = -1;
  forward.walk([&](gr::InputOp input) {
    auto type = cast<RankedTensorType>(input.getType());
    if (modelBatch < 0 && type.getRank() > 0 && input.getName() != "step")
      modelBatch = type.getDimSize(0);
  });
  WalkResult batchCheck = forward.walk([&](gr::InputOp input) {
    auto type = cast<RankedTensorType>(input.getType());
    if (type.getRank() == 0 || type.getDimSize(0) != modelBatch ||
        modelBatch == o.microbatchSize)
      return WalkResult::advance();
    input.emitError("input '")
        << input.getName() << "' has a batch of " << type.getDimSize(0)
        << " but each microbatch holds " << o.microbatchSize
        << " samples; the model has a fixed batch, so choose the microbatch "
           "size to match (--fix microbatch="
        << type.getDimSize(0) << ")";
    return WalkResult::interrupt();
  });
  if (batchCheck.wasInterrupted())
    return failure();

  // An inference graph (an imported classifier or decoder) trains on the
  // cross-entropy of its first output against a `labels` input.
  auto results = forward.getFunctionType().getResults();
  auto first = results.empty() ? RankedTensorType()
                               : dyn_cast<RankedTensorType>(results[0]);
  bool inference = !trains(o.step.optimizer);
  if (!inference && (!first || first.getRank() != 0)) {
    PassManager pm(ctx);
    pm.addPass(createAppendLoss());
    if (failed(pm.run(module)))
      return failure();
  }

  if (o.fusedAttention) {
    // Before any partitioning: the sharding search and the partitioners
    // then see one attention op per layer (its rule splits heads, batch or
    // queries), and autodiff gives it its fused backward.
    PassManager pm(ctx);
    pm.nest<func::FuncOp>().addPass(createFuseAttention());
    if (failed(pm.run(module)))
      return failure();
    int64_t fused = 0, unfused = 0;
    forward.walk([&](gr::AttentionOp) { ++fused; });
    forward.walk([&](gr::SoftmaxOp) { ++unfused; });
    if (fused == 0)
      return forward.emitError("attention=fused, but no attention in the "
                               "model has the fusable form (matmul q k^T, a "
                               "scalar scale, softmax over the keys, no "
                               "dropout, matmul with v)");
    if (unfused > 0)
      forward.emitWarning("attention=fused: ")
          << fused << " attention ops fused, " << unfused
          << " softmax ops left unfused (another form, or dropout)";
  }
  if (o.ep > 1) {
    PassManager pm(ctx);
    ExpertParallelOptions expert;
    expert.axis = "ep";
    expert.size = o.ep;
    pm.nest<func::FuncOp>().addPass(createExpertParallel(expert));
    if (failed(pm.run(module)))
      return failure();
  }
  // After expert parallelism, which re-types the expert weights it splits
  // (a cast between a weight and its matmul would not be re-typed); the
  // tokens' all-to-alls it adds then carry bf16 like the other collectives.
  bool halfStorage =
      o.storage == cost::DType::Bf16 || o.storage == cost::DType::Fp16;
  if (halfStorage) {
    PassManager pm(ctx);
    MixedPrecisionOptions mixed;
    mixed.storage = o.storage == cost::DType::Bf16 ? "bf16" : "f16";
    pm.nest<func::FuncOp>().addPass(createMixedPrecision(mixed));
    if (failed(pm.run(module)))
      return failure();
  }
  if (failed(partitionContextParallel(module, o)) ||
      failed(partitionTensorParallel(module, forward, o)))
    return failure();
  // The partitioners may have replaced the module's body.
  forward = module.lookupSymbol<func::FuncOp>("forward");
  {
    PassManager pm(ctx);
    // Interleaved: pp x v chunks; chunk c runs on stage c % pp, and the
    // sends of chunk pp - 1 wrap around the "pp" axis to stage 0.
    PipelineSplitOptions split;
    split.stages = o.pp * o.virtualStages;
    // The cost model's layers per chunk, where they describe this graph
    // (an imported model may number its blocks otherwise).
    int64_t modelLayers = 0, given = 0;
    split.residualBlocks = o.residualBlocks;
    if (o.residualBlocks)
      modelLayers = numberResidualBlocks(forward.front()).numBlocks;
    else
      module.walk([&](gr::ParamOp p) {
        modelLayers = std::max(modelLayers, layerOfParamName(p.getName()) + 1);
      });
    for (int64_t count : o.chunkLayers)
      given += count;
    if (int64_t(o.chunkLayers.size()) == split.stages && given == modelLayers)
      split.layersPerStage.assign(o.chunkLayers.begin(), o.chunkLayers.end());
    pm.addPass(createPipelineSplit(split));
    if (failed(pm.run(module)))
      return failure();
  }

  StepOptions step = o.step;
  step.lossScale = 1.0 / double(o.microbatches * o.dp);
  step.tagPhases = true;
  bool scaledLoss =
      o.lossScaling.mode() != plan::LossScaling::NONE && !inference;
  step.scaledLoss = scaledLoss;
  ProgramContext pc;
  pc.stages = o.pp;
  pc.microbatches = o.microbatches;
  pc.microbatchSize = o.microbatchSize;
  pc.dp = o.dp;
  pc.ep = o.ep;
  pc.zero = o.zero;
  pc.overlapGrad = o.overlapGrad;
  pc.halfParameters = halfStorage && (o.zero == 1 || o.zero == 2);
  pc.scaledLoss = scaledLoss;
  pc.cp = o.cp;
  pc.inference = inference;
  pc.schedule = o.schedule;
  pc.vocab = o.vocab;
  SmallVector<func::FuncOp> steps;
  for (int64_t c = 0; c < o.pp * o.virtualStages; ++c) {
    auto stage = module.lookupSymbol<func::FuncOp>("stage" + std::to_string(c));
    if (!stage)
      return module.emitError("pipeline split made no @stage") << c;
    int64_t s = c % o.pp;
    stage.walk([&](gr::ParamOp p) {
      if (p.isTrainable())
        pc.paramStages[p.getName().str()].push_back(s);
    });
    if (inference) {
      steps.push_back(stage);
      continue;
    }
    if (o.zero >= 3 && o.dp > 1)
      shardParametersOverReplicas(stage, o);
    FailureOr<func::FuncOp> built = buildTrainingStep(
        stage, ("stage" + std::to_string(c) + "_step"), step);
    if (failed(built))
      return failure();
    cost::Recompute mode = s < int64_t(o.stageRecompute.size())
                               ? o.stageRecompute[s]
                               : o.recompute;
    if (mode != cost::Recompute::None) {
      PassManager pm(ctx, func::FuncOp::getOperationName());
      RecomputeOptions recompute;
      // The pass's option is its textual form (cleave-opt spells it).
      recompute.mode = std::string(cost::recomputeName(mode));
      recompute.residualBlocks = o.residualBlocks;
      pm.addPass(createRecompute(recompute));
      if (failed(pm.run(*built)))
        return failure();
    }
    reduceGradientsInFp32(*built);
    regatherForBackward(*built);
    steps.push_back(*built);
  }

  plan::Plan plan;
  addMeshAndRanks(o, plan);
  for (int64_t s = 0; s < o.pp; ++s) {
    pc.stage = s;
    SmallVector<func::FuncOp> chunks;
    for (int64_t v = 0; v < o.virtualStages; ++v)
      chunks.push_back(steps[v * o.pp + s]);
    FailureOr<plan::Program> program = emitProgram(chunks, pc, plan);
    if (failed(program))
      return failure();
    program->set_id(s);
    *plan.add_programs() = std::move(*program);
  }

  plan::Knobs *k = plan.mutable_knobs();
  k->set_dp(o.dp);
  k->set_tp(o.tp);
  k->set_pp(o.pp);
  k->set_cp(o.cp);
  k->set_zero(o.zero);
  k->set_sp(o.sequenceParallel);
  k->set_ep(o.ep);
  k->set_microbatch_size(o.microbatchSize);
  k->set_num_microbatches(o.microbatches);
  k->set_schedule(cost::scheduleName(o.schedule));
  k->set_virtual_stages(o.virtualStages);
  k->set_recompute(std::string(cost::recomputeName(o.recompute)));
  for (cost::Recompute mode : o.stageRecompute)
    k->add_stage_recompute(std::string(cost::recomputeName(mode)));
  k->set_precision("fp32");
  plan::TrainingConfig *t = plan.mutable_training();
  if (trains(o.step.optimizer))
    *t->mutable_loss_scaling() = o.lossScaling;
  t->set_global_batch(o.microbatchSize * o.microbatches * o.dp);
  t->set_seq_len(o.seqLen);
  t->set_optimizer(optimizerName(o.step.optimizer));
  t->set_lr(o.step.lr);
  t->set_beta1(o.step.beta1);
  t->set_beta2(o.step.beta2);
  t->set_eps(o.step.eps);
  t->set_weight_decay(o.step.weightDecay);
  t->set_momentum(o.step.momentum);
  t->set_seed(o.seed);
  t->set_tokens_per_step(t->global_batch() * std::max<int64_t>(1, o.seqLen));

  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os);
  plan.set_partitioned_mlir(std::move(text));
  return plan;
}

} // namespace cleave::lowering
