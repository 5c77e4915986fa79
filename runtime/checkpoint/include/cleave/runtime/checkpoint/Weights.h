//===- Weights.h - Start a plan from whole named weights --------*- C++ -*-===//
//
// `--init-from model.safetensors`: the model's parameters by name, whole
// (as `cleave checkpoint export` writes them or another tool saved them).
// Each rank cuts its blocks out of them; optimizer states start at zero.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_CHECKPOINT_WEIGHTS_H
#define CLEAVE_RUNTIME_CHECKPOINT_WEIGHTS_H

#include "cleave/runtime/checkpoint/SafeTensors.h"
#include "cleave/runtime/executor/Executor.h"

#include "absl/status/status.h"

namespace cleave::checkpoint {

/// Every parameter of `plan` is in the file with its global shape, and the
/// file has nothing else: otherwise one error names the file and every
/// missing, extra and mis-shaped tensor (the first twenty).
absl::Status checkWeightsMatch(const SafeTensorsReader &weights,
                               const plan::Plan &plan);

/// Sets every parameter's initial_value from `weights`' tensor of its name
/// or of an alias (fp32; after checkWeightsMatch, which this runs first;
/// a generation plan's caches are not weights), so the plan
/// starts from those weights wherever it runs, and records `source` (the
/// file the user named) as the model's initial_weights.
absl::Status bakeWeights(plan::Plan &plan, const SafeTensorsReader &weights,
                         const std::string &source);

/// The weights `from` carries (initial_value), copied by name onto `to`'s
/// parameters that carry none, or onto all of them when `from` has weights
/// baked by --init-from (model.initial_weights): the one-rank reference of
/// `--check` starts where the partitioned plan does, not from the model
/// file's weights.
void inheritInitialValues(const plan::Plan &from, plan::Plan &to);

/// Loads `rank`'s parameter blocks from `weights` (after checkWeightsMatch).
absl::Status loadWeightsIntoRank(const SafeTensorsReader &weights,
                                 const plan::Plan &plan, int rank,
                                 executor::Executor &executor);

} // namespace cleave::checkpoint

#endif // CLEAVE_RUNTIME_CHECKPOINT_WEIGHTS_H
