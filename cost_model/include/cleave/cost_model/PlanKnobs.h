//===- PlanKnobs.h - Parse and print plans given as knobs -------*- C++ -*-===//

#ifndef CLEAVE_COST_MODEL_PLANKNOBS_H
#define CLEAVE_COST_MODEL_PLANKNOBS_H

#include "cleave/cost_model/TransformerPlan.h"

#include <string>
#include <string_view>

namespace cleave::cost {

/// Applies `dp=8,tp=8,pp=16,microbatch=1,schedule=1f1b,recompute=full,...`
/// to `plan`. Knobs: dp, tp, pp, cp, ep (degrees), sp (on/off), zero (0-3),
/// microbatch (size), schedule (gpipe, 1f1b, interleaved, zb-h1), vpp
/// (chunks per stage; sets the interleaved schedule when > 1), recompute
/// (none, selective, full; or one per pipeline stage, `full/none/none`),
/// precision (fp32, tf32, bf16, fp16). Errors name
/// the knob. Returns the set of knobs given, so callers can fill the rest.
absl::StatusOr<std::vector<std::string>>
applyPlanKnobs(std::string_view knobs, ParallelConfig &plan);

/// Fills the data-parallel degree from the device count when it was not
/// given: dp = devices / (tp * pp * cp).
absl::Status inferDataParallel(int64_t devices, bool dpGiven,
                               ParallelConfig &plan);

/// "dp=8,tp=8,pp=16,cp=1,ep=1,sp=off,zero=0,microbatch=1,schedule=1f1b,..."
std::string planKnobsString(const ParallelConfig &plan);

std::string_view precisionName(DType dtype);

} // namespace cleave::cost

#endif // CLEAVE_COST_MODEL_PLANKNOBS_H
