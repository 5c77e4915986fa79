//===- PlanLowering.h - A model and its knobs to a plan artifact -*- C++ -*-===//
//
// The lowering from a searched (or hand-given) plan to the artifact the
// runtime executes:
//   1. tensor parallelism: the intra-op search picks every op's sharding
//      on the "tp" axis with the parameters held to their 1/tp share, and
//      cleave-spmd-partition rewrites @forward into one device's program
//      (context parallelism the same way on the "cp" axis, held to
//      splitting tokens);
//   2. pipeline parallelism: cleave-pipeline-split cuts it into stages;
//   3. each stage's training step (forward, backward with send/recv
//      pairing, optimizer) is built with the loss scaled by 1 /
//      (microbatches x data-parallel replicas);
//      with activation recomputation (cleave-recompute) when asked;
//   4. each step is emitted as a program (segments, tensors, arena,
//      schedule), and the plan gets its mesh ["pp", "dp", "ep", "cp", "tp"], ranks,
//      groups and parameter table.
// The model must be imported at the shape of one microbatch of one
// data-parallel replica.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_LOWERING_PLANLOWERING_H
#define CLEAVE_LOWERING_PLANLOWERING_H

#include "cleave/Transforms/TrainingStepBuilder.h"
#include "cleave/cost_model/Cluster.h"
#include "cleave/cost_model/Memory.h"
#include "cleave/cost_model/PipelineSchedule.h"
#include "cleave/cost_model/TransformerPlan.h"
#include "cleave/runtime/plan/plan.pb.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace cleave::lowering {

struct LoweringOptions {
  cost::Cluster cluster;
  std::string clusterSpec;
  /// The measured profile the plan was priced with (empty: the formulas);
  /// the intra-op searches choose their shardings with it too.
  std::string profilePath;
  /// The plan's knobs, as the search chose them (cost::ParallelConfig):
  /// dp, tp, pp, cp and ep (expert parallelism: groups of ep of the dp
  /// replicas share the experts of every MoE layer; the mesh's "dp" axis
  /// then holds dp / ep replicas and its "ep" axis ep), ZeRO over the "dp"
  /// replicas, Megatron's sequence parallelism on "tp", overlap-grad
  /// (gradient buckets, ZeRO's reduce-scatters and ZeRO-3's gathers beside
  /// the passes' compute; off, where the graph needs them and in the
  /// optimizer segment, as the cost model then prices them), fused
  /// attention (graph.attention by cleave-fuse-attention before
  /// partitioning), recomputation (per stage or for all), the microbatch
  /// size (the imported batch), the schedule and its model chunks per
  /// stage (`chunks`, the interleaved schedule's virtual stages), and the
  /// precision, whose 16-bit types are the storage (storage()).
  /// `globalBatch` is not read: `microbatches` is.
  cost::ParallelConfig knobs = fp32Knobs();
  /// Storage of activations, their gradients and the collectives carrying
  /// them: Fp32, or Bf16 / Fp16 (cleave-mixed-precision, before
  /// partitioning), 2 bytes with fp32 parameters (the master weights),
  /// weight gradients, optimizer state and loss. bf16 and fp16 plans
  /// store 16 bits; tf32 and fp8 ones fp32 (the precision then says how a
  /// GPU multiplies them).
  cost::DType storage() const {
    return knobs.precision == cost::DType::Bf16 ||
                   knobs.precision == cost::DType::Fp16
               ? knobs.precision
               : cost::DType::Fp32;
  }
  static cost::ParallelConfig fp32Knobs() {
    cost::ParallelConfig knobs;
    knobs.precision = cost::DType::Fp32;
    return knobs;
  }
  /// Loss scaling (fp16 storage), written to TrainingConfig.loss_scaling:
  /// unless NONE, the loss's gradient is seeded with the runtime's
  /// "loss_scale" input, the reduced gradients are unscaled and checked in
  /// the optimizer segment, and the updates skipped on overflow.
  plan::LossScaling lossScaling;
  int64_t microbatches = 1;
  /// Layers of each of the pp x chunks model chunks, in model order
  /// (the cost model's balanced split, PlanPrediction::layersPerChunk);
  /// empty, or not summing to the model's layers: an even split.
  std::vector<int64_t> chunkLayers;
  /// Pipeline stages cut the graph's residual blocks (numberResidualBlocks),
  /// not the layers its parameter names number: graphs without transformer
  /// layers (ResNets, imported CNNs).
  bool residualBlocks = false;
  StepOptions step;
  uint64_t seed = 1234;
  /// Vocabulary of the token inputs (0 if none).
  int64_t vocab = 0;
  int64_t seqLen = 0;
  /// CBC's time limit for the tensor-parallel sharding.
  double searchTimeLimit = 60;
};

/// Lowers `module` (consumed: its functions are rewritten) to a plan.
/// Errors are emitted as diagnostics.
llvm::FailureOr<plan::Plan> lowerToPlan(mlir::ModuleOp module,
                                        const LoweringOptions &options);

} // namespace cleave::lowering

#endif // CLEAVE_LOWERING_PLANLOWERING_H
