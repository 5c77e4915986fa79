//===- GraphPlan.cpp - Data-parallel plans of graphs without layers -------===//

#include "cleave/Search/GraphPlan.h"

#include "cleave/Analysis/LayerNumbering.h"
#include "cleave/Analysis/ModelSummary.h"
#include "cleave/Dialect/Graph/IR/GraphInterfaces.h"
#include "cleave/Dialect/Graph/IR/GraphOps.h"
#include "cleave/Dialect/Graph/IR/ShapeInference.h"
#include "cleave/Search/IntraOpSearch.h"
#include "cleave/Search/ShardingStrategy.h"

#include "cleave/cost_model/Collectives.h"
#include "cleave/cost_model/Memory.h"
#include "cleave/cost_model/OperatorCost.h"
#include "cleave/cost_model/PipelineSimulation.h"
#include "cleave/cost_model/StageBalance.h"
#include "cleave/cost_model/StageWorkload.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <algorithm>

namespace cleave::search {

using namespace mlir;

namespace {

/// Whether `v` is a trainable parameter, or made from trainable
/// parameters alone (a transposed or reshaped weight).
bool isParameter(Value v) {
  Operation *def = v.getDefiningOp();
  if (!def)
    return false;
  if (auto param = dyn_cast<graph::ParamOp>(def))
    return param.isTrainable();
  return def->getNumOperands() > 0 &&
         llvm::all_of(def->getOperands(), [](Value in) {
           auto param = in.getDefiningOp<graph::ParamOp>();
           return param && param.isTrainable();
         });
}

/// A contraction or convolution with a trainable weight: its backward's
/// weight-gradient product is the W pass zero-bubble schedules defer, which
/// reads the op's activation inputs and its output gradient until it runs.
void addWeightGradient(Operation *op, double seconds, GraphPiece &work) {
  work.weightGradSeconds += seconds;
  for (Value in : op->getOperands())
    if (!isParameter(in))
      work.weightGradBytes += double(graph::tensorBytes(in.getType()));
  for (Value out : op->getResults())
    work.weightGradBytes += double(graph::tensorBytes(out.getType()));
}

/// Forward and backward seconds of one op run whole, added to `work`.
absl::Status priceOp(Operation *op, const cost::Cluster &cluster,
                     const cost::Profile *profile, GraphPiece &work) {
  bool weighted = llvm::any_of(op->getOperands(), isParameter);
  SmallVector<ShardingStrategy, 4> strategies;
  if (auto rules = dyn_cast<ShardingStrategyOpInterface>(op))
    rules.getShardingStrategies(1, strategies);
  if (strategies.empty())
    strategies.push_back(replicatedStrategy(op));
  const ShardingStrategy &whole = strategies.front();
  if (whole.gemm) {
    absl::StatusOr<cost::GemmTrainingCost> c =
        cost::estimateGemmTraining(*whole.gemm, false, cluster, profile);
    if (!c.ok())
      return c.status();
    work.forwardSeconds += c->forward.seconds;
    work.backwardSeconds += c->seconds - c->forward.seconds;
    work.forwardFlops += whole.gemm->flops();
    // Backward is two GEMMs of the forward's size: the input's gradient
    // and the weight's.
    if (weighted)
      addWeightGradient(op, (c->seconds - c->forward.seconds) / 2, work);
    return absl::OkStatus();
  }
  auto counts = dyn_cast<graph::CostOpInterface>(op);
  if (!counts)
    return absl::OkStatus();
  cost::GenericOp g;
  g.flops = counts.getFlops();
  g.bytesRead = counts.getBytesRead();
  g.bytesWritten = counts.getBytesWritten();
  g.tensorCores = counts.usesTensorCores();
  if (g.flops == 0 && g.bytesRead == 0 && g.bytesWritten == 0)
    return absl::OkStatus();
  if (op->getNumResults())
    if (auto t = dyn_cast<ShapedType>(op->getResult(0).getType()))
      g.dtype = costDType(t.getElementType());
  absl::StatusOr<cost::OpCost> c = cost::estimateGeneric(g, cluster, profile);
  if (!c.ok())
    return c.status();
  // A convolution (no GEMM rule) computes two products backward, as a
  // contraction does; other ops about their own work once.
  // Of other ops' parameters (normalisation scales, biases) the gradients
  // are reductions of the output gradient, small beside a contraction's,
  // which W does not count.
  bool conv = isa<graph::Conv2dOp>(op);
  double backward = conv ? 2 : 1;
  // Fused attention's backward recomputes the scores and runs five block
  // products to the forward's two (graph.attention_grad's FLOPs).
  if (auto attention = dyn_cast<graph::AttentionOp>(op)) {
    double grad = graph::attentionFlops(attention.getQuery().getType(),
                                        attention.getKey().getType(),
                                        attention.getCausal(),
                                        /*backward=*/true);
    backward = g.flops > 0 ? grad / g.flops : 1;
  }
  work.forwardSeconds += c->seconds;
  work.backwardSeconds += backward * c->seconds;
  work.forwardFlops += g.flops;
  if (conv && weighted)
    addWeightGradient(op, c->seconds, work);
  return absl::OkStatus();
}

bool recomputes(const cost::ParallelConfig &plan, int64_t stage) {
  return plan.recomputeOf(stage) == cost::Recompute::Full;
}

/// Recomputation as a graph without transformer layers has it: whole
/// residual blocks (full) or nothing, once per stage, where the blocks'
/// stash under it is known.
absl::Status checkRecompute(const GraphWork &work,
                            const cost::ParallelConfig &plan) {
  if (!plan.stageRecompute.empty() &&
      int64_t(plan.stageRecompute.size()) != plan.pp)
    return absl::InvalidArgumentError(absl::StrCat(
        "recomputation is given for ", plan.stageRecompute.size(),
        " stages, but pp = ", plan.pp));
  bool any = false;
  for (int64_t s = 0; s < plan.pp; ++s) {
    if (plan.recomputeOf(s) == cost::Recompute::Selective)
      return absl::InvalidArgumentError(
          "selective recomputation recomputes attention cores, which a graph "
          "without transformer layers has none of; it recomputes whole "
          "residual blocks (full) or nothing (none)");
    any |= recomputes(plan, s);
  }
  if (!any)
    return absl::OkStatus();
  if (work.numBlocks() == 0)
    return absl::InvalidArgumentError(
        "the graph has no residual blocks to recompute");
  for (int64_t k = 0; k < work.numBlocks(); ++k)
    if (work.pieces[k + 1].recomputedActivationBytes < 0)
      return absl::InvalidArgumentError(
          "what the residual blocks stash under recomputation is not known");
  return absl::OkStatus();
}

/// Microbatches each replica runs a step, checked against the batch the
/// graph was priced at.
absl::StatusOr<int64_t> microbatchesPerReplica(const GraphWork &work,
                                               const cost::ParallelConfig &plan) {
  if (plan.microbatchSize != work.microbatch)
    return absl::InvalidArgumentError("the graph was priced at another "
                                      "microbatch size");
  int64_t perReplica = plan.globalBatch / plan.dp;
  if (plan.globalBatch % plan.dp || perReplica % plan.microbatchSize)
    return absl::InvalidArgumentError(absl::StrCat(
        "the global batch ", plan.globalBatch, " does not split into "
        "microbatches of ", plan.microbatchSize, " over ", plan.dp,
        " replicas"));
  return perReplica / plan.microbatchSize;
}

/// The blocks of each of `chunks` pipeline chunks, balanced by their
/// passes' time with the stem on the first chunk and the head on the last;
/// under the interleaved schedule (chunk c on stage c % pp) for the
/// busiest stage; stages that recompute run their blocks' forward twice.
std::vector<int64_t> splitBlocks(const GraphWork &work,
                                 const cost::ParallelConfig &plan,
                                 int64_t chunks) {
  const std::vector<GraphPiece> &pieces = work.pieces;
  int64_t blocks = work.numBlocks(), p = plan.pp;
  auto passes = [](const GraphPiece &g) {
    return g.forwardSeconds + g.backwardSeconds;
  };
  double stem = passes(pieces.front()), head = passes(pieces.back());
  auto blockSeconds = [&](bool recompute) {
    std::vector<double> seconds;
    for (int64_t k = 0; k < blocks; ++k)
      seconds.push_back(passes(pieces[k + 1]) +
                        (recompute ? pieces[k + 1].forwardSeconds : 0));
    return seconds;
  };
  bool allRecompute = true, anyRecompute = false;
  for (int64_t s = 0; s < p; ++s) {
    allRecompute &= recomputes(plan, s);
    anyRecompute |= recomputes(plan, s);
  }
  std::vector<double> uniform = blockSeconds(allRecompute);
  std::vector<int64_t> split =
      cost::balanceLayers(uniform, stem, head, chunks);
  if (split.empty())
    split = cost::evenLayerSplit(blocks, chunks);
  if (chunks > p) {
    // A stage runs all its chunks: improve from the balanced and the even
    // split for the busiest stage, and keep the better.
    std::vector<int64_t> fromEven = cost::refineForStages(
        uniform, stem, head, cost::evenLayerSplit(blocks, chunks), p);
    split = cost::refineForStages(uniform, stem, head, split, p);
    if (cost::busiestStage(uniform, stem, head, fromEven, p) <
        cost::busiestStage(uniform, stem, head, split, p))
      split = std::move(fromEven);
  }
  if (anyRecompute && !allRecompute) {
    std::vector<std::vector<double>> byChunk;
    for (int64_t c = 0; c < chunks; ++c)
      byChunk.push_back(blockSeconds(recomputes(plan, c % p)));
    split = cost::refineForChunkCosts(byChunk, stem, head, split, p);
  }
  return split;
}

/// scoreGraphPlan with pp > 1 (see GraphPlan.h).
absl::StatusOr<cost::PlanPrediction>
scorePipelinedGraph(const GraphWork &work, const cost::Cluster &cluster,
                    const cost::ParallelConfig &plan,
                    Optimizer optimizer, const cost::Profile *profile,
                    cost::TaskGraph *graphOut, cost::Timeline *timelineOut,
                    double simulateBelow) {
  int64_t devices = cluster.numDevices(), p = plan.pp, blocks = work.numBlocks();
  if (p == 1 && plan.dp * plan.tp != devices)
    return absl::InvalidArgumentError(absl::StrCat(
        "dp x tp must be every device (", devices, ") for a graph without "
        "transformer layers, got ", plan.dp, " x ", plan.tp));
  if (plan.dp * p * plan.tp != devices)
    return absl::InvalidArgumentError(absl::StrCat(
        "dp x pp x tp must be every device (", devices, "), got ", plan.dp,
        " x ", p, " x ", plan.tp));
  bool interleaved = plan.schedule == cost::ScheduleKind::Interleaved;
  if (interleaved && plan.chunks < 2)
    return absl::InvalidArgumentError(
        "the interleaved schedule runs two or more chunks per stage (vpp)");
  if (!interleaved && plan.chunks > 1)
    return absl::InvalidArgumentError(absl::StrCat(
        plan.chunks, " chunks per stage need the interleaved schedule"));
  int64_t v = plan.chunks, n = p * v;
  // One chunk holds the whole graph, blocks or none.
  if (n > 1 && blocks < n)
    return absl::InvalidArgumentError(absl::StrCat(
        "the graph has ", blocks, " residual block(s), too few for ", p,
        " pipeline stages", v > 1 ? absl::StrCat(" of ", v, " chunks") : ""));
  absl::StatusOr<int64_t> microbatches = microbatchesPerReplica(work, plan);
  if (!microbatches.ok())
    return microbatches.status();
  int64_t m = *microbatches;
  if (interleaved && m % p)
    return absl::InvalidArgumentError(absl::StrCat(
        "the interleaved schedule runs a multiple of pp (", p,
        ") microbatches per replica, not ", m));
  const std::vector<GraphPiece> &pieces = work.pieces;
  std::vector<int64_t> split = splitBlocks(work, plan, n);

  // Each chunk's pieces: its blocks, the stem on the first, the head on
  // the last. Recomputing: each block stashes its input and output, runs
  // its forward pass again before its backward pass, and holds what that
  // pass makes until its backward pass has read it (one block at a time).
  cost::StageWorkload workload;
  workload.microbatches = m;
  workload.optimizerStates = optimizerStates(optimizer);
  workload.chunks.resize(n);
  // The training step's FLOPs over the chunks: each piece's forward, and
  // the backward in the step's ratio to the forward (about twice).
  double forwardFlops = 0;
  for (const GraphPiece &g : pieces)
    forwardFlops += g.forwardFlops;
  double backwardRatio =
      forwardFlops > 0 ? work.trainingFlops / forwardFlops - 1 : 0;
  int64_t first = 0;
  for (int64_t c = 0; c < n; ++c) {
    cost::ChunkWorkload &chunk = workload.chunks[c];
    auto add = [&](const GraphPiece &g) {
      chunk.largestParams = std::max(chunk.largestParams, g.paramBytes);
      chunk.largestParam = std::max(chunk.largestParam, g.largestParamBytes);
      chunk.largestIntermediate =
          std::max(chunk.largestIntermediate, g.largestIntermediateBytes);
      chunk.forwardSeconds += g.forwardSeconds;
      chunk.backwardSeconds += g.backwardSeconds;
      chunk.weightGradSeconds += g.weightGradSeconds;
      chunk.weightGradBytes += g.weightGradBytes;
      chunk.forwardFlops += g.forwardFlops;
      chunk.backwardFlops += g.forwardFlops * backwardRatio;
      chunk.params += g.params;
      chunk.paramTensors += g.paramTensors;
      chunk.activationBytes += g.activationBytes;
      chunk.inputBytes += g.inputBytes;
    };
    if (c == 0)
      add(pieces.front());
    bool recompute = recomputes(plan, c % p);
    for (int64_t k = first; k < first + split[c]; ++k) {
      const GraphPiece &block = pieces[k + 1];
      add(block);
      if (!recompute)
        continue;
      chunk.backwardSeconds += block.forwardSeconds;
      chunk.activationBytes +=
          block.recomputedActivationBytes - block.activationBytes;
      chunk.recomputedWork =
          std::max(chunk.recomputedWork,
                   block.activationBytes - block.recomputedActivationBytes);
      chunk.recomputedFlops += block.forwardFlops;
    }
    if (c == n - 1)
      add(pieces.back());
    chunk.blocks = split[c];
    chunk.gradientPieces = split[c] + (c == 0) + (c == n - 1);
    // What crosses the cuts: the output of the block before each.
    chunk.inBytes = c > 0 ? pieces[first].outputBytes : 0;
    chunk.outBytes = c < n - 1 ? pieces[first + split[c]].outputBytes : 0;
    first += split[c];
  }
  cost::ScoreOptions options;
  options.simulateBelow = simulateBelow;
  options.graphOut = graphOut;
  options.timelineOut = timelineOut;
  absl::StatusOr<cost::PlanPrediction> scored =
      cost::scoreStages(workload, cluster, plan, profile, options);
  // One chunk holds the whole graph: no split for the lowering to follow.
  if (scored.ok() && n == 1)
    scored->layersPerChunk.clear();
  return scored;
}

/// The piece an op of the forward function belongs to.
size_t pieceIndex(const BlockNumbering &blocks, Operation *op) {
  int64_t l = blocks.layer.lookup(op);
  return l < 0 ? 0 : l >= blocks.numBlocks ? blocks.numBlocks + 1 : l + 1;
}

absl::StatusOr<GraphWork> measureWhole(func::FuncOp forward,
                                       const BlockNumbering &blocks,
                                       int64_t microbatch,
                                       const cost::Cluster &cluster,
                                       const cost::Profile *profile) {
  GraphWork work;
  work.microbatch = microbatch;
  work.pieces.assign(blocks.numBlocks + 2, GraphPiece{});
  auto pieceOf = [&](Operation *op) -> GraphPiece & {
    return work.pieces[pieceIndex(blocks, op)];
  };
  for (Operation &op : forward.getBody().front().without_terminator()) {
    GraphPiece &piece = pieceOf(&op);
    if (absl::Status s = priceOp(&op, cluster, profile, piece); !s.ok())
      return absl::InvalidArgumentError(absl::StrCat(
          "pricing '", op.getName().getStringRef().str(), "': ", s.message()));
    if (auto param = dyn_cast<graph::ParamOp>(op); param && param.isTrainable()) {
      auto type = cast<RankedTensorType>(param.getType());
      piece.params += double(type.getNumElements());
      piece.paramBytes += double(graph::tensorBytes(type));
      piece.paramTensors += 1;
      piece.largestParamBytes =
          std::max(piece.largestParamBytes, double(graph::tensorBytes(type)));
    }
    if (isa<graph::InputOp>(op))
      piece.inputBytes +=
          static_cast<double>(graph::tensorBytes(op.getResult(0).getType()));
    if (isa<graph::ParamOp, graph::ConstantOp, graph::InputOp>(op))
      continue;
    for (Value result : op.getResults()) {
      double bytes = static_cast<double>(graph::tensorBytes(result.getType()));
      piece.largestIntermediateBytes =
          std::max(piece.largestIntermediateBytes, bytes);
      work.largestIntermediateBytes =
          std::max(work.largestIntermediateBytes, bytes);
    }
    // The last op of a piece makes what flows on to the next.
    if (op.getNumResults())
      piece.outputBytes =
          static_cast<double>(graph::tensorBytes(op.getResult(0).getType()));
  }
  for (const GraphPiece &piece : work.pieces) {
    work.forwardSeconds += piece.forwardSeconds;
    work.backwardSeconds += piece.backwardSeconds;
  }
  return work;
}

/// `work` (priced whole) made one device's of `tp` under the sharding the
/// intra-operator search chooses: each piece's passes scaled by what the
/// choice costs against its ops run whole, its parameters and
/// intermediates the device's blocks.
absl::Status shardWork(GraphWork &work, func::FuncOp forward,
                       const BlockNumbering &blocks, int64_t tp,
                       const cost::Cluster &cluster,
                       const cost::Profile *profile, bool training,
                       double timeLimit) {
  IntraOpOptions o;
  o.training = training;
  // No sequence knob here: the lowering leaves the search free too.
  o.timeLimitSeconds = timeLimit;
  // The choice is made as the lowering makes it (the same limits, no
  // profile: the lowering has none), then priced with the profile.
  TensorParallelLimits limits = tensorParallelLimits(forward, tp);
  o.relativeGap = limits.graphPlanGap;
  o.maxNodes = limits.graphPlanNodes;
  std::optional<IntraOpProblem> problem;
  std::optional<IntraOpPlan> plan;
  std::string whyNot;
  {
    ScopedDiagnosticHandler quiet(forward.getContext(),
                                  [&](Diagnostic &d) {
                                    whyNot = d.str();
                                    return success();
                                  });
    for (double limit : {limits.strict, limits.loose}) {
      o.paramMemoryBytes = limit;
      FailureOr<IntraOpProblem> built =
          IntraOpProblem::build(forward, cluster, {tp}, o);
      if (failed(built))
        break;
      FailureOr<IntraOpPlan> solved = solveIntraOp(*built, o, &whyNot);
      if (succeeded(solved)) {
        problem = std::move(*built);
        plan = std::move(*solved);
        break;
      }
    }
  }
  if (!plan)
    return absl::InvalidArgumentError(absl::StrCat(
        "the intra-operator search found no sharding over ", tp,
        " devices: ", whyNot.empty() ? "none fits" : whyNot));
  o.profile = profile;
  o.paramMemoryBytes = problem->paramMemoryLimit();
  FailureOr<IntraOpProblem> priced =
      IntraOpProblem::build(forward, cluster, {tp}, o);
  if (failed(priced) || priced->nodes().size() != problem->nodes().size())
    return absl::InternalError("pricing the tensor-parallel sharding again "
                               "with the profile failed");
  const std::vector<unsigned> &choice = plan->choice;
  work.tpShardings.clear();
  for (auto [op, s] : llvm::zip(plan->ops, plan->strategies)) {
    std::string text;
    llvm::raw_string_ostream os(text);
    shardingAttrOf(op, s, plan->meshAxes).print(os);
    work.tpShardings.push_back(std::move(text));
  }

  size_t n = work.pieces.size();
  std::vector<double> sharded(n, 0), whole(n, 0), local(n, 0), full(n, 0),
      params(n, 0), paramBytes(n, 0), largestParam(n, 0), largest(n, 0),
      output(n, -1);
  for (auto [i, op] : llvm::enumerate(priced->nodes())) {
    size_t k = pieceIndex(blocks, op);
    const ShardingStrategy &s = priced->strategies(i)[choice[i]];
    ++work.tpStrategies[s.name];
    if (auto param = dyn_cast<graph::ParamOp>(op)) {
      // The update is priced by the plan from the device's bytes.
      if (!param.isTrainable())
        continue;
      auto type = cast<RankedTensorType>(param.getType());
      double bytes = priced->paramBytes(i, choice[i]);
      double share = bytes / double(graph::tensorBytes(type));
      params[k] += double(type.getNumElements()) * share;
      paramBytes[k] += bytes;
      largestParam[k] = std::max(largestParam[k], bytes);
      continue;
    }
    if (isa<graph::InputOp, graph::ConstantOp>(op))
      continue;
    sharded[k] += priced->nodeCost(i, choice[i]);
    whole[k] += priced->nodeCost(i, 0);
    for (auto [j, result] : llvm::enumerate(op->getResults())) {
      double bytes = double(graph::tensorBytes(result.getType()));
      double mine = j < s.results.size() && s.results[j] != kReplicated
                        ? bytes / double(tp)
                        : bytes;
      full[k] += bytes;
      local[k] += mine;
      largest[k] = std::max(largest[k], mine);
      if (j == 0)
        output[k] = mine;
    }
  }
  // Resharding and gradient reductions, with the value's producer.
  for (auto [g, edges] : llvm::enumerate(priced->valueEdges())) {
    if (edges.empty())
      continue;
    Operation *producer = priced->nodes()[priced->edges()[edges[0]].producer];
    sharded[pieceIndex(blocks, producer)] += priced->valueCost(g, choice);
  }

  double allLocal = 0, allFull = 0;
  for (size_t k = 0; k < n; ++k) {
    allLocal += local[k];
    allFull += full[k];
  }
  if (allFull > 0)
    work.activationBytes *= allLocal / allFull;
  work.tp = tp;
  work.tpGap = std::max(0.0, plan->gap);
  work.tpSearchSeconds = work.tpWholeSeconds = 0;
  work.forwardSeconds = work.backwardSeconds = 0;
  work.params = 0;
  work.paramBytes = work.largestIntermediateBytes = 0;
  for (size_t k = 0; k < n; ++k) {
    GraphPiece &piece = work.pieces[k];
    work.tpSearchSeconds += sharded[k];
    work.tpWholeSeconds += whole[k];
    double passes = piece.forwardSeconds + piece.backwardSeconds;
    if (whole[k] > 0 && passes > 0) {
      double ratio = sharded[k] / whole[k];
      piece.forwardSeconds *= ratio;
      piece.backwardSeconds *= ratio;
      piece.weightGradSeconds *= ratio;
    } else {
      // Only collectives (a gather of a source): half each way.
      piece.forwardSeconds += sharded[k] / 2;
      piece.backwardSeconds += sharded[k] / 2;
    }
    piece.params = params[k];
    piece.paramBytes = paramBytes[k];
    piece.largestParamBytes = largestParam[k];
    piece.activationShare = full[k] > 0 ? local[k] / full[k] : 1;
    piece.weightGradBytes *= piece.activationShare;
    piece.largestIntermediateBytes = largest[k];
    if (output[k] >= 0)
      piece.outputBytes = output[k];
    work.forwardSeconds += piece.forwardSeconds;
    work.backwardSeconds += piece.backwardSeconds;
    work.params += int64_t(piece.params);
    work.paramBytes += piece.paramBytes;
    work.largestIntermediateBytes =
        std::max(work.largestIntermediateBytes, piece.largestIntermediateBytes);
  }
  return absl::OkStatus();
}

} // namespace

absl::StatusOr<GraphWork> measureGraphWork(ModuleOp module, int64_t microbatch,
                                           const cost::Cluster &cluster,
                                           const cost::Profile *profile,
                                           int64_t tp, bool training,
                                           double searchTimeLimit) {
  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  if (!forward || !forward.getBody().hasOneBlock())
    return absl::InvalidArgumentError("the module has no @forward function");
  // The ops' sharding rules, as the lowering attaches them: a contraction
  // is priced by its GEMM (priceOp) and tensor parallelism searched with
  // them.
  {
    DialectRegistry registry;
    registerShardingStrategyExternalModels(registry);
    module.getContext()->appendDialectRegistry(registry);
  }
  BlockNumbering blocks = numberResidualBlocks(forward.getBody().front());
  absl::StatusOr<GraphWork> work =
      measureWhole(forward, blocks, microbatch, cluster, profile);
  if (!work.ok())
    return work.status();
  ModelSummary summary = summarizeModel(module);
  work->params = summary.trainableParams;
  work->paramBytes = summary.paramBytes;
  work->activationBytes = summary.activationBytes;
  work->trainingFlops = summary.trainingFlops;
  if (tp > 1) {
    if (absl::Status s = shardWork(*work, forward, blocks, tp, cluster, profile,
                                   training, searchTimeLimit);
        !s.ok())
      return s;
  }
  return work;
}

absl::StatusOr<cost::PlanPrediction>
scoreGraphPlan(const GraphWork &work, const cost::Cluster &cluster,
               const cost::ParallelConfig &plan, Optimizer optimizer,
               const cost::Profile *profile, cost::TaskGraph *graph,
               cost::Timeline *timeline, double simulateBelow) {
  if (plan.cp != 1 || plan.ep != 1)
    return absl::InvalidArgumentError(
        "a graph without transformer layers is planned with data, tensor "
        "and pipeline parallelism only (cp and ep 1)");
  if (plan.tp != work.tp)
    return absl::InvalidArgumentError(absl::StrCat(
        "the graph was priced for tp=", work.tp, ", not tp=", plan.tp));
  if (absl::Status s = checkRecompute(work, plan); !s.ok())
    return s;
  // One stage is a pipeline of one: the same chunk workload and scoring
  // (cost::scoreStages) as every pipelined plan.
  return scorePipelinedGraph(work, cluster, plan, optimizer, profile, graph,
                             timeline, simulateBelow);
}

} // namespace cleave::search

