//===- Inspect.h - Human and machine views of a plan artifact ---*- C++ -*-===//
//
// What `cleave inspect PLAN` prints. Plain C++ (no MLIR): the subcommand
// reads the file with readPlanFile and hands the plan to one of these.
// docs/plan-format.md documents the artifact and the JSON layout.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_INSPECT_INSPECT_H
#define CLEAVE_RUNTIME_INSPECT_INSPECT_H

#include "cleave/runtime/plan/plan.pb.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include <string>

namespace cleave::inspect {

/// A readable summary: model, cluster, mesh and knobs, stages, parameter
/// shardings (identical layers folded into one), collectives per step
/// (predicted and counted from the instruction streams), memory per device,
/// predictions and the planner's explanation.
std::string formatPlanSummary(const plan::Plan &plan);

/// The same content as one JSON object with the keys format_version,
/// producer, model, cluster, mesh, knobs, training, stages, parameters,
/// collectives, memory and predicted (docs/plan-format.md, "cleave inspect
/// --json"). Instruction streams, constant and initial values, the
/// partitioned MLIR and the simulated trace are left out.
std::string formatPlanJson(const plan::Plan &plan);

/// One self-contained HTML page (inline CSS and SVG, no script, nothing
/// fetched): the summary, the device mesh with what each rank holds, the
/// simulated pipeline timeline, memory per stage against the device,
/// collectives per step, the planner's explanation and the parameters'
/// shardings. Built from formatPlanJson's object; each of its figures
/// carries an id and its exact value (data-value) for tests.
/// `measuredTrace`: a Chrome trace `cleave run --trace` wrote of this plan,
/// drawn by its segments below the simulated step (empty: none).
std::string formatPlanHtml(const plan::Plan &plan,
                           const std::string &measuredTrace = "");

/// One rank's view of one training step: its coordinates and program, the
/// program's tensor table, then the schedule expanded into instructions.
/// Fails (naming the valid range) when `rank` is not a rank of the plan.
absl::StatusOr<std::string> formatRankProgram(const plan::Plan &plan,
                                              int rank);

/// The partitioned MLIR the plan carries; fails when it carries none.
absl::StatusOr<std::string> planMlir(const plan::Plan &plan);

/// Writes the simulated step (Chrome trace JSON) to `path`; fails when the
/// plan carries no trace or the file cannot be written.
absl::Status writeSimulatedTrace(const plan::Plan &plan,
                                 const std::string &path);

} // namespace cleave::inspect

#endif // CLEAVE_RUNTIME_INSPECT_INSPECT_H
