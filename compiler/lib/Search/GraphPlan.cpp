//===- GraphPlan.cpp - Data-parallel plans of graphs without layers -------===//

#include "cleave/Search/GraphPlan.h"

#include "cleave/Analysis/ModelSummary.h"
#include "cleave/Dialect/Graph/IR/GraphInterfaces.h"
#include "cleave/Dialect/Graph/IR/GraphOps.h"
#include "cleave/Dialect/Graph/IR/ShapeInference.h"
#include "cleave/Search/ShardingStrategy.h"

#include "cleave/cost_model/Collectives.h"
#include "cleave/cost_model/Memory.h"
#include "cleave/cost_model/OperatorCost.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <algorithm>

namespace cleave::search {

using namespace mlir;

namespace {

/// Forward and backward seconds of one op run whole.
absl::Status priceOp(Operation *op, const cost::Cluster &cluster,
                     const cost::Profile *profile, GraphWork &work) {
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
    return absl::OkStatus();
  }
  auto counts = dyn_cast<graph::CostOpInterface>(op);
  if (!counts)
    return absl::OkStatus();
  cost::GenericOp g;
  g.flops = counts.getFlops();
  g.bytesRead = counts.getBytesRead();
  g.bytesWritten = counts.getBytesWritten();
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
  double backward = isa<graph::Conv2dOp>(op) ? 2 : 1;
  work.forwardSeconds += c->seconds;
  work.backwardSeconds += backward * c->seconds;
  return absl::OkStatus();
}

double seconds(absl::StatusOr<cost::CollectiveCost> c) {
  return c.ok() ? c->seconds : 0;
}

} // namespace

absl::StatusOr<GraphWork> measureGraphWork(ModuleOp module, int64_t microbatch,
                                           const cost::Cluster &cluster,
                                           const cost::Profile *profile) {
  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  if (!forward || !forward.getBody().hasOneBlock())
    return absl::InvalidArgumentError("the module has no @forward function");
  GraphWork work;
  work.microbatch = microbatch;
  for (Operation &op : forward.getBody().front().without_terminator()) {
    if (absl::Status s = priceOp(&op, cluster, profile, work); !s.ok())
      return absl::InvalidArgumentError(absl::StrCat(
          "pricing '", op.getName().getStringRef().str(), "': ", s.message()));
    if (!isa<graph::ParamOp, graph::ConstantOp>(op))
      for (Value result : op.getResults())
        work.largestIntermediateBytes =
            std::max(work.largestIntermediateBytes,
                     static_cast<double>(graph::tensorBytes(result.getType())));
  }
  ModelSummary summary = summarizeModel(module);
  work.params = summary.trainableParams;
  work.paramBytes = summary.paramBytes;
  work.activationBytes = summary.activationBytes;
  work.trainingFlops = summary.trainingFlops;
  return work;
}

absl::StatusOr<cost::PlanPrediction>
scoreGraphPlan(const GraphWork &work, const cost::Cluster &cluster,
               const cost::ParallelConfig &plan, const std::string &optimizer,
               const cost::Profile *profile) {
  int64_t devices = cluster.numDevices();
  if (plan.tp != 1 || plan.pp != 1 || plan.cp != 1 || plan.ep != 1)
    return absl::InvalidArgumentError(
        "a graph without transformer layers is planned data-parallel only "
        "(tp, pp, cp and ep 1)");
  if (plan.dp != devices)
    return absl::InvalidArgumentError(absl::StrCat(
        "dp must be every device (", devices, ") for a graph without "
        "transformer layers, got ", plan.dp));
  if (plan.microbatchSize != work.microbatch)
    return absl::InvalidArgumentError("the graph was priced at another "
                                      "microbatch size");
  int64_t perReplica = plan.globalBatch / plan.dp;
  if (plan.globalBatch % plan.dp || perReplica % plan.microbatchSize)
    return absl::InvalidArgumentError(absl::StrCat(
        "the global batch ", plan.globalBatch, " does not split into "
        "microbatches of ", plan.microbatchSize, " over ", plan.dp,
        " replicas"));
  int64_t microbatches = perReplica / plan.microbatchSize;
  double dp = static_cast<double>(plan.dp);
  double states = optimizer == "adamw" ? 2 : optimizer == "sgd" ? 1 : 0;

  cost::Group group = cost::Group::strided(0, plan.dp);
  double allReduce = 0, reduceScatter = 0, allGather = 0;
  if (plan.dp > 1) {
    allReduce = seconds(cost::estimateCollective(
        cost::Collective::AllReduce, work.paramBytes, group, cluster, profile));
    reduceScatter = seconds(cost::estimateCollective(
        cost::Collective::ReduceScatter, work.paramBytes, group, cluster,
        profile));
    allGather = seconds(cost::estimateCollective(
        cost::Collective::AllGather, work.paramBytes, group, cluster,
        profile));
  }
  double compute =
      microbatches * (work.forwardSeconds + work.backwardSeconds);
  // The reduction the step waits for: ZeRO 0's all-reduce starts with the
  // last backward pass; ZeRO 1 reduce-scatters after it and all-gathers
  // the updated shards; ZeRO 2 reduce-scatters every microbatch (hidden
  // behind the next one's work but the last); ZeRO 3 also all-gathers the
  // parameters for every forward and backward pass.
  double exposed = 0;
  switch (plan.zero) {
  case 0:
    exposed = std::max(0.0, allReduce - work.backwardSeconds);
    break;
  case 1:
    exposed = reduceScatter + allGather;
    break;
  case 2:
    exposed = reduceScatter + allGather;
    break;
  default:
    exposed = reduceScatter + 2 * microbatches * allGather;
    break;
  }
  double shard = plan.zero >= 1 ? dp : 1;
  cost::GenericOp update;
  update.bytesRead = work.paramBytes * (2 + states) / shard;
  update.bytesWritten = work.paramBytes * (1 + states) / shard;
  update.flops = 10.0 * work.params / shard;
  absl::StatusOr<cost::OpCost> step = cost::estimateGeneric(update, cluster,
                                                            profile);
  double optimizerSeconds = step.ok() ? step->seconds : 0;

  cost::PlanPrediction p;
  p.plan = plan;
  p.numMicrobatches = microbatches;
  p.layersPerStage = {0};
  cost::MemoryBreakdown &m = p.memory;
  m.params = work.paramBytes / (plan.zero >= 3 ? dp : 1);
  m.grads = work.paramBytes / (plan.zero >= 2 ? dp : 1);
  m.optimizer = states * work.paramBytes / shard;
  m.activations = work.activationBytes;
  // ZeRO 2 and 3 hold a microbatch's whole gradient before reducing it;
  // ZeRO 3 also the gathered parameters.
  m.commBuffers = (plan.zero >= 2 ? work.paramBytes : 0) +
                  (plan.zero >= 3 ? work.paramBytes : 0);
  m.workspace = 3 * work.largestIntermediateBytes;
  double allocated = m.params + m.grads + m.optimizer + m.activations +
                     m.commBuffers + m.workspace;
  m.fragmentation = cost::TransformerMemoryConfig{}.fragmentation * allocated;
  m.total = allocated + m.fragmentation;
  p.stageMemory = {m};
  p.peakMemoryBytes = m.total;
  double capacity = cluster.device.memoryBytes;
  if (capacity > 0 && m.total > capacity)
    return absl::ResourceExhaustedError(absl::StrFormat(
        "the device needs %.2f GB of %.2f GB (params %.2f, grads %.2f, "
        "optimizer %.2f, activations %.2f)",
        m.total / 1e9, capacity / 1e9, m.params / 1e9, m.grads / 1e9,
        m.optimizer / 1e9, m.activations / 1e9));

  p.stepSeconds = compute + exposed + optimizerSeconds;
  p.lowerBoundSeconds = p.stepSeconds;
  p.gradReduceSeconds = plan.zero == 0 ? allReduce : reduceScatter;
  p.modelFlops = work.trainingFlops * microbatches * dp;
  p.hardwareFlops = p.modelFlops;
  p.tflopsPerDevice = p.stepSeconds > 0
                          ? p.modelFlops / dp / p.stepSeconds / 1e12
                          : 0;
  p.hwTflopsPerDevice = p.tflopsPerDevice;
  double peak = cluster.device.peakFlops(plan.precision);
  p.mfu = peak > 0 ? p.tflopsPerDevice * 1e12 / peak : 0;
  return p;
}

} // namespace cleave::search
