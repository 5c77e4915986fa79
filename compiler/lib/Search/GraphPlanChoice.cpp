//===- GraphPlanChoice.cpp - Which graph plan to take, and why none fits --===//

#include "cleave/Search/GraphPlanChoice.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace cleave::search {

bool preferGraphPlan(const cost::PlanPrediction &a,
                     const cost::PlanPrediction &b) {
  constexpr double kTie = kGraphPlanTie;
  double faster = std::min(a.stepSeconds, b.stepSeconds);
  if (std::abs(a.stepSeconds - b.stepSeconds) > kTie * faster)
    return a.stepSeconds < b.stepSeconds;
  // Within the tie, the plan that recomputes on fewer stages, then the
  // lower ZeRO stage: less work and fewer collectives for the same time.
  auto recomputing = [](const cost::ParallelConfig &p) {
    int64_t n = 0;
    for (int64_t s = 0; s < p.pp; ++s)
      n += p.recomputeOf(s) != cost::Recompute::None;
    return n;
  };
  if (recomputing(a.plan) != recomputing(b.plan))
    return recomputing(a.plan) < recomputing(b.plan);
  if (a.plan.zero != b.plan.zero)
    return a.plan.zero < b.plan.zero;
  return a.stepSeconds < b.stepSeconds;
}

std::string whyNoGraphPlanFits(const cost::PlanPrediction &closest,
                               const cost::Cluster &cluster,
                               const cost::KnobSet &fixed) {
  const cost::MemoryBreakdown &m = closest.memory;
  const cost::ParallelConfig &p = closest.plan;
  std::string out = llvm::formatv(
      "the closest plan, {0}, needs {1:F2} GB on stage {2} of the {3:F2} GB a "
      "device has (",
      cost::planKnobsString(p), m.total / 1e9,
      closest.peakMemoryStage, cluster.device.memoryBytes / 1e9);
  bool firstItem = true;
  for (auto [name, bytes] : m.items()) {
    if (name == "total" || bytes <= 0)
      continue;
    out += llvm::formatv("{0}{1} {2:F2}", firstItem ? "" : ", ", name, bytes / 1e9);
    firstItem = false;
  }
  out += ")";
  double states = m.params + m.grads + m.optimizer;
  std::vector<std::string> remedies;
  bool activations = m.activations >= states;
  if (activations) {
    if (fixed.contains(cost::Knob::Microbatch) && p.microbatchSize > 1)
      remedies.push_back("a smaller microbatch than the fixed " +
                         std::to_string(p.microbatchSize));
    if (fixed.contains(cost::Knob::Recompute) &&
        p.recomputeOf(closest.peakMemoryStage) ==
            cost::Recompute::None)
      remedies.push_back("recomputation (recompute=full is fixed off)");
    remedies.push_back("more devices for more pipeline stages or tensor "
                       "parallelism to split its activations");
    remedies.push_back("smaller inputs (the model's image size)");
  } else {
    if (fixed.contains(cost::Knob::Zero) && p.zero < 3)
      remedies.push_back("ZeRO-3 (zero=" + std::to_string(p.zero) +
                         " is fixed)");
    remedies.push_back("more devices, for pipeline stages or tensor "
                       "parallelism to split its parameters or more "
                       "replicas for ZeRO to shard them over");
  }
  for (cost::Knob knob : {cost::Knob::Tp, cost::Knob::Pp, cost::Knob::Dp})
    if (fixed.contains(knob)) {
      remedies.push_back("unfixing " + std::string(cost::knobName(knob)));
      break;
    }
  remedies.push_back("devices with more memory (or a larger --memory-limit)");
  out += activations ? "; its activations dominate" : "; its model states "
                                                      "dominate";
  out += fixed.contains(cost::Knob::Microbatch) || fixed.contains(cost::Knob::Recompute) ||
                 fixed.contains(cost::Knob::Zero)
             ? ""
             : " (every microbatch size down to 1, recomputation and ZeRO "
               "0-3 were tried)";
  out += llvm::formatv("; to fit, it needs {0:F2} GB less a device: try ",
                 (m.total - cluster.device.memoryBytes) / 1e9)
             .str();
  for (size_t i = 0; i < remedies.size(); ++i)
    out += (i == 0 ? "" : i + 1 == remedies.size() ? ", or " : ", ") +
           remedies[i];
  return out;
}

} // namespace cleave::search
