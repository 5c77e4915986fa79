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
#include "cleave/cost_model/PlanSearch.h"
#include "cleave/cost_model/TransformerPlan.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>
#include <vector>
#include <utility>

namespace cleave::driver {

/// The JSON of a plan and of its prediction, as `compile --json` prints
/// them under "plan" and "predicted".
std::pair<llvm::json::Object, llvm::json::Object>
planJson(const cost::PlanPrediction &p);

/// Why `other` lost to `best`, in one sentence: the knobs that differ,
/// then the larger of the two ways a step grows (the busiest stage's own
/// work, with what in it grew; or the time it waits: bubble and exposed
/// communication).
std::string whyItLost(const cost::PlanPrediction &best,
                      const cost::PlanPrediction &other);

/// `--versus`: for each of `plans` (the chosen one, then the
/// alternatives), one sentence on why it beats or loses to `recipe`.
std::vector<std::string>
versusSentences(const std::vector<cost::PlanPrediction> &plans,
                const cost::PlanPrediction &recipe);

/// The prediction as text: knobs, microbatches, step time, throughput,
/// bubble and memory.
void printPrediction(const cost::PlanPrediction &p, llvm::raw_ostream &os);

/// A transformer's chosen plan (the best first, then the alternatives) and
/// the search that found it (null: every knob was fixed).
struct TransformerReport {
  std::string model;
  cost::Cluster cluster;
  std::vector<cost::PlanPrediction> plans;
  const cost::PlanSearchResult *search = nullptr;
  std::optional<double> memoryLimit;
  /// The graph's own parameter count (the text's model line).
  double parameters = 0;
};

/// `compile --json`'s object for a transformer plan.
llvm::json::Object transformerPlanJson(const TransformerReport &report);

/// `compile`'s text for a transformer plan (`explain`: the best plan of
/// every tensor x pipeline x context shape and what holds it back).
void printTransformerPlan(const TransformerReport &report, bool explain,
                          llvm::raw_ostream &os);

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
