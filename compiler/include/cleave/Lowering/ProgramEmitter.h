//===- ProgramEmitter.h - A stage's training step to a plan program -*- C++ -*-===//
//
// Lowers one pipeline stage's training step (built by buildTrainingStep with
// tagged phases, after SPMD partitioning) to a plan::Program: a tensor table
// with a static arena layout, the forward, backward and optimizer segments,
// and the stage's schedule of segment runs for one step.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_LOWERING_PROGRAMEMITTER_H
#define CLEAVE_LOWERING_PROGRAMEMITTER_H

#include "cleave/cost_model/PipelineSchedule.h"
#include "cleave/cost_model/TransformerPlan.h"
#include "cleave/runtime/plan/plan.pb.h"

#include "mlir/IR/Operation.h"
#include "llvm/ADT/SmallVector.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <map>
#include <string>
#include <vector>

namespace cleave::lowering {

struct ProgramContext {
  /// The stage emitted.
  int stage = 0;
  /// The plan's knobs (LoweringOptions::knobs): pp stages; microbatchSize
  /// samples per microbatch (an input whose first dimension has this size
  /// is cut from the global batch; another, a constant operand of an
  /// imported graph, is whole on every rank and microbatch); dp replicas,
  /// all of them (with expert parallelism the "dp" axis holds dp / ep of
  /// them and the "ep" axis the rest: expert weights are split over "ep",
  /// so only the "dp" replicas share them); ZeRO 1 and 2 split the
  /// optimizer state (and its update) over the "dp" replicas, and the
  /// parameters of stage 3 arrive already split; overlap-grad puts the
  /// collectives beside compute; cp ranks hold the parameters whole and
  /// their gradients as partial sums over "cp" (without ZeRO those sums
  /// join the data-parallel buckets: one reduction over "dp,cp" a step
  /// instead of one over "cp" per parameter and microbatch); the schedule.
  cost::ParallelConfig knobs;
  int64_t microbatches = 1;
  /// 16-bit storage under ZeRO 1-2: a parameter whose update ZeRO splits
  /// is held in bf16 or fp16 (what its casts read, so they vanish) and its
  /// fp32 master weights are this replica's block, kept with the optimizer
  /// state, as Megatron-LM's distributed optimizer holds them: 2 bytes a
  /// parameter plus 4 / dp, not 4.
  bool halfParameters = false;
  /// Loss scaling (LoweringOptions::lossScaling): the optimizer segment
  /// unscales the gradients its updates read, all-reduces the overflow
  /// flag over every rank, and its updates run `unless` it is set.
  bool scaledLoss = false;
  /// An inference plan: the stage function is emitted as it is (no
  /// backward, no optimizer), microbatches run forward only, and the last
  /// stage's results become Program.output_tensors.
  bool inference = false;
  /// Vocabulary size for synthetic token ids (0: not a language model).
  int64_t vocab = 0;
  /// Stages holding each parameter, by name (two for tied embeddings):
  /// their gradients are summed between them over the "pp" axis.
  std::map<std::string, std::vector<int>> paramStages;
};

/// Emits the program; parameters are looked up in (and added to)
/// `plan.parameters` by name. Errors are emitted at the offending op.
/// The replicas that hold the same copy of a parameter, and so sum its
/// gradient (and share its ZeRO blocks): the "dp" axis, and "ep" too
/// unless the parameter is an expert weight split over "ep".
struct Replicas {
  llvm::SmallVector<std::string, 2> axes;
  int64_t count = 1;
  /// "dp" or "dp,ep".
  std::string joined() const;
};
Replicas replicasOf(mlir::Operation *param, const ProgramContext &context);
Replicas replicasOf(mlir::Operation *param, int64_t dp, int64_t ep);
/// replicasOf, and "cp" too (`cp` > 1): the replicas ZeRO shards a
/// parameter over when the context-parallel ranks hold it whole and sum
/// their partial gradients (Megatron-Core's distributed optimizer shards
/// over dp x cp; each microbatch's sum over "cp" then folds into ZeRO's
/// reduce-scatter).
Replicas zeroReplicasOf(mlir::Operation *param, int64_t dp, int64_t ep,
                        int64_t cp);

/// `chunks`: the stage's training steps, one per model chunk (several under
/// the interleaved schedule).
llvm::FailureOr<plan::Program> emitProgram(llvm::ArrayRef<mlir::func::FuncOp> chunks,
                                           const ProgramContext &context,
                                           plan::Plan &plan);

} // namespace cleave::lowering

#endif // CLEAVE_LOWERING_PROGRAMEMITTER_H
