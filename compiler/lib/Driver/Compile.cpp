//===- Compile.cpp - `cleave compile`: model to plan ----------------------===//

#include "Usage.h"
#include "cleave/Driver/Compile.h"

#include "cleave/Analysis/ModelSummary.h"
#include "cleave/Analysis/TransformerShape.h"
#include "cleave/Driver/GraphPlanner.h"
#include "cleave/Driver/PlanArtifact.h"
#include "cleave/Driver/PlanReport.h"
#include "cleave/Driver/ServingReport.h"
#include "cleave/Driver/TransformerPlanner.h"
#include "cleave/Importers/ModelLoader.h"
#include "cleave/Dialect/Graph/IR/GraphOps.h"
#include "cleave/Transforms/ExportedMasks.h"
#include "cleave/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>

using namespace llvm;

namespace cleave::driver {

using cost::Knob;

namespace {

absl::Status writeText(const std::string &path, StringRef flag,
                       const std::string &text) {
  std::error_code ec;
  raw_fd_ostream file(path, ec);
  if (ec)
    return absl::InternalError((flag + " " + path + ": " + ec.message()).str());
  file << text;
  return absl::OkStatus();
}

/// Knobs that price how others run (Megatron-LM, Megatron-Core,
/// Transformer Engine) but that cleave's lowering does not build, and
/// knobs the lowering does not support yet: refused with -o.
absl::Status checkLowerable(const CompileRequest &r) {
  const cost::ParallelConfig &plan = r.inputs.plan;
  if (plan.recomputeWholeLayer)
    return usage("--fix: recompute-scope=layer prices Megatron-LM's full "
                 "recomputation (the whole layer forward again); cleave's "
                 "lowering recomputes only what the backward pass reads, "
                 "so a plan written with -o cannot take it");
  if (plan.overlapTpComm)
    return usage("--fix: overlap-tp=on prices Transformer Engine's "
                 "collective GEMMs (Megatron-Core's --tp-comm-overlap); "
                 "cleave's runtime runs each tensor-parallel collective "
                 "between its GEMMs, so a plan written with -o cannot "
                 "take it");
  if (plan.halfGradReduce)
    return usage("--fix: grad-reduce=half prices weight gradients "
                 "accumulated and reduced in 16 bits (Megatron-LM's fp16 "
                 "runs); cleave's lowering keeps them in fp32, so a plan "
                 "written with -o cannot take it");
  if (plan.zeroBucketElements > 0)
    return usage("--fix: zero-bucket prices ZeRO collectives over packed "
                 "buckets (Megatron-Core's distributed optimizer); "
                 "cleave's lowering runs one per parameter tensor, so a "
                 "plan written with -o cannot take it");
  // Knobs not fixed are the search's, which keeps to what lowers.
  if (std::string why = whyNotLowerable(plan); !why.empty())
    for (Knob knob : {Knob::Cp, Knob::Ep, Knob::Schedule, Knob::Precision})
      if (r.inputs.fixed.contains(knob) &&
          why.find(cost::knobName(knob)) != std::string::npos)
        return usage("-o: --fix " + std::string(cost::knobName(knob)) +
                     " asks for what the lowering to programs does not "
                     "support yet (" + why + ")");
  return absl::OkStatus();
}

/// Compiles one request; the state its steps share.
class Compiler {
public:
  Compiler(mlir::MLIRContext &ctx, const CompileRequest &r, raw_ostream &out)
      : ctx(ctx), r(r), out(out), inputs(r.inputs), plan(inputs.plan),
        fixed(inputs.fixed), options(r.importOptions) {
    inputs.profile = r.profile ? &*r.profile : nullptr;
  }

  absl::Status run();

private:
  mlir::OwningOpRef<mlir::ModuleOp> load(const ImportOptions &o) {
    // The planners and the lowering import the model again: its warnings
    // (missing data files, tied initializers) are said once.
    std::optional<mlir::ScopedDiagnosticHandler> once;
    if (loadedOnce)
      once.emplace(&ctx, [](mlir::Diagnostic &d) {
        return mlir::success(d.getSeverity() ==
                             mlir::DiagnosticSeverity::Warning);
      });
    mlir::OwningOpRef<mlir::ModuleOp> module = loadModel(ctx, r.model, o);
    loadedOnce = loadedOnce || bool(module);
    return module;
  }
  std::optional<int64_t> fixedBatch(mlir::ModuleOp module);
  absl::Status writeArtifact(const cost::PlanPrediction &prediction,
                             std::optional<cost::TransformerModel> shape,
                             const std::string &name, std::string trace,
                             std::vector<std::string> why,
                             std::vector<cost::PlanPrediction> alternatives,
                             std::vector<std::string> shardings = {},
                             std::optional<plan::GenerationConfig>
                                 generation = std::nullopt);
  absl::Status compileTransformer(const cost::TransformerModel &shape,
                                  mlir::ModuleOp module);
  absl::Status writeGenerationArtifact(const cost::TransformerModel &shape,
                                       const cost::ServingWorkload &w,
                                       const cost::ServingPrediction &best);
  /// "wrote PLAN (size)" after the report, where -o wrote one.
  void printWritten() {
    uint64_t size = 0;
    if (r.planOut.empty() || sys::fs::file_size(r.planOut, size))
      return;
    out << formatv("wrote:        {0} ({1:F1} MB; cleave inspect {0})\n",
                   r.planOut, size / 1e6);
  }
  absl::Status compileGraph();
  absl::Status serveImported(mlir::ModuleOp module);
  absl::Status serveTransformer(const cost::TransformerModel &shape);

  mlir::MLIRContext &ctx;
  bool loadedOnce = false;
  const CompileRequest &r;
  raw_ostream &out;
  /// The planners' inputs; the search's microbatch and the lowerable
  /// knobs are fixed in `plan` and `fixed` as compiling goes.
  PlanInputs inputs;
  cost::ParallelConfig &plan;
  cost::KnobSet &fixed;
  ImportOptions options;
  /// The batch the model's file fixes, if it does.
  std::optional<int64_t> fileBatch;
};

/// The batch a model's file fixes: imported at another batch, its first
/// input keeps the leading dimension it had in `module` (zoo models follow
/// the batch asked for).
std::optional<int64_t> Compiler::fixedBatch(mlir::ModuleOp module) {
  if (StringRef(r.model).starts_with("zoo:"))
    return std::nullopt;
  int64_t imported = summarizeModel(module).samples;
  if (StringRef(r.model).ends_with(".mlir"))
    return imported; // MLIR text has static shapes
  ImportOptions other = options;
  other.batch = imported + 1;
  other.keepWeights = false; // the shapes are all this asks of it
  mlir::OwningOpRef<mlir::ModuleOp> again;
  {
    mlir::ScopedDiagnosticHandler quiet(
        &ctx, [](mlir::Diagnostic &) { return mlir::success(); });
    again = load(other);
  }
  if (!again || summarizeModel(*again).samples != imported)
    return std::nullopt;
  return imported;
}

/// Lowers `prediction` of the model to the plan artifact -o names (the
/// knob-level shape when the model is a transformer, else only its name).
absl::Status Compiler::writeArtifact(
    const cost::PlanPrediction &prediction,
    std::optional<cost::TransformerModel> shape, const std::string &name,
    std::string trace, std::vector<std::string> why,
    std::vector<cost::PlanPrediction> alternatives,
    std::vector<std::string> shardings,
    std::optional<plan::GenerationConfig> generation) {
  ArtifactRequest request;
  request.generation = std::move(generation);
  request.alternatives = std::move(alternatives);
  request.shardings = std::move(shardings);
  request.path = r.planOut;
  request.modelSource = r.model;
  request.clusterSpec = r.clusterSpec;
  request.cluster = inputs.cluster;
  request.transformer = shape.has_value();
  if (shape)
    request.shape = *shape;
  request.shape.name = name;
  request.prediction = prediction;
  request.profile = inputs.profile;
  if (inputs.profile)
    request.profilePath = r.profilePath;
  request.globalBatch = inputs.globalBatch;
  request.seed = r.seed;
  request.step = r.step;
  request.lossScaling = r.lossScaling;
  request.importOptions = options;
  request.simulatedTrace = std::move(trace);
  request.why = std::move(why);
  request.load = [&](const ImportOptions &o) { return load(o); };
  request.initFromFile = r.initFromFile;
  request.initFromSource = r.initFromSource;
  return writePlanArtifact(request);
}

/// Whether cleave-fuse-attention, run on a copy of `module`, fuses at
/// least one attention per layer: the search then prices fused attention
/// as the lowering will build it.
static bool attentionFusesInEveryLayer(mlir::ModuleOp module,
                                       int64_t layers) {
  mlir::OwningOpRef<mlir::ModuleOp> copy = module.clone();
  mlir::PassManager pm(module.getContext());
  pm.nest<mlir::func::FuncOp>().addPass(createFuseAttention());
  if (mlir::failed(pm.run(*copy)))
    return false;
  int64_t fused = 0;
  copy->walk([&](graph::AttentionOp) { ++fused; });
  return fused >= layers;
}

absl::Status Compiler::compileTransformer(const cost::TransformerModel &shape,
                                          mlir::ModuleOp module) {
  if (r.serve)
    return serveTransformer(shape);
  TransformerPlanRequest request;
  static_cast<PlanInputs &>(request) = inputs;
  request.shape = shape;
  if (!fixed.contains(Knob::Attention) && shape.canFuseAttention())
    request.shape.attentionFuses =
        attentionFusesInEveryLayer(module, shape.layers);
  request.timeLimit = r.timeLimit;
  request.lowerable = !r.planOut.empty();
  // The artifact keeps the three next best plans (the HTML report shows
  // why they lost); the text and JSON show what --top-k asked for.
  if (!r.planOut.empty())
    request.topK = std::max(request.topK, 4);
  auto started = std::chrono::steady_clock::now();
  request.progress = [&](double fraction) {
    double seconds = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - started)
                         .count();
    if (r.showProgress && seconds > 1)
      errs() << formatv("\rsearching: {0,3:F0}%", 100 * fraction);
  };
  absl::StatusOr<TransformerPlanResult> result = planTransformer(request);
  if (r.showProgress)
    errs() << "\r               \r";
  if (!result.ok())
    return result.status();
  const cost::PlanPrediction &best = result->best();
  if (!r.planOut.empty())
    if (absl::Status s =
            writeArtifact(best, shape, shape.name, {}, result->why(),
                          {result->plans.begin() + 1, result->plans.end()});
        !s.ok())
      return s;
  if (!r.tracePath.empty())
    if (absl::Status s = writeText(r.tracePath, "--trace",
                                   transformerTrace(request, best.plan));
        !s.ok())
      return s;

  if (result->plans.size() > size_t(inputs.topK))
    result->plans.resize(inputs.topK);
  // --versus: the recipe priced as the plans were (its knobs not given
  // searched, precision by the same rule), and why each plan beats it or
  // loses to it.
  std::optional<json::Object> versusJson;
  std::string versusText;
  if (r.versus) {
    TransformerPlanRequest v = request;
    v.plan = r.versus->plan;
    v.fixed = r.versus->fixed;
    if (!v.fixed.contains(Knob::Precision))
      v.plan.precision = inputs.cluster.device.peakBf16 > 0
                             ? cost::DType::Bf16
                             : cost::DType::Fp32;
    if (fileBatch) {
      v.plan.microbatchSize = *fileBatch;
      v.fixed.insert(Knob::Microbatch);
    }
    v.topK = 1;
    v.explain = false;
    v.lowerable = false;
    v.progress = nullptr;
    absl::StatusOr<TransformerPlanResult> recipe = planTransformer(v);
    versusJson.emplace();
    if (!recipe.ok()) {
      std::string why(recipe.status().message());
      (*versusJson)["error"] = why;
      versusText = "versus:       no such plan: " + why + "\n";
    } else {
      const cost::PlanPrediction &p = recipe->best();
      std::vector<std::string> lines = versusSentences(result->plans, p);
      (*versusJson)["knobs"] = cost::planKnobsString(p.plan);
      (*versusJson)["step_time_s"] = p.stepSeconds;
      (*versusJson)["plans"] = json::Array(lines);
      versusText = formatv("versus:       {0}: {1:F4} s a step\n",
                           cost::planKnobsString(p.plan), p.stepSeconds)
                       .str();
      for (const std::string &line : lines)
        versusText += "  - " + line + "\n";
    }
  }
  TransformerReport report{shape.name, inputs.cluster, result->plans,
                           result->search ? &*result->search : nullptr,
                           inputs.memoryLimit};
  if (r.json) {
    json::Object object = transformerPlanJson(report);
    if (versusJson)
      object["versus"] = std::move(*versusJson);
    out << formatv("{0:2}", json::Value(std::move(object))) << "\n";
    return absl::OkStatus();
  }
  // The graph's own count (the knob-level model approximates some layers).
  report.parameters = double(summarizeModel(module).trainableParams);
  printTransformerPlan(report, inputs.explain, out);
  out << versusText;
  printWritten();
  return absl::OkStatus();
}

/// --serve of an imported model (`module`, read at one sequence of two
/// tokens): a decoder whose file leaves its batch and sequence symbolic,
/// so that a generation step can import it at its own rows of one token,
/// and whose attention fuses and is causal once the exporter's padding
/// mask is all ones (ExportedMasks.h). Planned from the dimensions read
/// off the graph (readDecoderModel), as the zoo's decoders are.
absl::Status Compiler::serveImported(mlir::ModuleOp module) {
  graph::InputOp first;
  module.walk([&](graph::InputOp in) {
    if (!first && in.getType().getRank() == 2)
      first = in;
  });
  if (!first)
    return usage("--serve: " + r.model + " has no [batch, sequence] input "
                 "of token ids: --serve plans decoders that read them");
  if (first.getType().getShape() != ArrayRef<int64_t>{1, 2})
    return usage(formatv(
        "--serve: {0} fixes its input '{1}' at {2}x{3}: a generation step "
        "runs its own number of sequences, one token each, so the model "
        "must leave both dimensions symbolic (export with "
        "torch.onnx.export(..., dynamic_shapes=...) or dynamic_axes=..., "
        "naming them batch and seq)",
        r.model, first.getName(), first.getType().getDimSize(0),
        first.getType().getDimSize(1)));
  mlir::PassManager pm(&ctx);
  pm.nest<mlir::func::FuncOp>().addPass(createFuseAttention());
  if (mlir::failed(pm.run(module)))
    return absl::InvalidArgumentError("");
  auto forward = module.lookupSymbol<mlir::func::FuncOp>("forward");
  foldExportedCausalMasks(forward);
  mlir::FailureOr<cost::TransformerModel> shape = readDecoderModel(module);
  if (mlir::failed(shape))
    return absl::InvalidArgumentError(""); // reported at the op
  shape->name = r.model;
  if (auto name = module->getAttrOfType<mlir::StringAttr>("cleave.model"))
    shape->name = name.str();
  return serveTransformer(*shape);
}

/// --serve: the serving plan (ServingPlan.h) in the precision the plan
/// would train in (bf16 on GPUs unless fixed), as text or JSON.
absl::Status Compiler::serveTransformer(const cost::TransformerModel &shape) {
  cost::ServingWorkload w = *r.serve;
  w.precision = plan.precision;
  if (fixed.contains(Knob::Tp))
    w.fixedTp = plan.tp;
  if (fixed.contains(Knob::Pp))
    w.fixedPp = plan.pp;
  if (w.disaggregated) {
    absl::StatusOr<cost::DisaggregatedPrediction> pools =
        cost::searchDisaggregatedPlans(shape, inputs.cluster, w,
                                       inputs.profile);
    if (!pools.ok())
      return absl::FailedPreconditionError(pools.status().message());
    if (r.json)
      out << formatv("{0:2}", json::Value(disaggregatedPlanJson(
                                  *pools, shape, inputs.cluster, w)))
          << "\n";
    else
      printDisaggregatedPlan(*pools, shape, inputs.cluster, w, out);
    return absl::OkStatus();
  }
  absl::StatusOr<cost::ServingSearchResult> found = cost::searchServingPlans(
      shape, inputs.cluster, w, inputs.topK, inputs.profile);
  if (!found.ok())
    return absl::FailedPreconditionError(found.status().message());
  if (!r.planOut.empty() && !found->best.empty())
    if (absl::Status s = writeGenerationArtifact(shape, w, found->best.front());
        !s.ok())
      return s;
  if (r.json) {
    out << formatv("{0:2}",
                   json::Value(servingPlanJson(*found, shape, inputs.cluster,
                                               w, inputs.explain)))
        << "\n";
    return absl::OkStatus();
  }
  printServingPlan(*found, shape, inputs.cluster, w, inputs.explain, out);
  printWritten();
  return absl::OkStatus();
}

/// --serve -o: one replica of the chosen serving plan as a generation
/// step (plan.proto GenerationConfig): its tp x pp ranks run a token of
/// each of up to `batch` sequences a step, and prompt tokens in the rows
/// --step-tokens adds, over paged caches sized for every sequence at
/// prompt + output tokens.
absl::Status
Compiler::writeGenerationArtifact(const cost::TransformerModel &shape,
                                  const cost::ServingWorkload &w,
                                  const cost::ServingPrediction &best) {
  // The step's rows: those given, or the search's (Batching::Continuous).
  int64_t rows = r.stepTokens.value_or(std::max(best.batch, best.stepRows));
  if (rows < best.batch)
    return usage("--step-tokens " + std::to_string(rows) +
                 " is fewer than the " + std::to_string(best.batch) +
                 " sequences the search chose for the replica: every "
                 "running sequence takes a token of each step (give "
                 "--max-batch too)");
  plan::GenerationConfig g;
  g.set_max_batch(rows);
  g.set_max_sequences(best.batch);
  g.set_tokens_per_step(1);
  g.set_max_length(w.promptLen + w.outputLen);
  g.set_block_size(16);
  g.set_blocks(r.cacheBlocks.value_or(best.batch *
                                      ((g.max_length() + 15) / 16)));
  g.set_vocab(shape.vocab);
  g.set_prompt_len(w.promptLen);
  g.set_output_len(w.outputLen);
  cost::PlanPrediction p;
  p.plan.tp = best.tp;
  p.plan.pp = best.pp;
  p.plan.microbatchSize = rows;
  p.plan.globalBatch = rows;
  p.plan.precision = w.precision;
  p.plan.fusedAttention = true;
  p.numMicrobatches = 1;
  p.stepSeconds = best.tpotSeconds;
  // Per device of each stage: the weights and prefill workspace the
  // serving model priced (its fullest stage), and the caches as written:
  // the blocks of the layers the stage holds, split over tp.
  int64_t layers = shape.layers;
  for (int64_t s = 0; s < best.pp; ++s) {
    cost::MemoryBreakdown m;
    m.params = best.weightBytes;
    m.workspace = best.workspaceBytes;
    int64_t stageLayers = layers / best.pp + (s < layers % best.pp ? 1 : 0);
    m.kvCache = cost::kvCacheBytesPerToken(shape, stageLayers, best.tp,
                                           w.precision) *
                double(g.blocks() * g.block_size());
    m.total = m.params + m.workspace + m.kvCache;
    p.stageMemory.push_back(m);
    if (m.total > p.memory.total) {
      p.memory = m;
      p.peakMemoryStage = s;
      p.peakMemoryBytes = m.total;
    }
  }
  std::vector<std::string> why = {
      formatv("one replica of {0}: tp={1} pp={2}, up to {3} sequences a "
              "step; predicted {4:F1} ms a decode step, TTFT {5:F1} ms",
              best.replicas, best.tp, best.pp, best.batch,
              best.tpotSeconds * 1e3, best.ttftSeconds * 1e3)
          .str()};
  inputs.globalBatch = rows;
  return writeArtifact(p, shape, shape.name, {}, std::move(why), {}, {},
                       std::move(g));
}

absl::Status Compiler::compileGraph() {
  if (r.serve)
    return usage("--serve plans the generation of transformer layers; " +
                 r.model + " has none that cleave's transformer planner "
                 "knows (its graph is planned op by op; generation is "
                 "planned for the zoo's gpt, llama and moe families, and an "
                 "imported decoder's folded rotary or position tables are not "
                 "made into a generation step yet)");
  if (r.versus)
    return usage("--versus compares plans of transformer layers; " + r.model +
                 " has none (its graph is planned op by op)");
  GraphPlanRequest request;
  static_cast<PlanInputs &>(request) = inputs;
  request.model = r.model;
  request.options = options;
  request.fileBatch = fileBatch;
  request.optimizer = r.step.optimizer;
  request.showProgress = r.showProgress;
  request.load = [&](const ImportOptions &o) { return load(o); };
  request.context = &ctx;
  absl::StatusOr<GraphPlanResult> searched = planGraph(std::move(request));
  if (!searched.ok())
    return searched.status();
  const GraphPlanResult &result = *searched;
  const std::string &trace = result.trace;
  options.batch = result.best().plan.microbatchSize;
  if (!r.tracePath.empty()) {
    if (trace.empty())
      return absl::InternalError("--trace: " + r.model +
                                 "'s plan could not be simulated again");
    if (absl::Status s = writeText(r.tracePath, "--trace", trace); !s.ok())
      return s;
  }
  if (!r.planOut.empty()) {
    // The planner's sharding, where it priced the plan's tp and microbatch.
    const search::GraphWork &work = result.bestWork;
    bool sameWork = work.tp == result.best().plan.tp &&
                    work.microbatch == result.best().plan.microbatchSize;
    if (absl::Status s = writeArtifact(
            result.best(), std::nullopt, result.name, trace, {},
            {result.plans.begin() + 1, result.plans.end()}, sameWork ? work.tpShardings : std::vector<std::string>());
        !s.ok())
      return s;
  }
  if (r.json) {
    out << formatv("{0:2}", json::Value(graphPlanJson(result, inputs.cluster.name)))
        << "\n";
    return absl::OkStatus();
  }
  printGraphPlan(result, inputs.cluster.name, inputs.explain, out);
  printWritten();
  return absl::OkStatus();
}

absl::Status Compiler::run() {
  // A plan to write is searched like any other (bf16 on GPU clusters,
  // fused attention where it fuses), among the plans that lower
  // (whyNotLowerable): compile and compile -o choose the same plan.
  if (!r.planOut.empty())
    if (absl::Status s = checkLowerable(r); !s.ok())
      return s;
  // Unless fixed, the precision is bf16 where the devices have a bf16 rate
  // (GPUs), fp32 elsewhere (CPU ranks): the search's choice, and that of a
  // plan whose other knobs are all fixed.
  if (!fixed.contains(Knob::Precision))
    plan.precision = inputs.cluster.device.peakBf16 > 0 ? cost::DType::Bf16
                                                        : cost::DType::Fp32;
  // The search imports the model at each microbatch it tries; this first
  // import only reads what the model is, so a symbolic batch need not be
  // given (a dimension --dim binds, or a batch fixed in the file, wins).
  bool imported = !StringRef(r.model).starts_with("zoo:") &&
                  !StringRef(r.model).ends_with(".mlir");
  if (!options.batch && imported)
    options.batch = 1;
  // --serve reads an imported decoder at two tokens a sequence: at one,
  // every attention mask is causal, and an encoder could not be told apart.
  if (r.serve && imported && !options.seq)
    options.seq = 2;
  mlir::OwningOpRef<mlir::ModuleOp> module = load(options);
  if (!module)
    return absl::InvalidArgumentError("");
  // A file that fixes its batch (a number, or a dimension --dim binds)
  // imports at that batch whatever microbatch is asked: the microbatch is
  // that batch, not a knob to search.
  if (std::optional<int64_t> b = fixedBatch(*module)) {
    fileBatch = b;
    if (fixed.contains(Knob::Microbatch) && plan.microbatchSize != *b)
      return usage("--fix microbatch=" + Twine(plan.microbatchSize) + ": " +
                   r.model + " fixes its batch at " + Twine(*b) +
                   " (the leading dimension of its first input), so each "
                   "microbatch holds " + Twine(*b) + " samples");
    plan.microbatchSize = *b;
    fixed.insert(Knob::Microbatch);
  }
  if (r.serve && imported)
    return serveImported(*module);
  // Transformers are planned by their layers; other graphs op by op.
  mlir::FailureOr<std::optional<cost::TransformerModel>> read =
      getTransformerModel(*module);
  if (failed(read))
    return absl::InvalidArgumentError(""); // dimensions that do not read
  if (!read->has_value())
    return compileGraph();
  return compileTransformer(**read, *module);
}

} // namespace

absl::Status compileModel(mlir::MLIRContext &context,
                          const CompileRequest &request, raw_ostream &out) {
  return Compiler(context, request, out).run();
}

} // namespace cleave::driver
