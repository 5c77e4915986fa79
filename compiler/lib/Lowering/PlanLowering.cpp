//===- PlanLowering.cpp - A model and its knobs to a plan artifact --------===//

#include "cleave/Lowering/PlanLowering.h"

#include "cleave/Analysis/InputSynthesis.h"

#include <map>

#include "cleave/Analysis/LayerNumbering.h"
#include "cleave/Dialect/Graph/IR/GraphOps.h"
#include "cleave/Lowering/LoweringPipeline.h"
#include "cleave/Lowering/ProgramEmitter.h"
#include "cleave/Search/IntraOpSearch.h"
#include "cleave/Search/ShardingStrategy.h"
#include "cleave/Transforms/Autodiff.h"
#include "cleave/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/Support/FormatVariadic.h"

#include <functional>
#include "mlir/Pass/PassManager.h"

using namespace mlir;
namespace gr = cleave::graph;

namespace cleave::lowering {

namespace {

void addMeshAndRanks(const LoweringOptions &o, plan::Plan &plan) {
  // Major to minor: tensor-parallel peers are adjacent ranks (one node's
  // NVLink domain), pipeline stages the farthest apart.
  // The "dp" and "ep" axes together are the data-parallel replicas.
  constexpr int kAxes = 5;
  const int64_t sizes[kAxes] = {o.knobs.pp, o.knobs.dp / o.knobs.ep, o.knobs.ep, o.knobs.cp, o.knobs.tp};
  const char *names[kAxes] = {"pp", "dp", "ep", "cp", "tp"};
  for (int a = 0; a < kAxes; ++a) {
    plan::MeshAxis *axis = plan.mutable_mesh()->add_axes();
    axis->set_name(names[a]);
    axis->set_size(sizes[a]);
  }
  int64_t perNode = std::max<int64_t>(1, o.cluster.devicesPerNode);
  int64_t total = o.knobs.pp * o.knobs.dp * o.knobs.cp * o.knobs.tp;
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

/// `module` as text for reading, not for running: the weights are in the
/// plan's parameters already, so large constants print as placeholders
/// (a model's weights in hex would triple the plan). Resource blobs are
/// taken out of the module while it prints: MLIR's printer formats a blob
/// as hex before eliding it, four times the weights' size in memory.
std::string printForReading(ModuleOp module) {
  MLIRContext *ctx = module.getContext();
  auto &blobs = DenseResourceElementsHandle::getManagerInterface(ctx);
  constexpr llvm::StringLiteral kElided = "__elided__";
  DialectResourceBlobManager::BlobEntry *entry =
      blobs.getBlobManager().lookup(kElided);
  DenseResourceElementsHandle elided =
      entry ? DenseResourceElementsHandle(
                  entry, cast<BuiltinDialect>(blobs.getDialect()))
            : blobs.insert(kElided);
  SmallVector<std::pair<Operation *, DictionaryAttr>> originals;
  module.walk([&](Operation *op) {
    SmallVector<NamedAttribute> attrs;
    bool swapped = false;
    for (NamedAttribute a : op->getAttrs()) {
      auto resource = dyn_cast<DenseResourceElementsAttr>(a.getValue());
      if (resource && resource.getRawHandle().getBlob()) {
        a.setValue(DenseResourceElementsAttr::get(resource.getType(), elided));
        swapped = true;
      }
      attrs.push_back(a);
    }
    if (!swapped)
      return;
    originals.emplace_back(op, op->getAttrDictionary());
    op->setAttrs(attrs);
  });
  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os, OpPrintingFlags().elideLargeElementsAttrs(64));
  for (auto &[op, attrs] : originals)
    op->setAttrs(attrs);
  return text;
}

} // namespace

/// Whether the parameters' names mark fewer layers than the plan counts
/// (the dynamo exporter's optimiser renames the weights it folds or merges
/// to "val_<n>"): the model's residual structure then says where each op
/// sits.
static bool namesMissLayers(ModuleOp module, const LoweringOptions &o) {
  int64_t planned = 0, named = 0;
  for (int64_t count : o.chunkLayers)
    planned += count;
  module.walk([&](gr::ParamOp p) {
    named = std::max(named, layerOfParamName(p.getName()) + 1);
  });
  return named < planned;
}

FailureOr<plan::Plan> lowerToPlan(ModuleOp module,
                                  const LoweringOptions &options) {
  LoweringOptions o = options;
  if (!o.residualBlocks && namesMissLayers(module, o))
    o.residualBlocks = true;
  MLIRContext *ctx = module.getContext();
  DialectRegistry registry;
  registerAutodiffExternalModels(registry);
  search::registerShardingStrategyExternalModels(registry);
  ctx->appendDialectRegistry(registry);

  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  if (!forward)
    return module.emitError("expected a func.func @forward holding the model");
  if (o.knobs.dp < 1 || o.knobs.tp < 1 || o.knobs.pp < 1 || o.knobs.cp < 1 || o.microbatches < 1)
    return module.emitError("parallel degrees and microbatches must be "
                            "positive");
  if (o.knobs.ep < 1 || o.knobs.dp % o.knobs.ep != 0)
    return module.emitError("expert parallelism (ep=")
           << o.knobs.ep << ") must divide the data-parallel replicas (dp=" << o.knobs.dp
           << "): the experts are shared by groups of ep replicas";
  if (o.knobs.chunks < 1 || (o.knobs.chunks > 1 && o.knobs.pp < 2))
    return module.emitError("virtual stages (")
           << o.knobs.chunks
           << ") must be positive, and more than one needs pipeline stages";
  if (o.knobs.pp > 1 && o.microbatches < o.knobs.pp)
    module.emitWarning("fewer microbatches (")
        << o.microbatches << ") than pipeline stages (" << o.knobs.pp
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
        modelBatch == o.knobs.microbatchSize)
      return WalkResult::advance();
    input.emitError("input '")
        << input.getName() << "' has a batch of " << type.getDimSize(0)
        << " but each microbatch holds " << o.knobs.microbatchSize
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
  {
    PassManager pm(ctx);
    addLossAndFusionPasses(pm, o,
                           !inference && (!first || first.getRank() != 0));
    if (failed(pm.run(module)))
      return failure();
  }
  // With the loss in place and before partitioning slices the tables the
  // ids index: what each input holds, for synthetic data.
  annotateInputSynthesis(forward);
  if (o.knobs.fusedAttention) {
    int64_t fused = 0, unfused = 0;
    forward.walk([&](gr::AttentionOp) { ++fused; });
    forward.walk([&](gr::PagedAttentionOp) { ++fused; }); // a generation step
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
  {
    PassManager pm(ctx);
    addPartitionPasses(pm, o);
    if (failed(pm.run(module)))
      return failure();
  }
  // The partitioners may have replaced the module's body.
  forward = module.lookupSymbol<func::FuncOp>("forward");
  {
    // The cost model's layers per chunk, where they describe this graph
    // (an imported model may number its blocks otherwise).
    int64_t modelLayers = 0, given = 0;
    if (o.residualBlocks)
      modelLayers = numberResidualBlocks(forward.front()).numBlocks;
    else
      module.walk([&](gr::ParamOp p) {
        modelLayers = std::max(modelLayers, layerOfParamName(p.getName()) + 1);
      });
    for (int64_t count : o.chunkLayers)
      given += count;
    SmallVector<int64_t> layersPerStage;
    if (int64_t(o.chunkLayers.size()) == o.knobs.pp * o.knobs.chunks &&
        given == modelLayers)
      layersPerStage.assign(o.chunkLayers.begin(), o.chunkLayers.end());
    PassManager pm(ctx);
    addStagePasses(pm, o, layersPerStage);
    if (failed(pm.run(module)))
      return failure();
  }

  bool halfStorage =
      o.storage() == cost::DType::Bf16 || o.storage() == cost::DType::Fp16;
  bool scaledLoss =
      o.lossScaling.mode() != plan::LossScaling::NONE && !inference;
  ProgramContext pc;
  pc.knobs = o.knobs;
  pc.microbatches = o.microbatches;
  pc.halfParameters = halfStorage && (o.knobs.zero == 1 || o.knobs.zero == 2);
  pc.scaledLoss = scaledLoss;
  pc.inference = inference;
  pc.vocab = o.vocab;
  SmallVector<func::FuncOp> steps;
  std::map<std::string, std::vector<int64_t>> chunksOf;
  for (int64_t c = 0; c < o.knobs.pp * o.knobs.chunks; ++c) {
    std::string name = "stage" + std::to_string(c);
    auto stage = module.lookupSymbol<func::FuncOp>(name);
    auto step = module.lookupSymbol<func::FuncOp>(name + "_step");
    if (!stage || (!inference && !step))
      return module.emitError("the lowering made no @") << name;
    // The pipeline stages (devices) holding each parameter, once each: two
    // chunks of one device share its tensor and its gradient.
    WalkResult shared = stage.walk([&](gr::ParamOp p) {
      if (!p.isTrainable())
        return WalkResult::advance();
      std::vector<int> &holders = pc.paramStages[p.getName().str()];
      std::vector<int64_t> &chunks = chunksOf[p.getName().str()];
      // Two chunks of one device would each keep and update a copy of the
      // parameter with half its gradient: refused rather than trained
      // wrong.
      for (int64_t other : chunks)
        if (other % o.knobs.pp == c % o.knobs.pp) {
          p.emitError("parameter '")
              << p.getName() << "' is read by model chunks " << other
              << " and " << c << ", which the interleaved schedule puts on "
              << "the same pipeline stage " << c % o.knobs.pp
              << ": a weight shared between layers that far apart is not "
                 "supported under schedule=interleaved (fix schedule=1f1b, "
                 "gpipe or zb-h1)";
          return WalkResult::interrupt();
        }
      chunks.push_back(c);
      if (!llvm::is_contained(holders, int(c % o.knobs.pp)))
        holders.push_back(c % o.knobs.pp);
      return WalkResult::advance();
    });
    if (shared.wasInterrupted())
      return failure();
    steps.push_back(inference ? stage : step);
  }

  plan::Plan plan;
  addMeshAndRanks(o, plan);
  for (int64_t s = 0; s < o.knobs.pp; ++s) {
    pc.stage = s;
    SmallVector<func::FuncOp> chunks;
    for (int64_t v = 0; v < o.knobs.chunks; ++v)
      chunks.push_back(steps[v * o.knobs.pp + s]);
    FailureOr<plan::Program> program = emitProgram(chunks, pc, plan);
    if (failed(program))
      return failure();
    program->set_id(s);
    *plan.add_programs() = std::move(*program);
  }

  plan::Knobs *k = plan.mutable_knobs();
  k->set_dp(o.knobs.dp);
  k->set_tp(o.knobs.tp);
  k->set_pp(o.knobs.pp);
  k->set_cp(o.knobs.cp);
  k->set_zero(o.knobs.zero);
  k->set_sp(o.knobs.sequenceParallel);
  k->set_ep(o.knobs.ep);
  k->set_microbatch_size(o.knobs.microbatchSize);
  k->set_num_microbatches(o.microbatches);
  k->set_schedule(cost::scheduleName(o.knobs.schedule));
  k->set_virtual_stages(o.knobs.chunks);
  k->set_recompute(std::string(cost::recomputeName(o.knobs.recompute)));
  for (cost::Recompute mode : o.knobs.stageRecompute)
    k->add_stage_recompute(std::string(cost::recomputeName(mode)));
  k->set_precision("fp32");
  plan::TrainingConfig *t = plan.mutable_training();
  if (trains(o.step.optimizer))
    *t->mutable_loss_scaling() = o.lossScaling;
  t->set_global_batch(o.knobs.microbatchSize * o.microbatches * o.knobs.dp);
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

  plan.set_partitioned_mlir(printForReading(module));
  return plan;
}

} // namespace cleave::lowering
