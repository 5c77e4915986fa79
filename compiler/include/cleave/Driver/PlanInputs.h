//===- PlanInputs.h - What both planners are asked ---------------*- C++ -*-===//

#ifndef CLEAVE_DRIVER_PLANINPUTS_H
#define CLEAVE_DRIVER_PLANINPUTS_H

#include "cleave/cost_model/Cluster.h"
#include "cleave/cost_model/PlanKnobs.h"
#include "cleave/cost_model/Profile.h"

#include <cstdint>
#include <optional>

namespace cleave::driver {

/// The cluster, the knobs `--fix` holds and the search's bounds, the same
/// for the planner of transformers (TransformerPlanner.h) and that of
/// other graphs (GraphPlanner.h).
struct PlanInputs {
  cost::Cluster cluster;
  /// Knob values, and which of them `--fix` gave (held by the search).
  cost::ParallelConfig plan;
  cost::KnobSet fixed;
  /// A measured profile replacing the formulas (null: none).
  const cost::Profile *profile = nullptr;
  /// `--memory-limit`: the device memory the plans must fit.
  std::optional<double> memoryLimit;
  int64_t globalBatch = 0;
  /// Keep the K best distinct plans.
  int topK = 1;
  /// Price every candidate (no bound).
  bool exhaustive = false;
  /// Keep every shape's best plan, or why it has none.
  bool explain = false;
};

} // namespace cleave::driver

#endif // CLEAVE_DRIVER_PLANINPUTS_H
