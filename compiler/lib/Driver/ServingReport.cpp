//===- ServingReport.cpp - What `cleave compile --serve` prints -----------===//

#include "cleave/Driver/ServingReport.h"

#include "cleave/cost_model/PlanKnobs.h"

#include "absl/strings/str_format.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace llvm;

namespace cleave::driver {

namespace {

std::string planText(const cost::ServingPrediction &p) {
  // A continuous batch's step wider than a row per sequence (static
  // batching's prefill reads every prompt row at once: not a step size).
  std::string rows =
      p.stepRows > p.batch && p.promptRowsPerStep < double(p.stepRows)
          ? formatv(", {0} rows a step", p.stepRows).str()
          : "";
  return formatv("tp={0},pp={1} x {2} replica(s), batch {3}{4}", p.tp, p.pp,
                 p.replicas, p.batch, rows)
      .str();
}

json::Object predictionJson(const cost::ServingPrediction &p) {
  return json::Object{{"tp", p.tp},
                      {"pp", p.pp},
                      {"replicas", p.replicas},
                      {"batch", p.batch},
                      {"max_batch", p.maxBatch},
                      {"ttft_s", p.ttftSeconds},
                      {"tpot_s", p.tpotSeconds},
                      {"tpot_comm_s", p.tpotCommSeconds},
                      {"step_rows", p.stepRows},
                      {"decode_rows_per_step", p.decodeRowsPerStep},
                      {"prompt_rows_per_step", p.promptRowsPerStep},
                      {"prefill_steps", p.prefillSteps},
                      {"requests_per_s", p.requestsPerSecond},
                      {"output_tokens_per_s", p.outputTokensPerSecond},
                      {"weight_bytes", p.weightBytes},
                      {"kv_cache_bytes", p.cacheBytes},
                      {"kv_cache_bytes_per_sequence", p.cacheBytesPerSequence},
                      {"workspace_bytes", p.workspaceBytes},
                      {"memory_bytes", p.memoryBytes},
                      {"device_memory_bytes", p.deviceBytes}};
}

/// The model, cluster and workload, as both plans' JSON begin.
json::Object header(const cost::TransformerModel &model,
                    const cost::Cluster &cluster,
                    const cost::ServingWorkload &w) {
  return json::Object{
      {"model", model.name},
      {"cluster", cluster.name},
      {"devices", cluster.numDevices()},
      {"workload",
       json::Object{
           {"prompt_len", w.promptLen},
           {"output_len", w.outputLen},
           {"ttft_target_s", w.ttft},
           {"tpot_target_s", w.tpot},
           {"batching", w.disaggregated ? "separate pools"
                        : w.batching == cost::Batching::Static
                            ? "static"
                            : "continuous"},
           {"precision", std::string(cost::precisionName(w.precision))}}}};
}

/// The model, cluster and workload lines both plans' text begins with.
void printHeader(const cost::TransformerModel &model,
                 const cost::Cluster &cluster, const cost::ServingWorkload &w,
                 const char *batching, raw_ostream &out) {
  out << formatv("model:        {0} ({1:F2}B parameters)\n", model.name,
                 model.parameters() / 1e9);
  out << formatv("cluster:      {0}, {1} devices\n", cluster.name,
                 cluster.numDevices());
  out << formatv("workload:     prompt {0} tokens, output {1} tokens, {2}, "
                 "{3}\n",
                 w.promptLen, w.outputLen, cost::precisionName(w.precision),
                 batching);
}

/// " (target 2 s)" where a target was given.
std::string target(double seconds) {
  return seconds > 0 ? absl::StrFormat(" (target %g s)", seconds) : "";
}

} // namespace

void printServingPlan(const cost::ServingSearchResult &found,
                      const cost::TransformerModel &model,
                      const cost::Cluster &cluster,
                      const cost::ServingWorkload &w, bool explain,
                      raw_ostream &out) {
  const cost::ServingPrediction &best = found.best.front();
  printHeader(model, cluster, w,
              w.batching == cost::Batching::Static ? "static batching"
                                                   : "continuous batching",
              out);
  out << "serving plan: " << planText(best) << "\n";
  out << formatv("latency:      TTFT {0:F4} s{1}, TPOT {2:F4} s{3} ({4:F0}% "
                 "of it tensor-parallel all-reduces and pipeline sends)\n",
                 best.ttftSeconds, target(w.ttft), best.tpotSeconds,
                 target(w.tpot),
                 100 * best.tpotCommSeconds /
                     std::max(best.tpotSeconds, 1e-30));
  if (w.batching == cost::Batching::Continuous)
    out << formatv("step:         {0} rows: {1:F1} decoding sequences' and "
                   "{2:F1} prompt rows on average; a prompt is read in {3} "
                   "step(s)\n",
                   best.stepRows, best.decodeRowsPerStep,
                   best.promptRowsPerStep, best.prefillSteps);
  out << formatv("throughput:   {0:F3} requests/s, {1:F0} output tokens/s\n",
                 best.requestsPerSecond, best.outputTokensPerSecond);
  out << formatv("memory:       {0:F2} GB a device: weights {1:F2}, KV cache "
                 "{2:F2} ({3:F3} a sequence), step workspace {4:F2}; a "
                 "replica holds {5} sequence(s) at most, of {6:F2} GB\n",
                 best.memoryBytes / 1e9, best.weightBytes / 1e9,
                 best.cacheBytes / 1e9, best.cacheBytesPerSequence / 1e9,
                 best.workspaceBytes / 1e9, best.maxBatch,
                 best.deviceBytes / 1e9);
  out << formatv("search:       {0} plans of {1} tensor x pipeline shapes\n",
                 found.candidates, found.shapes.size());
  for (size_t i = 1; i < found.best.size(); ++i)
    out << formatv("alternative {0}: {1}: {2:F3} requests/s, TTFT {3:F4} s, "
                   "TPOT {4:F4} s\n",
                   i, planText(found.best[i]), found.best[i].requestsPerSecond,
                   found.best[i].ttftSeconds, found.best[i].tpotSeconds);
  if (!explain)
    return;
  for (const auto &s : found.shapes)
    out << formatv("  tp={0} pp={1}: {2}\n", s.tp, s.pp,
                   s.plan ? formatv("{0:F3} requests/s, batch {1}, TTFT "
                                    "{2:F4} s, TPOT {3:F4} s",
                                    s.plan->requestsPerSecond, s.plan->batch,
                                    s.plan->ttftSeconds, s.plan->tpotSeconds)
                                .str()
                          : s.why);
}

json::Object servingPlanJson(const cost::ServingSearchResult &found,
                             const cost::TransformerModel &model,
                             const cost::Cluster &cluster,
                             const cost::ServingWorkload &w, bool explain) {
  json::Array plans;
  for (const cost::ServingPrediction &p : found.best)
    plans.push_back(predictionJson(p));
  json::Object object = header(model, cluster, w);
  object["plan"] = predictionJson(found.best.front());
  object["top_k"] = std::move(plans);
  object["candidates"] = found.candidates;
  if (explain) {
    json::Array shapes;
    for (const auto &s : found.shapes) {
      json::Object o{{"tp", s.tp}, {"pp", s.pp}};
      if (s.plan)
        o["plan"] = predictionJson(*s.plan);
      else
        o["why"] = s.why;
      shapes.push_back(std::move(o));
    }
    object["shapes"] = std::move(shapes);
  }
  return object;
}

void printDisaggregatedPlan(const cost::DisaggregatedPrediction &p,
                            const cost::TransformerModel &model,
                            const cost::Cluster &cluster,
                            const cost::ServingWorkload &w, raw_ostream &out) {
  printHeader(model, cluster, w, "separate prefill and decode pools", out);
  out << formatv("prefill pool: tp={0},pp={1} x {2} replica(s), one prompt "
                 "at a time: {3:F3} requests/s\n",
                 p.prefill.tp, p.prefill.pp, p.prefillReplicas,
                 p.prefillCapacity);
  out << formatv("decode pool:  tp={0},pp={1} x {2} replica(s), batch {3}: "
                 "{4:F3} requests/s\n",
                 p.decode.tp, p.decode.pp, p.decodeReplicas, p.decode.batch,
                 p.decodeCapacity);
  out << formatv("latency:      TTFT {0:F4} s{1} (prefill {2:F4} s, cache "
                 "transfer {3:F4} s), TPOT {4:F4} s{5}\n",
                 p.ttftSeconds, target(w.ttft), p.prefill.ttftSeconds,
                 p.transferSeconds, p.tpotSeconds, target(w.tpot));
  out << formatv("throughput:   {0:F3} requests/s, {1:F0} output tokens/s "
                 "(the {2} pool bounds it)\n",
                 p.requestsPerSecond, p.outputTokensPerSecond,
                 p.prefillCapacity < p.decodeCapacity ? "prefill" : "decode");
  out << formatv("memory:       decode device {0:F2} GB (weights {1:F2}, KV "
                 "cache {2:F2}); prefill device {3:F2} GB, of {4:F2} GB\n",
                 p.decode.memoryBytes / 1e9, p.decode.weightBytes / 1e9,
                 p.decode.cacheBytes / 1e9, p.prefill.memoryBytes / 1e9,
                 p.decode.deviceBytes / 1e9);
}

json::Object disaggregatedPlanJson(const cost::DisaggregatedPrediction &p,
                                   const cost::TransformerModel &model,
                                   const cost::Cluster &cluster,
                                   const cost::ServingWorkload &w) {
  json::Object prefill = predictionJson(p.prefill);
  prefill["replicas"] = p.prefillReplicas;
  prefill["requests_per_s"] = p.prefillCapacity;
  json::Object decode = predictionJson(p.decode);
  decode["replicas"] = p.decodeReplicas;
  decode["requests_per_s"] = p.decodeCapacity;
  json::Object object = header(model, cluster, w);
  object["prefill_pool"] = std::move(prefill);
  object["decode_pool"] = std::move(decode);
  object["ttft_s"] = p.ttftSeconds;
  object["tpot_s"] = p.tpotSeconds;
  object["transfer_s"] = p.transferSeconds;
  object["requests_per_s"] = p.requestsPerSecond;
  object["output_tokens_per_s"] = p.outputTokensPerSecond;
  return object;
}

} // namespace cleave::driver
