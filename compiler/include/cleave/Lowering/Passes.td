//===- Passes.td - The lowering's passes -------------------*- tablegen -*-===//
//
// The steps of lowerToPlan (PlanLowering.h) that rewrite IR, as passes:
// with the dialect's own passes they make the pipeline
// `cleave-lower-to-stages` (LoweringPipeline.h), which cleave-opt runs and
// test/Lowering checks step by step; lowerToPlan runs the same pipeline and
// then emits each stage's program.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_LOWERING_PASSES_TD
#define CLEAVE_LOWERING_PASSES_TD

include "mlir/Pass/PassBase.td"

// The options both partitioners share: where the search prices its
// choices, and whether it prices a training step.
defvar searchOptions = [
  Option<"clusterSpec", "cluster", "std::string", "\"dgx-a100-80g\"",
         "cluster preset or file the intra-op search prices with">,
  Option<"profilePath", "profile", "std::string", "\"\"",
         "a measured profile replacing the cluster's formulas">,
  Option<"training", "training", "bool", "true",
         "price the backward pass and the update (false: inference)">,
  Option<"timeLimit", "time-limit", "double", "60",
         "CBC's time limit in seconds">,
];

def PartitionContextParallel
    : Pass<"cleave-partition-context-parallel", "mlir::ModuleOp"> {
  let summary = "Split every sample's sequence over the \"cp\" mesh axis";
  let description = [{
    Context parallelism: the intra-op search held to splitting tokens
    (parameters whole, inputs along the sequence) on a mesh of `cp`, then
    cleave-spmd-partition on the "cp" axis. A model with fused causal
    attention whose sequence 2 x cp divides gets zig-zag blocks (chunks g
    and 2cp - 1 - g), so that every rank computes as many scores; one that
    2 x cp does not divide keeps contiguous blocks, with a warning. A no-op
    for cp = 1.
  }];
  let options = !listconcat([
    Option<"cp", "cp", "int64_t", "1", "context-parallel degree">,
  ], searchOptions);
  let dependentDialects = ["::cleave::graph::GraphDialect"];
}

def PartitionTensorParallel
    : Pass<"cleave-partition-tensor-parallel", "mlir::ModuleOp"> {
  let summary = "Split the model over the \"tp\" mesh axis as the plan priced it";
  let description = [{
    The intra-op search on a mesh of `tp`, each device held to its share of
    the parameters (first with every divisible matrix split, as the plan's
    memory was predicted; where that has no solution, the looser limit),
    then cleave-spmd-partition on the "tp" axis. A transformer's batch is
    never split here (dp splits it); sequence parallelism is the plan's
    knob. A graph without transformer layers (`residual-blocks`) leaves the
    search free, with the gap and node limit its planner priced it with. A
    no-op for tp = 1.
  }];
  let options = !listconcat([
    Option<"tp", "tp", "int64_t", "1", "tensor-parallel degree">,
    Option<"sequenceParallel", "sequence-parallel", "bool", "false",
           "Megatron's sequence parallelism">,
    Option<"residualBlocks", "residual-blocks", "bool", "false",
           "a graph without transformer layers, planned by residual blocks">,
  ], searchOptions);
  let dependentDialects = ["::cleave::graph::GraphDialect"];
}

def StageTrainingSteps : Pass<"cleave-stage-training-steps", "mlir::ModuleOp"> {
  let summary = "Build each pipeline stage's training step";
  let description = [{
    For every `@stageN` of cleave-pipeline-split (N < `stages`), builds
    `@stageN_step`: the stage's forward, its backward (the gradients of
    the values it received sent back, those of the values it sent
    received) and the optimizer update, with the loss seeded by
    `loss-scale` (1 / (microbatches x dp): each replica's loss is a mean
    over its share) and, with `scaled-loss`, by the runtime's loss scale.
    Then, per stage: ZeRO-3 (`zero=3`, `dp` > 1) stores each trainable
    parameter as its replica's block, gathered where read;
    cleave-recompute runs the stage's recomputation (`recompute`, one entry
    per pipeline stage, stage N taking entry N mod `pp`, or one for all);
    weight gradients are reduced in fp32 and, with sequence parallelism,
    the gathers the backward pass reads again are re-issued there.
  }];
  let options = [
    Option<"stages", "stages", "int64_t", "1",
           "functions @stage0 ... to build steps of (pp x vpp)">,
    Option<"pp", "pp", "int64_t", "1", "pipeline stages (chunk N on N % pp)">,
    Option<"dp", "dp", "int64_t", "1", "data-parallel replicas">,
    Option<"ep", "ep", "int64_t", "1",
           "expert-parallel groups of the replicas (an expert's replicas "
           "are dp / ep)">,
    Option<"zero", "zero", "int64_t", "0", "ZeRO stage">,
    Option<"cp", "cp", "int64_t", "1",
           "context-parallel degree (ZeRO shards over dp x cp)">,
    ListOption<"recompute", "recompute", "std::string",
               "none, selective or full: one, or one per pipeline stage">,
    Option<"residualBlocks", "residual-blocks", "bool", "false",
           "recompute whole residual blocks (graphs without transformer "
           "layers)">,
    Option<"optimizer", "optimizer", "std::string", "\"adamw\"",
           "adamw or sgd">,
    Option<"lr", "lr", "double", "1e-3", "learning rate">,
    Option<"momentum", "momentum", "double", "0.9", "SGD's momentum">,
    Option<"beta1", "beta1", "double", "0.9", "AdamW's beta1">,
    Option<"beta2", "beta2", "double", "0.999", "AdamW's beta2">,
    Option<"eps", "eps", "double", "1e-8", "AdamW's epsilon">,
    Option<"weightDecay", "weight-decay", "double", "0", "weight decay">,
    Option<"lossScale", "loss-scale", "double", "1",
           "the gradient seeded at the loss">,
    Option<"scaledLoss", "scaled-loss", "bool", "false",
           "also multiply the seed by the runtime's loss_scale input">,
  ];
  let dependentDialects = ["::cleave::graph::GraphDialect",
                           "::mlir::func::FuncDialect"];
}

#endif // CLEAVE_LOWERING_PASSES_TD
