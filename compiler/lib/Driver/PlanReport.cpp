//===- PlanReport.cpp - What `cleave compile` prints about a plan ---------===//

#include "cleave/Driver/PlanReport.h"

#include "cleave/cost_model/PlanKnobs.h"

#include "absl/strings/str_format.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace llvm;

namespace cleave::driver {

namespace {

/// "alternative I: T s (+P%), KNOBS" for every plan after the first.
void printAlternatives(const std::vector<cost::PlanPrediction> &plans,
                       raw_ostream &os) {
  for (size_t i = 1; i < plans.size(); ++i)
    os << formatv("alternative {0}: {1:F3} s (+{2:F1}%), {3}\n", i,
                  plans[i].stepSeconds,
                  100 * (plans[i].stepSeconds / plans[0].stepSeconds - 1),
                  cost::planKnobsString(plans[i].plan));
}

/// "tp=2 -> 4, schedule=1f1b -> interleaved": the knobs of `other` that
/// differ from `best`'s.
std::string knobChanges(const cost::ParallelConfig &best,
                        const cost::ParallelConfig &other) {
  SmallVector<StringRef> a, b;
  std::string left = cost::planKnobsString(best),
              right = cost::planKnobsString(other);
  StringRef(left).split(a, ',');
  StringRef(right).split(b, ',');
  std::string out;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (a[i] == b[i])
      continue;
    auto [key, from] = a[i].split('=');
    out += formatv("{0}{1}={2} -> {3}", out.empty() ? "" : ", ", key, from,
                   b[i].split('=').second)
               .str();
  }
  return out.empty() ? "the same knobs" : out;
}

} // namespace

std::string whyItLost(const cost::PlanPrediction &best,
                      const cost::PlanPrediction &other) {
  // A step is the busiest stage's compute stream's work (its lower bound)
  // plus the time that stream waits (bubble, exposed communication).
  double work = other.lowerBoundSeconds - best.lowerBoundSeconds;
  double wait = (other.stepSeconds - other.lowerBoundSeconds) -
                (best.stepSeconds - best.lowerBoundSeconds);
  auto secs = [](double s) { return absl::StrFormat("%.4g s", s); };
  std::string cause;
  if (work >= wait) {
    cause = "its busiest stage works " + secs(other.lowerBoundSeconds) +
            " against " + secs(best.lowerBoundSeconds);
    // What in the work grew: recomputation, or a layer's parts per sample
    // (the microbatches may differ in size).
    double recompute = other.hardwareFlops / std::max(other.modelFlops, 1.0) -
                       best.hardwareFlops / std::max(best.modelFlops, 1.0);
    double a = 1.0 / std::max<int64_t>(1, best.plan.microbatchSize),
           b = 1.0 / std::max<int64_t>(1, other.plan.microbatchSize);
    struct Part {
      const char *name;
      double from, to;
    } parts[] = {
        {"GEMMs", a * best.layerGemmSeconds, b * other.layerGemmSeconds},
        {"element-wise kernels", a * best.layerElementwiseSeconds,
         b * other.layerElementwiseSeconds},
        {"tensor-parallel collectives", a * best.layerTensorCommSeconds,
         b * other.layerTensorCommSeconds}};
    const Part *grew = nullptr;
    for (const Part &p : parts)
      if (p.to - p.from > 0 && (!grew || p.to - p.from > grew->to - grew->from))
        grew = &p;
    if (recompute > 0.05)
      cause += formatv(" (recomputation adds {0:F0}% of the model's FLOPs)",
                       100 * recompute)
                   .str();
    else if (grew)
      cause += absl::StrFormat(" (%s of a layer's forward pass per sample "
                               "%.4g ms against %.4g ms)",
                               grew->name, grew->to * 1e3, grew->from * 1e3);
  } else {
    cause = "it waits " + secs(other.stepSeconds - other.lowerBoundSeconds) +
            " a step against " + secs(best.stepSeconds - best.lowerBoundSeconds) +
            formatv(" (pipeline bubble {0:F1}% against {1:F1}%, and "
                    "communication not hidden behind compute)",
                    100 * other.bubbleFraction, 100 * best.bubbleFraction)
                .str();
  }
  return formatv("{0:F1}% slower: {1}; {2}",
                 100 * (other.stepSeconds / best.stepSeconds - 1),
                 knobChanges(best.plan, other.plan), cause)
      .str();
}

std::vector<std::string>
versusSentences(const std::vector<cost::PlanPrediction> &plans,
                const cost::PlanPrediction &recipe) {
  std::vector<std::string> out;
  for (size_t i = 0; i < plans.size(); ++i) {
    std::string name =
        i == 0 ? std::string("the chosen plan") : formatv("alternative {0}", i);
    out.push_back(plans[i].stepSeconds <= recipe.stepSeconds
                      ? name + " beats it: the recipe is " +
                            whyItLost(plans[i], recipe)
                      : name + " loses to it: it is " +
                            whyItLost(recipe, plans[i]));
  }
  return out;
}

/// The JSON of a plan and its prediction, as `compile --json` prints them.
std::pair<json::Object, json::Object>
planJson(const cost::PlanPrediction &p) {
  json::Array stages;
  for (int64_t layers : p.layersPerStage)
    stages.push_back(layers);
  json::Object breakdown;
  for (auto [name, value] : p.memory.items())
    breakdown[std::string(name)] = value;
  const cost::ParallelConfig &k = p.plan;
  json::Array stageRecompute;
  for (int64_t s = 0; s < k.pp; ++s)
    stageRecompute.push_back(
        std::string(cost::recomputeName(k.recomputeOf(s))));
  json::Object plan{
      {"dp", k.dp},
      {"tp", k.tp},
      {"pp", k.pp},
      {"cp", k.cp},
      {"ep", k.ep},
      {"sp", k.sequenceParallel},
      {"zero", k.zero},
      {"microbatch_size", k.microbatchSize},
      {"num_microbatches", p.numMicrobatches},
      {"global_batch", k.globalBatch},
      {"schedule", cost::scheduleName(k.schedule)},
      {"vpp", k.chunks},
      {"recompute", std::string(cost::recomputeName(k.recompute))},
      {"stage_recompute", std::move(stageRecompute)},
      {"precision", std::string(cost::precisionName(k.precision))},
      {"attention", k.fusedAttention ? "fused" : "unfused"},
      {"stages", std::move(stages)}};
  json::Object predicted{
      {"step_time_s", p.stepSeconds},
      {"tflops_per_device", p.tflopsPerDevice},
      {"hw_tflops_per_device", p.hwTflopsPerDevice},
      {"mfu", p.mfu},
      {"peak_memory_bytes", p.peakMemoryBytes},
      {"peak_memory_stage", p.peakMemoryStage},
      {"memory_breakdown", std::move(breakdown)},
      {"bubble_fraction", p.bubbleFraction},
      {"model_flops_per_step", p.modelFlops},
      // Where the time goes, for validation against measured runs: the
      // busiest stage's compute-stream work (the rest of the step is
      // exposed communication and bubble), one layer's forward pass of one
      // microbatch on one rank by kind, and the collectives outside it.
      {"compute_stream_s", p.lowerBoundSeconds},
      {"layer_forward_s",
       json::Object{{"gemm", p.layerGemmSeconds},
                    {"elementwise", p.layerElementwiseSeconds},
                    {"tensor_comm", p.layerTensorCommSeconds}}},
      {"grad_reduce_s", p.gradReduceSeconds},
      {"pipeline_send_s", p.pipelineSendSeconds}};
  return {std::move(plan), std::move(predicted)};
}

void printPrediction(const cost::PlanPrediction &p, raw_ostream &os) {
  os << "plan:         " << cost::planKnobsString(p.plan) << "\n";
  os << "microbatches: " << p.numMicrobatches
         << " per step; layers per stage:";
  for (int64_t layers : p.layersPerStage)
    os << " " << layers;
  os << "\n";
  os << formatv("step time:    {0:F3} s\n", p.stepSeconds);
  // Small rates keep three digits: a CPU rank's 0.0134 TFLOP/s is not 0.0.
  auto rate = [](double tflops) {
    return tflops >= 10   ? formatv("{0:F1}", tflops).str()
           : tflops >= 0.01 ? formatv("{0:F3}", tflops).str()
                           : formatv("{0:F6}", tflops).str();
  };
  os << formatv("throughput:   {0} TFLOP/s per device (model), {1} "
                    "with recomputation; MFU {2:F1}%\n",
                    rate(p.tflopsPerDevice), rate(p.hwTflopsPerDevice),
                    100 * p.mfu);
  os << formatv("bubble:       {0:F1}% of the step\n",
                    100 * p.bubbleFraction);
  os << formatv("memory:       {0:F2} GB on stage {1} (",
                    p.peakMemoryBytes / 1e9, p.peakMemoryStage);
  bool first = true;
  for (auto [name, value] : p.memory.items()) {
    if (name == "total")
      continue;
    os << (first ? "" : ", ") << name << " "
           << formatv("{0:F2}", value / 1e9);
    first = false;
  }
  os << ")\n";
}

json::Object graphPlanJson(const GraphPlanResult &result,
                           const std::string &clusterName) {
  const cost::PlanPrediction *best = &result.best();
  const std::vector<cost::PlanPrediction> &plans = result.plans;
  const std::string &name = result.name;
  const search::GraphWork *bestWork = &result.bestWork;
  int64_t devices = result.devices, blocks = result.blocks;
  auto [planObject, predictedObject] = planJson(*best);
  json::Object out{{"model", name},
                   {"cluster", clusterName},
                   {"devices", devices},
                   {"plan", std::move(planObject)},
                   {"predicted", std::move(predictedObject)},
                   {"search", json::Object{{"time_s", result.searchSeconds},
                                           {"candidates_evaluated", result.candidates},
                                           {"infeasible", result.infeasible},
                                           {"bounded", result.bounded},
                                           {"optimality_gap", result.worstGap},
                                           {"graph_plan", true},
                                           {"residual_blocks", blocks}}}};
  if (bestWork && bestWork->tp > 1) {
    // The intra-operator search's sharding of the plan's tp degree.
    json::Object strategies;
    for (const auto &[strategy, count] : bestWork->tpStrategies)
      strategies[strategy] = count;
    (*out.getObject("search"))["tp_sharding"] = json::Object{
        {"seconds_per_microbatch", bestWork->tpSearchSeconds},
        {"whole_seconds_per_microbatch", bestWork->tpWholeSeconds},
        {"strategies", std::move(strategies)}};
  }
  json::Array top;
  for (const auto &p : plans) {
    auto [po, pr] = planJson(p);
    top.push_back(
        json::Object{{"plan", std::move(po)}, {"predicted", std::move(pr)}});
  }
  out["top_k"] = std::move(top);
  return out;
}

void printGraphPlan(const GraphPlanResult &result,
                    const std::string &clusterName, bool explain,
                    raw_ostream &os) {
  const cost::PlanPrediction *best = &result.best();
  const std::vector<cost::PlanPrediction> &plans = result.plans;
  const std::string &name = result.name;
  const search::GraphWork *bestWork = &result.bestWork;
  int64_t devices = result.devices, blocks = result.blocks;
  double parameters = result.parameters;
  os << "model:        " << name << " ("
         << (parameters >= 1e9 ? formatv("{0:F2}B", parameters / 1e9).str()
                               : formatv("{0:F2}M", parameters / 1e6).str())
         << " parameters; no transformer layers: " << blocks
         << " residual blocks for pipeline stages)\n";
  os << "cluster:      " << clusterName << ", " << devices
         << " devices\n";
  printPrediction(*best, os);
  os << formatv("search:       {0} plans considered (tp x pp x "
                    "microbatch x schedule x ZeRO x recomputation), {1} "
                    "infeasible, {2} ruled out by a bound, in {3:F2} "
                    "s; priced op by op; {4}\n",
                    result.candidates, result.infeasible, result.bounded, result.searchSeconds,
                    result.worstGap > 0
                        ? formatv("gap at most {0:F2}% (the tensor-parallel "
                                  "shardings' ILP)",
                                  100 * result.worstGap)
                              .str()
                        : std::string("optimal within the cost model"));
  if (bestWork && bestWork->tp > 1) {
    // The intra-operator search's sharding, which the lowering runs.
    std::string counts;
    std::vector<std::pair<int64_t, std::string>> byCount;
    for (const auto &[strategy, count] : bestWork->tpStrategies)
      if (strategy != "replicated")
        byCount.push_back({-count, strategy});
    llvm::sort(byCount);
    for (const auto &[count, strategy] : byCount)
      counts += (counts.empty() ? "" : ", ") + strategy + " " +
                std::to_string(-count);
    // A degree that divides no dimension the rules could split.
    if (counts.empty())
      counts = "none, every op runs whole on every device";
    os << formatv("tp sharding:  chosen by the intra-operator search, "
                      "{0:F3} ms a microbatch against {1:F3} ms whole (its "
                      "prices): {2}\n",
                      bestWork->tpSearchSeconds * 1e3,
                      bestWork->tpWholeSeconds * 1e3, counts);
  }
  printAlternatives(plans, os);
  if (explain) {
    os << "why: the best plan of each tensor and pipeline degree, and "
              "what holds it back\n";
    os << formatv("  {0,4} {1,4} {2,5} {3,10} {4,8} {5,8} {6,9}  {7}\n",
                      "tp", "pp", "dp", "step s", "vs best", "bubble",
                      "memory", "plan or reason");
    double memoryCap = result.capped.device.memoryBytes;
    for (auto [tp, pp] : result.degrees) {
      auto key = std::pair(tp, pp);
      auto it = result.bestOfDegree.find(key);
      if (it == result.bestOfDegree.end()) {
        auto named = result.whyNoneOfDegree.find(key);
        std::string why = named != result.whyNoneOfDegree.end() ? named->second
                          : pp > blocks
                              ? "more stages than the " +
                                    std::to_string(blocks) + " residual blocks"
                              : "no microbatch divides a replica's samples";
        os << formatv("  {0,4} {1,4} {2,5} {3,10}  {4}\n", tp, pp,
                          devices / tp / pp, "-", why);
        continue;
      }
      const auto &p = it->second;
      os << formatv("  {0,4} {1,4} {2,5} {3,10:F3} {4,7:F1}% {5,7:F1}% "
                        "{6,8:F0}%  {7}\n",
                        tp, pp, devices / tp / pp, p.stepSeconds,
                        100 * (p.stepSeconds / best->stepSeconds - 1),
                        100 * p.bubbleFraction,
                        memoryCap > 0 ? 100 * p.peakMemoryBytes / memoryCap : 0,
                        cost::planKnobsString(p.plan));
    }
  }
}

json::Object transformerPlanJson(const TransformerReport &r) {
  const cost::PlanPrediction &best = r.plans.front();
  const std::vector<cost::PlanPrediction> &plans = r.plans;
  const cost::PlanSearchResult *search = r.search;
  const cost::Cluster *cluster = &r.cluster;
  auto [planObject, predictedObject] = planJson(best);
  json::Object out{{"model", r.model},
                   {"cluster", cluster->name},
                   {"devices", cluster->numDevices()},
                   {"plan", std::move(planObject)},
                   {"predicted", std::move(predictedObject)}};
  if (search) {
    out["search"] = json::Object{
        {"time_s", search->seconds},
        {"candidates_evaluated", search->candidates},
        {"simulated", search->simulated},
        {"infeasible", search->infeasible},
        {"optimality_gap", search->optimalityGap},
        {"timed_out", search->timedOut}};
    json::Array top;
    for (const auto &p : plans) {
      auto [po, pr] = planJson(p);
      top.push_back(json::Object{{"plan", std::move(po)},
                                 {"predicted", std::move(pr)}});
    }
    out["top_k"] = std::move(top);
  }
  return out;
}

void printTransformerPlan(const TransformerReport &r, bool explain,
                          raw_ostream &os) {
  const cost::PlanPrediction &best = r.plans.front();
  const std::vector<cost::PlanPrediction> &plans = r.plans;
  const cost::PlanSearchResult *search = r.search;
  const cost::Cluster *cluster = &r.cluster;
  double parameters = r.parameters;
  os << "model:        " << r.model << " ("
         << (parameters >= 1e9 ? formatv("{0:F2}B", parameters / 1e9).str()
                               : formatv("{0:F2}M", parameters / 1e6).str())
         << " parameters)\n";
  os << "cluster:      " << cluster->name << ", " << cluster->numDevices()
         << " devices\n";
  printPrediction(best, os);
  if (!search)
    return;
  os << formatv("search:       {0} plans considered, {1} infeasible, {2} "
                    "simulated, {3:F2} s{4}\n",
                    search->candidates, search->infeasible, search->simulated,
                    search->seconds,
                    search->timedOut
                        ? formatv("; stopped at the time limit, optimality "
                                  "gap at most {0:F1}%",
                                  100 * search->optimalityGap)
                              .str()
                        : std::string("; optimal within the cost model"));
  printAlternatives(plans, os);
  if (explain) {
    os << "why: the best plan of each tensor x pipeline x context shape, "
              "and what holds it back\n";
    os << formatv("  {0,3} {1,4} {2,3} {3,10} {4,8} {5,8} {6,9}  {7}\n",
                      "tp", "pp", "cp", "step s", "vs best", "bubble",
                      "memory", "plan or reason");
    for (const auto &shapeInfo : search->shapes) {
      if (!shapeInfo.feasible) {
        os << formatv("  {0,3} {1,4} {2,3} {3,10}  {4}\n", shapeInfo.tp,
                          shapeInfo.pp, shapeInfo.cp, "-", shapeInfo.reason);
        continue;
      }
      const auto &p = shapeInfo.best;
      double memoryCap =
          r.memoryLimit.value_or(cluster->device.memoryBytes);
      os << formatv("  {0,3} {1,4} {2,3} {3,10:F3} {4,7:F1}% {5,7:F1}% "
                        "{6,8:F0}%  {7}\n",
                        shapeInfo.tp, shapeInfo.pp, shapeInfo.cp,
                        p.stepSeconds,
                        100 * (p.stepSeconds / best.stepSeconds - 1),
                        100 * p.bubbleFraction,
                        100 * p.peakMemoryBytes / memoryCap,
                        cost::planKnobsString(p.plan));
    }
  }
}

} // namespace cleave::driver
