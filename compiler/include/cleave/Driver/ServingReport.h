//===- ServingReport.h - What `cleave compile --serve` prints ---*- C++ -*-===//
//
// The serving plan (cost/ServingPlan.h) as text and as `--json`: the plan,
// its latencies against the targets, throughput, memory per device, the
// alternatives, and with --explain every tensor x pipeline shape's best
// plan or why it has none.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_DRIVER_SERVINGREPORT_H
#define CLEAVE_DRIVER_SERVINGREPORT_H

#include "cleave/cost_model/ServingPlan.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

namespace cleave::driver {

void printServingPlan(const cost::ServingSearchResult &found,
                      const cost::TransformerModel &model,
                      const cost::Cluster &cluster,
                      const cost::ServingWorkload &workload, bool explain,
                      llvm::raw_ostream &out);

llvm::json::Object servingPlanJson(const cost::ServingSearchResult &found,
                                   const cost::TransformerModel &model,
                                   const cost::Cluster &cluster,
                                   const cost::ServingWorkload &workload,
                                   bool explain);

/// The same for separate prefill and decode pools (--disaggregate).
void printDisaggregatedPlan(const cost::DisaggregatedPrediction &plan,
                            const cost::TransformerModel &model,
                            const cost::Cluster &cluster,
                            const cost::ServingWorkload &workload,
                            llvm::raw_ostream &out);
llvm::json::Object
disaggregatedPlanJson(const cost::DisaggregatedPrediction &plan,
                      const cost::TransformerModel &model,
                      const cost::Cluster &cluster,
                      const cost::ServingWorkload &workload);

} // namespace cleave::driver

#endif // CLEAVE_DRIVER_SERVINGREPORT_H
