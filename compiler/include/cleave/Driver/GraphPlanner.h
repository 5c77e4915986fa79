//===- GraphPlanner.h - The planner of graphs without transformers -*- C++ -*-===//
//
// `cleave compile` for a graph without transformer layers (ResNets, imported
// CNNs, MLPs and recurrent models): data parallelism, pipeline stages of its
// residual blocks and tensor parallelism inside a node, the sharding chosen
// by the intra-operator search (dp x pp x tp = every device), with the
// microbatch, schedule (GPipe, 1F1B, interleaved, ZB-H1), ZeRO stage and
// recomputation searched and each candidate priced op by op
// (cleave/Search/GraphPlan.h). The tool parses the flags into a
// GraphPlanRequest and prints the GraphPlanResult.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_DRIVER_GRAPHPLANNER_H
#define CLEAVE_DRIVER_GRAPHPLANNER_H

#include "cleave/Driver/PlanInputs.h"
#include "cleave/Importers/ImportOptions.h"
#include "cleave/Transforms/Optimizer.h"
#include "cleave/Search/GraphPlan.h"
#include "cleave/cost_model/PlanKnobs.h"
#include "cleave/cost_model/Profile.h"
#include "cleave/cost_model/TransformerPlan.h"

#include "absl/status/statusor.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cleave::driver {

/// The common inputs; `exhaustive` simulates every candidate that fits
/// (none ruled out by its bound), and `explain` keeps every (tp, pp)
/// degree's best plan.
struct GraphPlanRequest : PlanInputs {
  /// The model as the user named it (messages).
  std::string model;
  /// Import options; the search sets the batch per microbatch size.
  ImportOptions options;
  /// The batch the model's file fixes, if it does.
  std::optional<int64_t> fileBatch;
  /// None: an inference plan, no backward pass.
  Optimizer optimizer = Optimizer::AdamW;
  /// Progress on stderr for searches over a second.
  bool showProgress = false;
  /// Imports the model at the given options (the tool's loader); its
  /// diagnostics go to `context`, which the search silences while it
  /// tries batch sizes.
  std::function<mlir::OwningOpRef<mlir::ModuleOp>(const ImportOptions &)>
      load;
  mlir::MLIRContext *context = nullptr;
};

using Degree = std::pair<int64_t, int64_t>; // (tp, pp)

struct GraphPlanResult {
  /// The model's name, trainable parameters and residual blocks.
  std::string name;
  double parameters = 0;
  int64_t blocks = 0;
  int64_t devices = 0;
  /// The cluster with the memory limit applied.
  cost::Cluster capped;
  /// The chosen plan, then the fastest other distinct plans (up to topK).
  std::vector<cost::PlanPrediction> plans;
  /// The priced graph of the chosen plan's microbatch and tp degree.
  search::GraphWork bestWork;
  /// The chosen plan's simulated step (Chrome trace JSON; one stage too),
  /// empty only where it could not be simulated again.
  std::string trace;
  /// The (tp, pp) degrees tried, each one's best plan or why none fits.
  std::vector<Degree> degrees;
  std::map<Degree, cost::PlanPrediction> bestOfDegree;
  std::map<Degree, std::string> whyNoneOfDegree;
  /// The search: candidates priced, infeasible, ruled out by the bound;
  /// the largest optimality gap CBC proved for a tensor-parallel sharding;
  /// seconds.
  int64_t candidates = 0, infeasible = 0, bounded = 0;
  double worstGap = 0, searchSeconds = 0;

  const cost::PlanPrediction &best() const { return plans.front(); }
};

/// Searches the plans of `request`. Errors: InvalidArgument for what the
/// user asked that cannot be (a knob, the batch, the model's import; exit
/// 2), FailedPrecondition when no plan fits or the graph cannot be priced
/// (exit 1); the message says why, naming the flag or the model.
absl::StatusOr<GraphPlanResult> planGraph(GraphPlanRequest request);

} // namespace cleave::driver

#endif // CLEAVE_DRIVER_GRAPHPLANNER_H
