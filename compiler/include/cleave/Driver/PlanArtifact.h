//===- PlanArtifact.h - `cleave compile -o`: the plan artifact --*- C++ -*-===//

#ifndef CLEAVE_DRIVER_PLANARTIFACT_H
#define CLEAVE_DRIVER_PLANARTIFACT_H

#include "cleave/Importers/ImportOptions.h"
#include "cleave/Transforms/TrainingStepBuilder.h"
#include "cleave/cost_model/PlanKnobs.h"
#include "cleave/cost_model/TransformerPlan.h"
#include "cleave/runtime/plan/plan.pb.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <functional>
#include <set>
#include <optional>
#include <string>
#include <vector>

namespace cleave::driver {

/// Empty when `plan` can be lowered, else why not: a search for a plan to
/// write (`compile -o`) admits only plans with no reason, and a fixed knob
/// the lowering cannot honour is refused with it.
std::string whyNotLowerable(const cost::ParallelConfig &plan);

struct ArtifactRequest {
  std::string path;
  std::string modelSource;
  std::string clusterSpec;
  cost::Cluster cluster;
  /// The model's layers as knob-level scoring saw them; for a graph
  /// without transformer layers (`transformer` false) only its name.
  cost::TransformerModel shape;
  bool transformer = true;
  cost::PlanPrediction prediction;
  /// A graph plan's tensor-parallel sharding, per op of @forward as the
  /// planner priced it (GraphWork::tpShardings); written on the ops before
  /// lowering, which honours them. Empty: the lowering searches.
  std::vector<std::string> shardings;
  /// The measured profile the prediction used (null: the formulas).
  const cost::Profile *profile = nullptr;
  /// Where `profile` was read from: the lowering's intra-op searches read
  /// it too.
  std::string profilePath;
  int64_t globalBatch = 0;
  uint64_t seed = 1234;
  StepOptions step;
  /// Loss scaling (TrainingConfig.loss_scaling, `--loss-scale`); unset:
  /// dynamic for fp16 plans (plan::defaultDynamicLossScaling), none for
  /// the others.
  std::optional<plan::LossScaling> lossScaling;
  /// Imports the model with the given options (the microbatch shape).
  std::function<mlir::OwningOpRef<mlir::ModuleOp>(const ImportOptions &)>
      load;
  ImportOptions importOptions;
  /// The simulated step as a Chrome trace, where the caller has one (a
  /// pipelined graph plan); transformer plans are simulated here.
  std::string simulatedTrace;
  /// Why the planner chose this plan, as the compile command saw it (the
  /// search, the next best plan); the artifact adds what bounds the step.
  std::vector<std::string> why;
  /// The search's next best plans, fastest first (the artifact keeps up to
  /// three, each with whyItLost).
  std::vector<cost::PlanPrediction> alternatives;
  /// Weights to start from, baked into the parameters' initial values
  /// (checkpoint::bakeWeights): the safetensors file to read (for an ONNX
  /// `--init-from`, the caller's conversion of its initializers) and the
  /// file the user named, which the plan records. Empty: the seeded
  /// initialisation.
  std::string initFromFile, initFromSource;
  /// A generation plan (`--serve -o`): the model, imported at
  /// `generation.tokens_per_step` tokens a sequence and `max_batch`
  /// sequences, becomes one generation step over paged caches
  /// (cleave-kv-cache) before it is lowered, without an optimizer.
  std::optional<plan::GenerationConfig> generation;
};

/// Lowers the predicted plan to programs and writes the artifact.
/// InvalidArgument: bad input; any other error: the lowering or the write
/// failed. An empty message was reported already (the model's
/// diagnostics).
absl::Status writePlanArtifact(const ArtifactRequest &request);

/// The one-rank plan of `partitioned`'s model that `cleave run --check`
/// trains alongside: the same microbatches accumulated on one device, the
/// same optimizer, seed and data. `load` imports the model source with options.
absl::StatusOr<plan::Plan> buildReferencePlan(
    const plan::Plan &partitioned,
    const std::function<mlir::OwningOpRef<mlir::ModuleOp>(
        const std::string &source, const ImportOptions &)> &load);

} // namespace cleave::driver

#endif // CLEAVE_DRIVER_PLANARTIFACT_H
