//===- LoweringPipeline.cpp - The lowering's passes in order --------------===//

#include "cleave/Lowering/LoweringPipeline.h"

#include "cleave/Lowering/Passes.h"
#include "cleave/Transforms/Passes.h"
#include "cleave/cost_model/Memory.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

namespace cleave::lowering {

void addLossAndFusionPasses(OpPassManager &pm, const LoweringOptions &o,
                            bool appendLoss) {
  if (appendLoss)
    pm.addPass(createAppendLoss());
  // Before any partitioning: the sharding search and the partitioners
  // then see one attention op per layer (its rule splits heads, batch or
  // queries), and autodiff gives it its fused backward.
  if (o.knobs.fusedAttention)
    pm.nest<func::FuncOp>().addPass(createFuseAttention());
}

void addPartitionPasses(OpPassManager &pm, const LoweringOptions &o) {
  if (o.knobs.ep > 1) {
    ExpertParallelOptions expert;
    expert.axis = "ep";
    expert.size = o.knobs.ep;
    pm.nest<func::FuncOp>().addPass(createExpertParallel(expert));
  }
  // After expert parallelism, which re-types the expert weights it splits
  // (a cast between a weight and its matmul would not be re-typed); the
  // tokens' all-to-alls it adds then carry bf16 like the other collectives.
  if (o.storage() == cost::DType::Bf16 || o.storage() == cost::DType::Fp16) {
    MixedPrecisionOptions mixed;
    mixed.storage = o.storage() == cost::DType::Bf16 ? "bf16" : "f16";
    pm.nest<func::FuncOp>().addPass(createMixedPrecision(mixed));
  }
  bool training = trains(o.step.optimizer);
  if (o.knobs.cp > 1) {
    PartitionContextParallelOptions cp;
    cp.cp = o.knobs.cp;
    cp.clusterSpec = o.clusterSpec;
    cp.profilePath = o.profilePath;
    cp.training = training;
    cp.timeLimit = o.searchTimeLimit;
    pm.addPass(createPartitionContextParallel(cp));
  }
  if (o.knobs.tp > 1) {
    PartitionTensorParallelOptions tp;
    tp.tp = o.knobs.tp;
    tp.sequenceParallel = o.knobs.sequenceParallel;
    tp.residualBlocks = o.residualBlocks;
    tp.clusterSpec = o.clusterSpec;
    tp.profilePath = o.profilePath;
    tp.training = training;
    tp.timeLimit = o.searchTimeLimit;
    pm.addPass(createPartitionTensorParallel(tp));
  }
}

void addStagePasses(OpPassManager &pm, const LoweringOptions &o,
                    llvm::ArrayRef<int64_t> layersPerStage,
                    llvm::ArrayRef<std::string> recomputeNames) {
  // Interleaved: pp x v chunks; chunk c runs on stage c % pp, and the
  // sends of chunk pp - 1 wrap around the "pp" axis to stage 0.
  PipelineSplitOptions split;
  split.stages = o.knobs.pp * o.knobs.chunks;
  split.residualBlocks = o.residualBlocks;
  split.layersPerStage.assign(layersPerStage.begin(), layersPerStage.end());
  pm.addPass(createPipelineSplit(split));
  if (!trains(o.step.optimizer))
    return;
  StageTrainingStepsOptions steps;
  steps.stages = o.knobs.pp * o.knobs.chunks;
  steps.pp = o.knobs.pp;
  steps.dp = o.knobs.dp;
  steps.ep = o.knobs.ep;
  steps.zero = o.knobs.zero;
  steps.cp = o.knobs.cp;
  steps.recompute.push_back(std::string(cost::recomputeName(o.knobs.recompute)));
  if (!o.knobs.stageRecompute.empty()) {
    steps.recompute.clear();
    for (cost::Recompute mode : o.knobs.stageRecompute)
      steps.recompute.push_back(std::string(cost::recomputeName(mode)));
  }
  if (!recomputeNames.empty())
    steps.recompute.assign(recomputeNames.begin(), recomputeNames.end());
  steps.residualBlocks = o.residualBlocks;
  steps.optimizer = optimizerName(o.step.optimizer);
  steps.lr = o.step.lr;
  steps.momentum = o.step.momentum;
  steps.beta1 = o.step.beta1;
  steps.beta2 = o.step.beta2;
  steps.eps = o.step.eps;
  steps.weightDecay = o.step.weightDecay;
  steps.lossScale = 1.0 / double(o.microbatches * o.knobs.dp);
  steps.scaledLoss = o.lossScaling.mode() != plan::LossScaling::NONE;
  pm.addPass(createStageTrainingSteps(steps));
}

namespace {

/// The knobs of `cleave-lower-to-stages`, as `cleave compile` gives them.
struct LowerToStagesOptions
    : public PassPipelineOptions<LowerToStagesOptions> {
  Option<int64_t> dp{*this, "dp", llvm::cl::desc("data-parallel replicas"),
                     llvm::cl::init(1)};
  Option<int64_t> tp{*this, "tp", llvm::cl::desc("tensor-parallel degree"),
                     llvm::cl::init(1)};
  Option<int64_t> pp{*this, "pp", llvm::cl::desc("pipeline stages"),
                     llvm::cl::init(1)};
  Option<int64_t> vpp{*this, "vpp",
                      llvm::cl::desc("model chunks per pipeline stage"),
                      llvm::cl::init(1)};
  Option<int64_t> cp{*this, "cp", llvm::cl::desc("context-parallel degree"),
                     llvm::cl::init(1)};
  Option<int64_t> ep{*this, "ep", llvm::cl::desc("expert-parallel degree"),
                     llvm::cl::init(1)};
  Option<int64_t> zero{*this, "zero", llvm::cl::desc("ZeRO stage"),
                       llvm::cl::init(0)};
  Option<int64_t> microbatches{*this, "microbatches",
                               llvm::cl::desc("microbatches a step"),
                               llvm::cl::init(1)};
  Option<bool> sp{*this, "sp", llvm::cl::desc("sequence parallelism"),
                  llvm::cl::init(false)};
  Option<bool> fusedAttention{*this, "fused-attention",
                              llvm::cl::desc("attention=fused"),
                              llvm::cl::init(false)};
  Option<bool> residualBlocks{
      *this, "residual-blocks",
      llvm::cl::desc("a graph without transformer layers"),
      llvm::cl::init(false)};
  Option<bool> appendLoss{
      *this, "append-loss",
      llvm::cl::desc("train an inference graph on the cross-entropy of its "
                     "first output"),
      llvm::cl::init(false)};
  Option<std::string> storage{*this, "storage",
                              llvm::cl::desc("fp32, bf16 or f16"),
                              llvm::cl::init("fp32")};
  Option<std::string> optimizer{*this, "optimizer",
                                llvm::cl::desc("adamw, sgd or none"),
                                llvm::cl::init("adamw")};
  Option<std::string> recompute{
      *this, "recompute",
      llvm::cl::desc("none, selective or full, per stage separated by /"),
      llvm::cl::init("none")};
  Option<std::string> cluster{*this, "cluster",
                              llvm::cl::desc("cluster the searches price on"),
                              llvm::cl::init("dgx-a100-80g")};
  ListOption<int64_t> layersPerStage{
      *this, "layers-per-stage",
      llvm::cl::desc("layers of each chunk (default: an even split)")};
};

/// Knob values the passes themselves check (a bad one fails its pass with
/// the reason) are passed through as given.
void buildLowerToStages(OpPassManager &pm, const LowerToStagesOptions &p) {
  LoweringOptions o;
  o.knobs.dp = p.dp;
  o.knobs.tp = p.tp;
  o.knobs.pp = p.pp;
  o.knobs.chunks = p.vpp;
  o.knobs.cp = p.cp;
  o.knobs.ep = p.ep;
  o.knobs.zero = static_cast<int>(p.zero);
  o.microbatches = p.microbatches;
  o.knobs.sequenceParallel = p.sp;
  o.knobs.fusedAttention = p.fusedAttention;
  o.residualBlocks = p.residualBlocks;
  o.clusterSpec = p.cluster;
  o.knobs.precision = p.storage == "bf16"  ? cost::DType::Bf16
              : p.storage == "f16" ? cost::DType::Fp16
                                   : cost::DType::Fp32;
  std::optional<Optimizer> optimizer = parseOptimizer(p.optimizer);
  o.step.optimizer = optimizer.value_or(Optimizer::AdamW);
  addLossAndFusionPasses(pm, o, p.appendLoss);
  if (p.storage != "fp32" && o.storage() == cost::DType::Fp32) {
    MixedPrecisionOptions mixed; // fails with what storage takes
    mixed.storage = p.storage;
    pm.nest<func::FuncOp>().addPass(createMixedPrecision(mixed));
  }
  addPartitionPasses(pm, o);
  llvm::SmallVector<llvm::StringRef> modes;
  llvm::StringRef(p.recompute).split(modes, '/');
  std::vector<std::string> names(modes.begin(), modes.end());
  addStagePasses(pm, o, p.layersPerStage, names);
  if (!optimizer) { // fails with what optimizer takes
    StageTrainingStepsOptions steps;
    steps.optimizer = p.optimizer;
    pm.addPass(createStageTrainingSteps(steps));
  }
}

} // namespace

void registerLoweringPipeline() {
  registerLoweringPasses();
  PassPipelineRegistration<LowerToStagesOptions>(
      "cleave-lower-to-stages",
      "A model and its plan's knobs to one training step per pipeline "
      "chunk: the loss and fused attention, expert parallelism, 16-bit "
      "storage, context and tensor parallelism, pipeline chunks and their "
      "steps (the IR half of cleave compile -o)",
      buildLowerToStages);
}

} // namespace cleave::lowering
