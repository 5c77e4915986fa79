//===- PlanReport.h - What `cleave compile` prints about a plan -*- C++ -*-===//
//
// The compile command's report of a chosen plan: its knobs and prediction
// as JSON (`--json`) and as text, and for a graph without transformer
// layers the search's result (alternatives, the intra-operator sharding,
// `--explain`'s best plan per degree).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_DRIVER_PLANREPORT_H
#define CLEAVE_DRIVER_PLANREPORT_H

#include "cleave/Driver/GraphPlanner.h"
#include "cleave/cost_model/TransformerPlan.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <utility>

namespace cleave::driver {

/// The JSON of a plan and of its prediction, as `compile --json` prints
/// them under "plan" and "predicted".
std::pair<llvm::json::Object, llvm::json::Object>
planJson(const cost::PlanPrediction &p);

/// The prediction as text: knobs, microbatches, step time, throughput,
/// bubble and memory.
void printPrediction(const cost::PlanPrediction &p, llvm::raw_ostream &os);

/// `compile --json`'s object for a graph plan search.
llvm::json::Object graphPlanJson(const GraphPlanResult &result,
                                 const std::string &clusterName);

/// `compile`'s text for a graph plan search (`explain`: the best plan of
/// every degree and why the others fall short).
void printGraphPlan(const GraphPlanResult &result,
                    const std::string &clusterName, bool explain,
                    llvm::raw_ostream &os);

} // namespace cleave::driver

#endif // CLEAVE_DRIVER_PLANREPORT_H
