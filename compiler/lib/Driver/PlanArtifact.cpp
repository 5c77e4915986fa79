//===- PlanArtifact.cpp - `cleave compile -o`: the plan artifact ----------===//

#include "cleave/Driver/PlanArtifact.h"
#include "cleave/Driver/PlanReport.h"

#include "inspect/PlanDigest.h"

#include "cleave/Analysis/ModelSummary.h"
#include "cleave/Lowering/PlanLowering.h"
#include "cleave/Transforms/Passes.h"
#include "cleave/cost_model/Cluster.h"
#include "cleave/cost_model/Collectives.h"
#include "cleave/cost_model/PlanKnobs.h"
#include "cleave/cost_model/Simulator.h"
#include "cleave/cost_model/StageBalance.h"
#include "cleave/runtime/checkpoint/Weights.h"
#include "cleave/runtime/plan/LossScaling.h"
#include "cleave/runtime/plan/PlanIO.h"
#include "google/protobuf/util/field_comparator.h"
#include "google/protobuf/util/message_differencer.h"

#include "absl/strings/str_format.h"

#include "cleave/Dialect/Graph/IR/GraphAttrs.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <sstream>

using namespace llvm;

namespace cleave::driver {

std::string whyNotLowerable(const cost::ParallelConfig &plan) {
  std::vector<std::string> reasons;
  // bf16 and fp16 plans store activations, their gradients and the
  // collectives carrying them in 16 bits (fp32 master weights, weight
  // gradients and optimizer state; fp16 with loss scaling); tf32 plans
  // hold fp32 tensors, the precision saying how a GPU multiplies them.
  // fp8 GEMMs need scaling factors, which the plan does not carry.
  if (plan.precision == cost::DType::Fp8)
    reasons.push_back("precision=fp8 (no scaling factors in the plan)");
  if (reasons.empty())
    return "";
  std::string out;
  for (const std::string &r : reasons)
    out += (out.empty() ? "" : ", ") + r;
  return out;
}

namespace {

/// Writes the planner's sharding on the ops of @forward (one per op, in
/// order: the model was imported the same way for the planner).
absl::Status applyShardings(mlir::ModuleOp module,
                            llvm::ArrayRef<std::string> shardings) {
  auto forward = module.lookupSymbol<mlir::func::FuncOp>("forward");
  if (!forward || !forward.getBody().hasOneBlock())
    return absl::InternalError("the planned model has no single-block "
                               "@forward to write its sharding on");
  auto ops = forward.getBody().front().without_terminator();
  size_t count = std::distance(ops.begin(), ops.end());
  if (count != shardings.size())
    return absl::InternalError(absl::StrCat(
        "the planner sharded ", shardings.size(), " ops, the model to lower "
        "has ", count));
  for (auto [op, text] : llvm::zip(ops, shardings)) {
    mlir::Attribute attr = mlir::parseAttribute(text, module.getContext());
    if (!attr)
      return absl::InternalError("cannot read back the sharding " + text);
    op.setAttr(graph::kShardingAttrName, attr);
  }
  return absl::OkStatus();
}

std::string graphHash(mlir::ModuleOp module) {
  std::string text;
  raw_string_ostream os(text);
  if (auto forward = module.lookupSymbol<mlir::func::FuncOp>("forward"))
    forward.print(os);
  std::array<uint8_t, 32> digest = SHA256::hash(
      ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(text.data()),
                        text.size()));
  return toHex(ArrayRef<uint8_t>(digest), /*LowerCase=*/true);
}

/// Bad input (InvalidArgument, exit code 2) or a failed step (1).
absl::Status fail(const Twine &message, int code) {
  return code == 2 ? absl::InvalidArgumentError(message.str())
                   : absl::InternalError(message.str());
}

std::string gib(double bytes) {
  return formatv("{0:F2} GiB", bytes / double(1ull << 30)).str();
}

/// What bounds a transformer plan's step, from its prediction: the
/// busiest stage's work against the step, where a layer's time goes, the
/// collectives outside the layers, and what fills memory.
std::vector<std::string> boundsOfStep(const cost::PlanPrediction &p,
                                      const cost::Cluster &cluster) {
  std::vector<std::string> lines;
  lines.push_back(absl::StrFormat(
      "the busiest stage's compute stream works %.4g s of the %.4g s step "
      "(no schedule runs the step faster); the pipeline bubble is %.1f%% of "
      "it",
      p.lowerBoundSeconds, p.stepSeconds, 100 * p.bubbleFraction));
  double layer = p.layerGemmSeconds + p.layerElementwiseSeconds +
                 p.layerTensorCommSeconds;
  if (layer > 0)
    lines.push_back(
        formatv("a layer's forward pass of one microbatch on one rank: "
                "{0:F3} ms, of which GEMMs {1:F0}%, element-wise kernels "
                "{2:F0}%, tensor-parallel collectives {3:F0}%",
                layer * 1e3, 100 * p.layerGemmSeconds / layer,
                100 * p.layerElementwiseSeconds / layer,
                100 * p.layerTensorCommSeconds / layer)
            .str());
  if (p.gradReduceSeconds > 0)
    lines.push_back(
        formatv("data-parallel gradient reduction of the first chunk: "
                "{0:F3} ms a step, {1}",
                p.gradReduceSeconds * 1e3,
                p.plan.overlapGradReduce && cluster.commOverlapsCompute
                    ? "in buckets beside the backward pass"
                    : "after the backward pass")
            .str());
  if (p.plan.pp > 1)
    lines.push_back(formatv("a pipeline transfer of one microbatch: {0:F3} ms",
                            p.pipelineSendSeconds * 1e3)
                        .str());
  // The two largest parts of the fullest stage's memory.
  std::vector<std::pair<std::string_view, double>> parts;
  for (const auto &part : p.memory.items())
    if (part.first != "total")
      parts.push_back(part);
  std::sort(parts.begin(), parts.end(),
            [](const auto &a, const auto &b) { return a.second > b.second; });
  std::string largest;
  for (size_t i = 0; i < parts.size() && i < 2; ++i)
    largest += formatv("{0}{1} {2}", i ? ", " : "", parts[i].first,
                       gib(parts[i].second))
                   .str();
  lines.push_back(formatv("memory: {0} on stage {1} of the {2} a device "
                          "has; most of it {3}",
                          gib(p.peakMemoryBytes), p.peakMemoryStage,
                          gib(cluster.device.memoryBytes), largest)
                      .str());
  return lines;
}

} // namespace

/// The generation step of `module` (built for config.tokens_per_step()
/// tokens a sequence): its attention fused, then given its caches
/// (cleave-kv-cache).
static mlir::LogicalResult
makeGenerationStep(mlir::ModuleOp module, const plan::GenerationConfig &g) {
  mlir::PassManager pm(module->getContext());
  pm.addNestedPass<mlir::func::FuncOp>(createFuseAttention());
  KvCacheOptions kv;
  kv.blockSize = g.block_size();
  kv.maxLength = g.max_length();
  kv.blocks = g.blocks();
  pm.addPass(createKvCache(kv));
  return pm.run(module);
}

absl::Status writePlanArtifact(const ArtifactRequest &r) {
  const cost::ParallelConfig &knobs = r.prediction.plan;
  if (std::string why = whyNotLowerable(knobs); !why.empty())
    return fail("-o: the plan uses " + why +
                    ", which the lowering to programs does not support yet "
                    "(it lowers dp, tp with or without sp, cp, ep, pp "
                    "with every schedule, ZeRO 0-3 and recomputation); --fix other values",
                2);
  int64_t replicaBatch = r.globalBatch / knobs.dp;
  int64_t b = knobs.microbatchSize;
  if (r.globalBatch % knobs.dp != 0 || replicaBatch % b != 0)
    return fail("-o: global batch " + Twine(r.globalBatch) +
                    " does not split into microbatches of " + Twine(b) +
                    " over " + Twine(knobs.dp) + " data-parallel replicas",
                2);
  ImportOptions options = r.importOptions;
  options.batch = b;
  if (r.generation)
    options.seq = r.generation->tokens_per_step();
  mlir::OwningOpRef<mlir::ModuleOp> module = r.load(options);
  if (!module)
    return absl::InvalidArgumentError(""); // the loader reported why
  std::string hash = graphHash(*module);
  if (r.generation && mlir::failed(makeGenerationStep(*module, *r.generation)))
    return fail("-o: the model has no generation step (above)", 2);
  if (!r.shardings.empty())
    if (absl::Status s = applyShardings(*module, r.shardings); !s.ok())
      return s;
  ModelSummary summary = summarizeModel(*module);

  lowering::LoweringOptions lo;
  lo.cluster = r.cluster;
  lo.clusterSpec = r.clusterSpec;
  lo.profilePath = r.profile ? r.profilePath : std::string();
  // The knobs as the search chose them (bf16 and fp16 plans store 16 bits;
  // tf32 and fp8 ones fp32: LoweringOptions::storage).
  lo.knobs = knobs;
  // fp16's 5 exponent bits flush gradients under 2^-24 to zero: its plans
  // scale the loss unless told otherwise.
  bool fp16 = knobs.precision == cost::DType::Fp16;
  lo.lossScaling = r.lossScaling ? *r.lossScaling
                   : fp16        ? plan::defaultDynamicLossScaling()
                                 : plan::LossScaling();
  if (fp16 && lo.lossScaling.mode() == plan::LossScaling::NONE &&
      trains(r.step.optimizer))
    llvm::errs() << "cleave: warning: precision=fp16 with --loss-scale=none: "
                    "gradients below 2^-24 become zero\n";
  lo.microbatches = replicaBatch / b;
  lo.chunkLayers = r.prediction.layersPerChunk;
  lo.residualBlocks = !r.transformer;
  lo.seed = r.seed;
  lo.step = r.step;
  if (r.generation)
    lo.step.optimizer = Optimizer::None; // a generation step does not train
  lo.vocab = r.shape.vocab;
  lo.seqLen = r.shape.seq;
  FailureOr<plan::Plan> lowered = lowering::lowerToPlan(*module, lo);
  if (failed(lowered))
    return fail("-o: lowering the plan to programs failed", 1);
  plan::Plan &plan = *lowered;
  plan.set_producer("cleave 0.1");

  plan::ModelIdentity *model = plan.mutable_model();
  model->set_source(r.modelSource);
  model->set_name(r.shape.name);
  model->set_num_parameters(summary.trainableParams);
  model->set_graph_hash(hash);
  if (r.importOptions.seq)
    model->set_import_seq(*r.importOptions.seq);
  for (const auto &[name, value] : r.importOptions.dims)
    (*model->mutable_import_dims())[name] = value;
  for (const std::string &p : r.importOptions.trainable)
    model->add_import_trainable(p);
  for (const std::string &p : r.importOptions.frozen)
    model->add_import_frozen(p);
  plan::ClusterInfo *cluster = plan.mutable_cluster();
  cluster->set_spec(r.clusterSpec);
  cluster->set_device_kind(r.cluster.device.name);
  cluster->set_nodes(r.cluster.nodes);
  cluster->set_devices_per_node(r.cluster.devicesPerNode);
  cluster->set_peak_flops(r.cluster.device.peakFlops(knobs.precision));
  cluster->set_memory_bytes(r.cluster.device.memoryBytes);
  if (!r.initFromFile.empty()) {
    absl::StatusOr<checkpoint::SafeTensorsReader> weights =
        checkpoint::SafeTensorsReader::open(r.initFromFile);
    absl::Status s = weights.ok() ? checkpoint::bakeWeights(
                                        plan, *weights, r.initFromSource)
                                  : weights.status();
    if (!s.ok())
      return fail("--init-from " + Twine(r.initFromSource) + ": " +
                      Twine(std::string(s.message())),
                  2);
  }
  if (r.generation)
    *plan.mutable_generation() = *r.generation;
  plan.mutable_knobs()->set_text(cost::planKnobsString(knobs));
  plan.mutable_knobs()->set_precision(
      std::string(cost::precisionName(knobs.precision)));
  plan.mutable_training()->set_flops_per_step(r.prediction.modelFlops);

  const cost::PlanPrediction &p = r.prediction;
  plan::PredictedMetrics *m = plan.mutable_predicted();
  m->set_step_time_s(p.stepSeconds);
  m->set_tflops_per_device(p.tflopsPerDevice);
  m->set_mfu(p.mfu);
  m->set_bubble_fraction(p.bubbleFraction);
  m->set_tokens_per_s(p.stepSeconds > 0
                          ? plan.training().tokens_per_step() / p.stepSeconds
                          : 0);
  for (const std::string &line : r.why)
    m->add_explanation(line);
  if (r.transformer && !r.generation)
    for (const std::string &line : boundsOfStep(p, r.cluster))
      m->add_explanation(line);
  for (size_t i = 0; i < r.alternatives.size() && i < 3; ++i) {
    plan::Alternative *a = m->add_alternatives();
    a->set_knobs(cost::planKnobsString(r.alternatives[i].plan));
    a->set_step_time_s(r.alternatives[i].stepSeconds);
    a->set_why(whyItLost(p, r.alternatives[i]));
  }
  for (size_t s = 0; s < p.stageCollectives.size(); ++s)
    for (const auto &[key, volume] : p.stageCollectives[s].byKind) {
      if (volume.calls < 0.5)
        continue;
      plan::CommVolume *v = m->add_comm();
      std::string kind(cost::collectiveName(key.first));
      std::replace(kind.begin(), kind.end(), '-', '_');
      v->set_kind(kind);
      v->set_link(key.second
                      ? "network"
                      : std::string(cost::linkKindName(r.cluster.intraNode.kind)));
      v->set_bytes(volume.bytes);
      v->set_count(std::llround(volume.calls));
      v->set_stage(static_cast<int64_t>(s));
    }
  int64_t first = 0;
  for (int64_t s = 0; s < knobs.pp; ++s) {
    plan::StageInfo *stage = plan.add_stages();
    stage->set_stage(s);
    int64_t layers = s < int64_t(p.layersPerStage.size())
                         ? p.layersPerStage[s]
                         : r.shape.layers / knobs.pp;
    if (knobs.chunks > 1) {
      // Chunk c of pp x v holds the cost model's layers per chunk (those
      // cleave-pipeline-split cuts; an even cut where it gives none) and
      // runs on stage c % pp.
      int64_t n = knobs.pp * knobs.chunks, L = r.shape.layers;
      std::vector<int64_t> counts = p.layersPerChunk;
      if (int64_t(counts.size()) != n)
        counts = cost::evenLayerSplit(L, n);
      std::vector<int64_t> starts(n, 0);
      for (int64_t c = 1; c < n; ++c)
        starts[c] = starts[c - 1] + counts[c - 1];
      for (int64_t v = 0; v < knobs.chunks; ++v) {
        int64_t c = v * knobs.pp + s;
        plan::LayerRange *range = stage->add_chunks();
        range->set_first_layer(starts[c]);
        range->set_num_layers(counts[c]);
      }
      layers = stage->chunks(0).num_layers();
      first = stage->chunks(0).first_layer();
    }
    stage->set_first_layer(first);
    stage->set_num_layers(layers);
    first += layers;
    stage->set_has_embedding(s == 0);
    stage->set_has_head(s == knobs.pp - 1);
    for (const plan::RankAssignment &rank : plan.ranks())
      if (rank.program() == s)
        stage->add_ranks(rank.rank());
    const cost::MemoryBreakdown &mb =
        s < int64_t(p.stageMemory.size()) ? p.stageMemory[s] : p.memory;
    stage->set_predicted_peak_bytes(mb.total);
    for (auto [name, bytes] : mb.items())
      (*stage->mutable_predicted_memory())[std::string(name)] = bytes;
    // Part of comm_buffers, outside the plan's arena (NCCL's own buffers).
    (*stage->mutable_predicted_memory())["comm_library"] = mb.commLibrary;
    stage->set_planned_arena_bytes(plan.programs(s).arena_bytes());
    m->add_peak_memory_per_stage(mb.total);
    // The arena is what a rank allocates: a plan the cost model let
    // through may still not fit once its tensors are laid out.
    double capacity = r.cluster.device.memoryBytes;
    if (capacity > 0 && plan.programs(s).arena_bytes() > capacity)
      WithColor::warning(errs(), "cleave")
          << "-o: stage " << s << "'s planned arena of "
          << format("%.2f", plan.programs(s).arena_bytes() / double(1 << 30))
          << " GiB exceeds the " << format("%.2f", capacity / double(1 << 30))
          << " GiB a device has (the cost model predicted "
          << format("%.2f", mb.total / double(1 << 30))
          << " GiB); fix a smaller microbatch, recomputation or ZeRO\n";
  }
  // The plan priced is meant to be the plan run: where the sharding search
  // chose a layout that moves far more than the cost model priced (a
  // vocabulary that tp does not divide, say), the prediction is too fast.
  for (const inspect::CollectiveExcess &e : inspect::collectiveExcess(plan))
    WithColor::warning(errs(), "cleave")
        << "-o: stage " << e.stage << "'s programs run "
        << format("%.1f", e.countedBytes / double(1 << 20))
        << " MiB of collectives a step per device, the plan was priced with "
        << format("%.1f", e.predictedBytes / double(1 << 20))
        << " MiB (cleave inspect lists both by kind); the step will take "
           "longer than predicted\n";
  if (r.transformer) {
    cost::TaskGraph graph;
    cost::Timeline timeline;
    (void)cost::scoreTransformerPlan(r.shape, r.cluster, knobs, r.profile,
                                     &graph, &timeline);
    std::ostringstream trace;
    cost::writeChromeTrace(graph, timeline, trace);
    plan.set_simulated_trace(trace.str());
  } else if (!r.simulatedTrace.empty()) {
    plan.set_simulated_trace(r.simulatedTrace);
  }
  if (absl::Status s = plan::validatePlan(plan); !s.ok())
    return fail("-o: the lowered plan is inconsistent: " +
                    Twine(std::string(s.message())),
                1);
  plan.set_format_version(plan::kFormatVersion);
  if (absl::Status s = plan::writePlanFile(r.path, plan); !s.ok())
    return fail(std::string(s.message()), 1);
  // Read it back: what a run will load must be what was lowered (a full
  // disk or a file system that drops a write is found here, not at the
  // run). The weights are checked against their checksum as they load.
  absl::StatusOr<plan::Plan> reloaded = plan::readPlanFile(r.path);
  if (!reloaded.ok())
    return fail("-o: the written plan does not load back: " +
                    Twine(std::string(reloaded.status().message())),
                1);
  google::protobuf::util::MessageDifferencer differ;
  std::string difference;
  differ.ReportDifferencesToString(&difference);
  // NaN predictions (a metric with nothing to divide by) equal themselves.
  differ.set_float_comparison(
      google::protobuf::util::MessageDifferencer::EXACT);
  google::protobuf::util::DefaultFieldComparator comparator;
  comparator.set_treat_nan_as_equal(true);
  differ.set_field_comparator(&comparator);
  if (!differ.Compare(plan, *reloaded))
    return fail("-o: " + Twine(r.path) +
                    " does not load back identically to the lowered plan: " +
                    Twine(difference.substr(0, 400)),
                1);
  return absl::OkStatus();
}

absl::StatusOr<plan::Plan> buildReferencePlan(
    const plan::Plan &partitioned,
    const std::function<mlir::OwningOpRef<mlir::ModuleOp>(
        const std::string &, const ImportOptions &)> &load) {
  const plan::TrainingConfig &t = partitioned.training();
  // The same microbatches, one after another on one device: a model whose
  // math depends on the batch (an expert's token capacity) then computes
  // exactly what the partitioned plan does, only in another order.
  const plan::Knobs &knobs = partitioned.knobs();
  int64_t b = std::max<int64_t>(1, knobs.microbatch_size());
  ImportOptions options;
  options.batch = b;
  if (partitioned.model().import_seq() > 0)
    options.seq = partitioned.model().import_seq();
  if (partitioned.has_generation())
    options.seq = partitioned.generation().tokens_per_step();
  for (const auto &[name, value] : partitioned.model().import_dims())
    options.dims[name] = value;
  options.trainable.assign(partitioned.model().import_trainable().begin(),
                           partitioned.model().import_trainable().end());
  options.frozen.assign(partitioned.model().import_frozen().begin(),
                        partitioned.model().import_frozen().end());
  mlir::OwningOpRef<mlir::ModuleOp> module =
      load(partitioned.model().source(), options);
  if (!module)
    return absl::InvalidArgumentError(
        "cannot import the plan's model '" + partitioned.model().source() +
        "'");
  if (partitioned.has_generation() &&
      mlir::failed(makeGenerationStep(*module, partitioned.generation())))
    return absl::InvalidArgumentError("the plan's model has no generation "
                                      "step");
  lowering::LoweringOptions lo;
  lo.clusterSpec = "cpu-local,devices=1";
  auto cluster = cost::parseCluster(lo.clusterSpec);
  if (!cluster.ok())
    return cluster.status();
  lo.cluster = *cluster;
  lo.knobs.microbatchSize = b;
  lo.microbatches = std::max<int64_t>(1, t.global_batch() / b);
  lo.seed = t.seed();
  lo.seqLen = t.seq_len();
  std::optional<Optimizer> optimizer = parseOptimizer(t.optimizer());
  if (!optimizer)
    return absl::InvalidArgumentError(
        "the plan's training.optimizer '" + t.optimizer() +
        "' is not adamw, sgd or none");
  lo.step.optimizer = *optimizer;
  lo.step.lr = t.lr();
  lo.step.beta1 = t.beta1();
  lo.step.beta2 = t.beta2();
  lo.step.eps = t.eps();
  lo.step.weightDecay = t.weight_decay();
  lo.step.momentum = t.momentum();
  // The same storage precision and loss scaling (what rounds differs only
  // by the order of the sums; scaling by powers of two is exact);
  // attention stays unfused, so that a fused plan is checked against the
  // plain ops.
  if (knobs.precision() == "bf16")
    lo.knobs.precision = cost::DType::Bf16;
  else if (knobs.precision() == "fp16")
    lo.knobs.precision = cost::DType::Fp16;
  lo.lossScaling = t.loss_scaling();
  for (const plan::Program &p : partitioned.programs())
    for (const plan::TensorDecl &decl : p.tensors())
      if (decl.kind() == plan::TensorDecl::INPUT && decl.vocab() > 0)
        lo.vocab = decl.vocab();
  FailureOr<plan::Plan> lowered = lowering::lowerToPlan(*module, lo);
  if (failed(lowered))
    return absl::InternalError("lowering the reference plan failed");
  *lowered->mutable_model() = partitioned.model();
  if (partitioned.has_generation())
    *lowered->mutable_generation() = partitioned.generation();
  checkpoint::inheritInitialValues(partitioned, *lowered);
  lowered->set_producer(partitioned.producer());
  lowered->mutable_training()->set_flops_per_step(t.flops_per_step());
  lowered->mutable_knobs()->set_text("reference (one rank)");
  return *std::move(lowered);
}

} // namespace cleave::driver
