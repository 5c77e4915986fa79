//===- GraphPlanChoice.h - Which graph plan to take, and why none fits -*- C++ -*-===//
//
// The policy of the graph planner's search (`cleave compile` of a graph
// without transformer layers) over the plans scoreGraphPlan prices: which
// of two is preferred, and what the closest plan lacks when none fits.
// Plain C++ on the cost model's types.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_SEARCH_GRAPHPLANCHOICE_H
#define CLEAVE_SEARCH_GRAPHPLANCHOICE_H

#include "cleave/cost_model/Cluster.h"
#include "cleave/cost_model/PlanKnobs.h"
#include "cleave/cost_model/TransformerPlan.h"

#include <string>

namespace cleave::search {

/// Plans within this fraction of each other's step time tie (preferGraphPlan).
/// The lowering issues ZeRO's gathers and reduce-scatters one per parameter
/// tensor (a ResNet-50 has 161) where the planner prices one collective per
/// piece, so gains this small from sharding (ResNet-50 on a DGX: ZeRO-3 0.7%
/// ahead of ZeRO-0, from its sharded optimizer step) are within what it does
/// not price.
inline constexpr double kGraphPlanTie = 0.01;

/// Whether graph plan `a` is preferred to `b`: faster, except that within
/// kGraphPlanTie of each other the plan recomputing on fewer stages, then
/// the lower ZeRO stage, is taken.
bool preferGraphPlan(const cost::PlanPrediction &a,
                     const cost::PlanPrediction &b);

/// Why no graph plan fits, from the plan that comes closest (`closest`,
/// priced without the memory limit): its memory breakdown, and what would
/// make it fit, given the knobs the user fixed.
std::string whyNoGraphPlanFits(const cost::PlanPrediction &closest,
                               const cost::Cluster &cluster,
                               const cost::KnobSet &fixed);

} // namespace cleave::search

#endif // CLEAVE_SEARCH_GRAPHPLANCHOICE_H
