//===- Compile.h - `cleave compile`: model to plan --------------*- C++ -*-===//
//
// The compile command's work, with every flag already parsed into typed
// values: import the model, read it as transformer layers or take it op by
// op, plan it (TransformerPlanner.h or GraphPlanner.h), write the artifact
// (-o) and the simulated step (--trace), and print the report.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_DRIVER_COMPILE_H
#define CLEAVE_DRIVER_COMPILE_H

#include "cleave/Driver/PlanInputs.h"
#include "cleave/Importers/ImportOptions.h"
#include "cleave/Transforms/TrainingStepBuilder.h"
#include "cleave/cost_model/Cluster.h"
#include "cleave/cost_model/PlanKnobs.h"
#include "cleave/cost_model/Profile.h"
#include "cleave/cost_model/ServingPlan.h"
#include "cleave/runtime/plan/LossScaling.h"

#include "absl/status/status.h"

#include <cstdint>
#include <optional>
#include <string>

namespace mlir {
class MLIRContext;
} // namespace mlir
namespace llvm {
class raw_ostream;
} // namespace llvm

namespace cleave::driver {

struct CompileRequest {
  /// MODEL as the user named it: a file or a zoo spec.
  std::string model;
  /// --batch, --seq, --dim, --no-weights.
  ImportOptions importOptions;
  /// --cluster as given (recorded in the artifact); parsed in `inputs`.
  std::string clusterSpec;
  /// --profile, read, and where from.
  std::optional<cost::Profile> profile;
  std::string profilePath;
  /// What the planners are asked: the cluster, --fix's values (with the
  /// global batch) and which knobs it gave, --memory-limit, --top-k,
  /// --exhaustive, --explain (its profile is `profile` above).
  PlanInputs inputs;
  /// --versus: a plan to price beside the search's (its knobs in `plan`,
  /// those given in `fixed`; the rest searched), and to say why each
  /// printed plan beats or loses to. Transformers only.
  struct Versus {
    cost::ParallelConfig plan;
    cost::KnobSet fixed;
  };
  std::optional<Versus> versus;
  /// --serve: an inference workload to plan instead of training
  /// (ServingPlan.h); transformers only.
  std::optional<cost::ServingWorkload> serve;
  /// --cache-blocks: the key/value cache's blocks of 16 tokens in a
  /// --serve -o plan (default: every sequence of the batch at its whole
  /// length, so none is ever preempted).
  std::optional<int64_t> cacheBlocks;
  /// --step-tokens: rows of a --serve -o plan's step (default: the batch);
  /// those beyond the batch's sequences read prompts (chunked prefill).
  std::optional<int64_t> stepTokens;
  double timeLimit = 0;
  /// The report as JSON instead of text.
  bool json = false;
  /// Search progress on stderr (a terminal, not --json).
  bool showProgress = false;
  /// -o and --trace: "" for none.
  std::string planOut;
  std::string tracePath;
  /// The artifact's seed, optimizer ("adamw", "sgd", "none") and learning
  /// rate, and its loss scaling (unset: the precision's default).
  uint64_t seed = 1234;
  StepOptions step;
  std::optional<plan::LossScaling> lossScaling;
  /// --init-from: the safetensors file to bake and the file named.
  std::string initFromFile, initFromSource;
};

/// Compiles as `request` says, the report on `out`. InvalidArgument: bad
/// input (exit code 2); any other error: the work failed (1). An empty
/// message means it has been reported already (the model's diagnostics
/// went to `context`'s handler).
absl::Status compileModel(mlir::MLIRContext &context,
                          const CompileRequest &request,
                          llvm::raw_ostream &out);

} // namespace cleave::driver

#endif // CLEAVE_DRIVER_COMPILE_H
