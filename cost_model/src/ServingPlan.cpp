//===- ServingPlan.cpp - Planning LLM inference for latency targets -------===//

#include "cleave/cost_model/ServingPlan.h"

#include "cleave/cost_model/Collectives.h"
#include "cleave/cost_model/OperatorCost.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

#include <algorithm>
#include <cmath>

namespace cleave::cost {

namespace {

/// Of the device's memory, what the weights, cache and workspace may use:
/// the rest is the allocator's and the runtime's (vLLM's default
/// gpu_memory_utilization is the same 0.9).
constexpr double kUsableMemory = 0.9;

/// Key/value heads on one device: a tensor-parallel share, or one head
/// replicated where tp exceeds them (as Megatron-LM and vLLM do).
int64_t kvHeadsPerDevice(const TransformerModel &m, int64_t tp) {
  return std::max<int64_t>(1, m.kv() / tp);
}

struct Stage {
  int64_t first = 0, layers = 0;
  bool embedding = false, head = false;
};

/// The pipeline's stages: layers split as evenly as they go, the embedding
/// on the first, the head on the last.
std::vector<Stage> stagesOf(const TransformerModel &m, int64_t pp) {
  std::vector<Stage> stages(pp);
  for (int64_t s = 0, first = 0; s < pp; ++s) {
    stages[s].first = first;
    stages[s].layers = m.layers / pp + (s < m.layers % pp ? 1 : 0);
    first += stages[s].layers;
  }
  stages.front().embedding = true;
  stages.back().head = true;
  return stages;
}

/// Layer `layer`'s weights on one device: an MoE layer holds every
/// expert (no expert parallelism in serving plans yet).
double layerWeights(const TransformerModel &m, int64_t tp, int64_t layer) {
  double h = m.hidden, d = double(m.hidden) / m.heads;
  double q = h * m.heads * d / tp, kv = 2 * h * kvHeadsPerDevice(m, tp) * d;
  double o = m.heads * d * h / tp;
  double mlp = m.mlpParameters() / tp;
  if (m.isMoeLayer(layer))
    mlp = mlp * m.experts + h * m.experts;
  return q + kv + o + mlp + 4 * h;
}

double stageWeights(const TransformerModel &m, const Stage &s, int64_t tp,
                    int64_t pp, DType dtype) {
  double h = m.hidden, V = m.vocab;
  double params = 0;
  for (int64_t l = s.first; l < s.first + s.layers; ++l)
    params += layerWeights(m, tp, l);
  if (s.embedding)
    params += V * h / tp + (m.learnedPositions ? double(m.seq) * h : 0);
  if (s.head && (!m.tiedEmbedding || pp > 1))
    params += V * h / tp;
  return params * dtypeBytes(dtype);
}

/// What one step costs on one stage's device: compute and the
/// tensor-parallel all-reduces (two per layer).
struct StepCost {
  double seconds = 0, commSeconds = 0;
};

/// The attention of some of a step's rows: `queries` rows, each against
/// `keys` keys on average, reading the keys and values of `cachedTokens`
/// tokens. Prompt rows attend causally over their prompt of `promptLen`
/// tokens on tensor cores; decode rows are one query each against their
/// sequence's cache.
struct AttentionRows {
  double queries = 0, keys = 0, cachedTokens = 0;
  bool prompt = false;
  int64_t promptLen = 0;
};

/// A step's rows on a stage: `rows` through every GEMM, norm and
/// all-reduce (the step's shape), the attention of its prompt and decode
/// rows, and the head's logits over `logitRows` (the last stage).
struct StepRows {
  int64_t rows = 0, logitRows = 0;
  AttentionRows prompt, decode;
};

/// `batch` whole prompts of `promptLen` tokens read at once.
StepRows wholePrompts(int64_t batch, int64_t promptLen) {
  StepRows r;
  r.rows = batch * promptLen;
  r.logitRows = batch;
  r.prompt = {double(r.rows), 0.5 * double(promptLen), double(r.rows), true,
              promptLen};
  return r;
}

/// One new token for each of `batch` sequences at `context` positions.
StepRows decodeRows(int64_t batch, int64_t context) {
  StepRows r;
  r.rows = batch;
  r.logitRows = batch;
  r.decode = {double(batch), double(context), double(batch) * context, false,
              0};
  return r;
}

absl::StatusOr<StepCost> stageStep(const TransformerModel &m, const Stage &s,
                                   const Cluster &cluster, int64_t tp,
                                   const StepRows &step, DType dtype,
                                   const Profile *profile) {
  int64_t h = m.hidden, d = m.hidden / m.heads;
  int64_t rows = step.rows;
  int64_t headsDev = m.heads / tp, kvDev = kvHeadsPerDevice(m, tp);
  auto gemm = [&](int64_t n, int64_t k,
                  int64_t m) -> absl::StatusOr<double> {
    absl::StatusOr<OpCost> c =
        estimateGemm(Gemm{m, n, k, 1, dtype}, cluster, profile);
    if (!c.ok())
      return c.status();
    return c->seconds;
  };
  double layer = 0;
  int64_t mlpCols = (m.gatedMlp ? 2 : 1) * m.mlp() / tp;
  for (auto [n, k] : {std::pair<int64_t, int64_t>{(headsDev + 2 * kvDev) * d, h},
                      {h, headsDev * d}}) {
    absl::StatusOr<double> t = gemm(n, k, rows);
    if (!t.ok())
      return t.status();
    layer += *t;
  }
  // The MLP: a dense layer's two (or three) GEMMs over the rows; an MoE
  // layer's over each expert the rows' top-k choices touch (all of them
  // once the batch is large), each reading its weights.
  auto mlp = [&](int64_t tokens) -> absl::StatusOr<double> {
    absl::StatusOr<double> up = gemm(mlpCols, h, tokens);
    if (!up.ok())
      return up.status();
    absl::StatusOr<double> down = gemm(h, m.mlp() / tp, tokens);
    if (!down.ok())
      return down.status();
    return *up + *down;
  };
  absl::StatusOr<double> dense = mlp(rows);
  if (!dense.ok())
    return dense.status();
  double moe = 0;
  int64_t moeLayers = 0;
  for (int64_t l = s.first; l < s.first + s.layers; ++l)
    moeLayers += m.isMoeLayer(l) ? 1 : 0;
  if (moeLayers > 0) {
    int64_t routed = rows * std::max<int64_t>(1, m.topK);
    int64_t touched = std::min<int64_t>(m.experts, routed);
    absl::StatusOr<double> each = mlp((routed + touched - 1) / touched);
    if (!each.ok())
      return each.status();
    moe = touched * *each;
  }
  // Attention: prompt rows against their prompt (causal, on tensor
  // cores), decode rows each against its whole cache.
  for (const AttentionRows &part : {step.prompt, step.decode}) {
    if (part.queries <= 0)
      continue;
    GenericOp attention;
    attention.dtype = dtype;
    attention.flops = 4.0 * headsDev * part.queries * part.keys * d;
    attention.bytesRead =
        part.cachedTokens * 2 * kvDev * d * dtypeBytes(dtype) +
        part.queries * headsDev * d * dtypeBytes(dtype);
    attention.bytesWritten = part.queries * headsDev * d * dtypeBytes(dtype);
    attention.tensorCores = part.prompt;
    // The kernel's rate grows with the queries it tiles, up to a prompt.
    attention.attentionSeq =
        part.prompt ? std::min(part.queries, double(part.promptLen)) : 0;
    attention.attentionHeadDim = d;
    attention.attentionCausal = part.prompt && m.causal;
    absl::StatusOr<OpCost> a = estimateGeneric(attention, cluster, profile);
    if (!a.ok())
      return a.status();
    layer += a->seconds;
  }
  // Norms, residuals, activation: memory-bound passes over the rows.
  GenericOp elementwise;
  elementwise.dtype = dtype;
  elementwise.flops = 10.0 * rows * h;
  elementwise.bytesRead = 6.0 * rows * h * dtypeBytes(dtype) +
                          2.0 * rows * mlpCols * dtypeBytes(dtype);
  elementwise.bytesWritten = elementwise.bytesRead / 2;
  absl::StatusOr<OpCost> e = estimateGeneric(elementwise, cluster, profile);
  if (!e.ok())
    return e.status();
  layer += e->seconds;
  StepCost out;
  if (tp > 1) {
    absl::StatusOr<CollectiveCost> ar = estimateCollective(
        Collective::AllReduce, double(rows) * h * dtypeBytes(dtype),
        Group::strided(0, tp), cluster, profile);
    if (!ar.ok())
      return ar.status();
    out.commSeconds = 2 * s.layers * ar->seconds;
  }
  out.seconds = s.layers * layer + (s.layers - moeLayers) * *dense +
                moeLayers * moe + out.commSeconds;
  if (s.head && step.logitRows > 0) {
    // Logits of the rows that yield a token (a prompt's last).
    absl::StatusOr<OpCost> logits = estimateGemm(
        Gemm{step.logitRows, std::max<int64_t>(1, m.vocab / tp), h, 1, dtype},
        cluster, profile);
    if (!logits.ok())
      return logits.status();
    out.seconds += logits->seconds;
  }
  return out;
}

/// A pipeline hop of `bytes` from one stage to the next (its first ranks:
/// a node apart where the stages span nodes).
absl::StatusOr<double> hop(const Cluster &cluster, int64_t tp, double bytes,
                           const Profile *profile) {
  absl::StatusOr<CollectiveCost> c = estimateCollective(
      Collective::SendRecv, bytes, Group{{0, tp}}, cluster, profile);
  if (!c.ok())
    return c.status();
  return c->seconds;
}

std::string formatBytes(double bytes) {
  return absl::StrFormat("%.2f GB", bytes / 1e9);
}

} // namespace

double kvCacheBytesPerToken(const TransformerModel &model,
                            int64_t layersOnStage, int64_t tp, DType dtype) {
  int64_t d = model.hidden / model.heads;
  return double(layersOnStage) * 2 * kvHeadsPerDevice(model, tp) * d *
         dtypeBytes(dtype);
}

absl::StatusOr<ServingPrediction>
scoreServingPlan(const TransformerModel &m, const Cluster &cluster,
                 const ServingWorkload &w, int64_t tp, int64_t pp,
                 const Profile *profile) {
  int64_t devices = cluster.numDevices();
  if (tp < 1 || pp < 1 || devices % (tp * pp))
    return absl::InvalidArgumentError(absl::StrCat(
        "tp=", tp, " x pp=", pp, " does not divide the ", devices,
        " devices"));
  if (m.heads % tp)
    return absl::InvalidArgumentError(
        absl::StrCat("tp=", tp, " does not divide the ", m.heads, " heads"));
  if (pp > m.layers)
    return absl::InvalidArgumentError(
        absl::StrCat("pp=", pp, " exceeds the ", m.layers, " layers"));
  if (w.promptLen < 1 || w.outputLen < 1)
    return absl::InvalidArgumentError("prompt and output lengths must be "
                                      "positive");
  ServingPrediction out;
  out.tp = tp;
  out.pp = pp;
  out.replicas = devices / (tp * pp);
  std::vector<Stage> stages = stagesOf(m, pp);
  int64_t context = w.promptLen + w.outputLen;
  bool continuous = w.batching == Batching::Continuous;
  // Memory: the fullest stage.
  double usable = kUsableMemory * cluster.device.memoryBytes;
  out.deviceBytes = cluster.device.memoryBytes;
  int64_t maxBatch = INT64_MAX;
  double workspacePerRow = 0, logitsPerRow = 0;
  for (const Stage &s : stages) {
    double weights = stageWeights(m, s, tp, pp, w.precision);
    double perSequence =
        kvCacheBytesPerToken(m, s.layers, tp, w.precision) * context;
    // Workspace per row of a step: its widest activations (the MLP's,
    // twice for gated ones) and the layer's input and output. On the last
    // stage, per row that yields a token, its logits over the whole
    // vocabulary, gathered in fp32 for sampling (Llama 3's 128256: 0.5 MB).
    double perRow =
        ((m.gatedMlp ? 2 : 1) * double(m.mlp()) / tp + 3.0 * m.hidden) *
        dtypeBytes(w.precision);
    double perLogits = s.head ? 4.0 * double(m.vocab) : 0.0;
    double room = usable - weights;
    // Static batching reads the whole batch's prompts at once (logits of
    // their last rows); a continuous step has a row per sequence (or
    // --step-tokens rows), every row's logits computed; a decode pool's
    // sequences arrive prefilled, a row each.
    double fits =
        w.batching == Batching::Static
            ? room / (perSequence + w.promptLen * perRow + perLogits)
        : continuous && w.stepTokens > 0
            ? (room - w.stepTokens * (perRow + perLogits)) / perSequence
            : room / (perSequence + perRow + perLogits);
    int64_t whole = fits > 0 ? int64_t(fits) : 0;
    if (whole < maxBatch) {
      maxBatch = whole;
      out.weightBytes = weights;
      out.cacheBytesPerSequence = perSequence;
      workspacePerRow = perRow;
      logitsPerRow = perLogits;
    }
  }
  out.maxBatch = maxBatch;
  int64_t batch = w.batch > 0 ? w.batch : std::max<int64_t>(1, maxBatch);
  out.batch = batch;
  out.cacheBytes = out.cacheBytesPerSequence * batch;
  out.stepRows = w.batching == Batching::Static ? batch * w.promptLen
                 : continuous ? std::max(batch, w.stepTokens)
                              : batch;
  out.workspaceBytes =
      workspacePerRow * out.stepRows +
      logitsPerRow * (w.batching == Batching::Static ? batch : out.stepRows);
  out.memoryBytes = out.weightBytes + out.cacheBytes + out.workspaceBytes;
  if (batch > maxBatch)
    return absl::ResourceExhaustedError(absl::StrFormat(
        "memory: tp=%d x pp=%d holds %d sequence(s) of %d tokens a replica "
        "(weights %s, cache %s a sequence, step workspace %s for %d rows, "
        "of %s usable of the device's %s)",
        tp, pp, std::max<int64_t>(0, maxBatch), context,
        formatBytes(out.weightBytes), formatBytes(out.cacheBytesPerSequence),
        formatBytes(out.workspaceBytes), out.stepRows, formatBytes(usable),
        formatBytes(cluster.device.memoryBytes)));
  double hidden = double(m.hidden) * dtypeBytes(w.precision);
  // A step whose rows go in pp groups, one per stage at a time: a round
  // advances every group by pp stage times and pp hops (the last back to
  // the first stage for the next token), bound by the slowest stage.
  auto round = [&](const StepRows &group) -> absl::StatusOr<StepCost> {
    StepCost r;
    for (const Stage &s : stages) {
      absl::StatusOr<StepCost> c =
          stageStep(m, s, cluster, tp, group, w.precision, profile);
      if (!c.ok())
        return c.status();
      if (c->seconds > r.seconds)
        r = *c;
    }
    r.seconds *= pp;
    r.commSeconds *= pp;
    if (pp > 1) {
      absl::StatusOr<double> send =
          hop(cluster, tp, double(group.rows) * hidden, profile);
      if (!send.ok())
        return send.status();
      r.seconds += pp * *send;
      r.commSeconds += pp * *send;
    }
    return r;
  };
  int64_t mean = w.promptLen + (w.outputLen + 1) / 2;
  int64_t group = std::max<int64_t>(1, (batch + pp - 1) / pp);
  if (!continuous) {
    absl::StatusOr<StepCost> decode = round(decodeRows(group, mean));
    if (!decode.ok())
      return decode.status();
    out.tpotSeconds = decode->seconds;
    out.tpotCommSeconds = decode->commSeconds;
    out.decodeRowsPerStep = double(batch);
  }
  if (w.batching == Batching::DecodeOnly) {
    out.requestsPerSecond =
        out.replicas * double(batch) / (w.outputLen * out.tpotSeconds);
  } else if (w.batching == Batching::Static) {
    // The batch's prompts through every stage in turn, then `output`
    // decode steps.
    double prefill = 0;
    for (const Stage &s : stages) {
      absl::StatusOr<StepCost> c =
          stageStep(m, s, cluster, tp, wholePrompts(batch, w.promptLen),
                    w.precision, profile);
      if (!c.ok())
        return c.status();
      prefill += c->seconds;
    }
    if (pp > 1) {
      absl::StatusOr<double> send =
          hop(cluster, tp, double(batch) * w.promptLen * hidden, profile);
      if (!send.ok())
        return send.status();
      prefill += (pp - 1) * *send;
    }
    out.ttftSeconds = prefill;
    out.prefillSteps = 1;
    out.promptRowsPerStep = double(batch) * w.promptLen;
    double request = out.ttftSeconds + w.outputLen * out.tpotSeconds;
    out.requestsPerSecond = out.replicas * double(batch) / request;
  } else {
    // Chunked prefill, as the runtime schedules it (Generate.cpp;
    // Sarathi-Serve, vLLM): every step computes its rows; each running
    // sequence takes one, and the rows left read prompts. In the steady
    // state a request takes P + O - 1 rows (its prompt, whose last row
    // yields the first token, then one a token) and holds its sequence's
    // place for the O - 1 decode steps and the steps its prompt is read
    // in, on the rows the decoding sequences leave. Requests enter at the
    // rate `lambda` a step that the rows (R / (P + O - 1)) and the
    // sequences (B over a request's steps, Little's law) both allow.
    double P = double(w.promptLen), O = double(w.outputLen);
    double R = double(out.stepRows), B = double(batch);
    auto free = [&](double lambda) {
      return std::max(1.0, R - lambda * (O - 1));
    };
    auto held = [&](double lambda) {
      return lambda * ((O - 1) + P / free(lambda));
    };
    double lambda = R / (P + O - 1);
    if (held(lambda) > B) {
      double lo = 0, hi = lambda; // held() grows with lambda
      for (int i = 0; i < 60; ++i) {
        double mid = 0.5 * (lo + hi);
        (held(mid) <= B ? lo : hi) = mid;
      }
      lambda = lo;
    }
    out.decodeRowsPerStep = lambda * (O - 1);
    out.promptRowsPerStep = lambda * P;
    StepRows rows;
    rows.rows = (out.stepRows + pp - 1) / pp;
    rows.logitRows = rows.rows; // the step's head computes every row's
    double share = 1.0 / pp;
    rows.decode = {out.decodeRowsPerStep * share, double(mean),
                   out.decodeRowsPerStep * share * mean, false, 0};
    // A prompt row attends to its prompt's rows before it: half the
    // prompt on average, read from the cache.
    rows.prompt = {out.promptRowsPerStep * share, 0.5 * P,
                   (out.promptRowsPerStep + 0.5 * P *
                                                std::max(1.0, lambda)) *
                       share,
                   true, w.promptLen};
    absl::StatusOr<StepCost> step = round(rows);
    if (!step.ok())
      return step.status();
    out.tpotSeconds = step->seconds;
    out.tpotCommSeconds = step->commSeconds;
    // A new request waits half a step on average, then its prompt is read
    // on the rows the decoding sequences leave.
    out.prefillSteps = static_cast<int64_t>(std::ceil(P / free(lambda)));
    out.ttftSeconds = (0.5 + double(out.prefillSteps)) * out.tpotSeconds;
    out.requestsPerSecond = out.replicas * lambda / out.tpotSeconds;
  }
  out.outputTokensPerSecond = out.requestsPerSecond * w.outputLen;
  return out;
}

absl::StatusOr<ServingSearchResult>
searchServingPlans(const TransformerModel &m, const Cluster &cluster,
                   const ServingWorkload &w, int topK,
                   const Profile *profile) {
  ServingSearchResult result;
  int64_t devices = cluster.numDevices();
  std::vector<ServingPrediction> feasible;
  // The limit each shape missed by least, for the error.
  std::string closest;
  double closestRatio = INFINITY;
  for (int64_t tp = 1; tp <= cluster.devicesPerNode; ++tp) {
    if (cluster.devicesPerNode % tp || m.heads % tp || devices % tp ||
        (w.fixedTp && tp != w.fixedTp))
      continue;
    for (int64_t pp = 1; pp <= m.layers && tp * pp <= devices; ++pp) {
      if (devices % (tp * pp) || (w.fixedPp && pp != w.fixedPp))
        continue;
      ServingSearchResult::Shape shape;
      shape.tp = tp;
      shape.pp = pp;
      // Memory's bound on the batch first.
      ServingWorkload probe = w;
      probe.batch = 0;
      absl::StatusOr<ServingPrediction> top =
          scoreServingPlan(m, cluster, probe, tp, pp, profile);
      if (!top.ok() && top.status().code() != absl::StatusCode::kResourceExhausted) {
        shape.why = std::string(top.status().message());
        result.shapes.push_back(std::move(shape));
        continue;
      }
      // The batch: the one fixed, or the largest within the targets and
      // memory's bound (the throughput grows with it).
      std::optional<ServingPrediction> best;
      std::string why;
      // One batch at one step size: whether it meets the targets.
      auto tryRows = [&](int64_t b, int64_t rows) -> bool {
        ServingWorkload at = w;
        at.batch = b;
        at.stepTokens = rows;
        ++result.candidates;
        absl::StatusOr<ServingPrediction> p =
            scoreServingPlan(m, cluster, at, tp, pp, profile);
        if (!p.ok()) {
          why = std::string(p.status().message());
          if (closestRatio > 1e9) {
            closest = why;
            closestRatio = 1e9;
          }
          return false;
        }
        double ratio = 0;
        std::string missed;
        if (w.ttft > 0 && p->ttftSeconds > w.ttft) {
          ratio = p->ttftSeconds / w.ttft;
          missed = absl::StrFormat("TTFT %.4g s > %.4g s", p->ttftSeconds,
                                   w.ttft);
        }
        if (w.tpot > 0 && p->tpotSeconds > w.tpot &&
            p->tpotSeconds / w.tpot > ratio) {
          ratio = p->tpotSeconds / w.tpot;
          missed = absl::StrFormat(
              "TPOT %.4g s > %.4g s (%.0f%% of it the tensor-parallel "
              "all-reduces and pipeline sends)",
              p->tpotSeconds, w.tpot,
              100 * p->tpotCommSeconds / p->tpotSeconds);
        }
        if (!missed.empty()) {
          why = absl::StrFormat("tp=%d x pp=%d, batch %d: %s", tp, pp, b,
                                missed);
          if (ratio < closestRatio) {
            closestRatio = ratio;
            closest = why;
          }
          return false;
        }
        if (!best || p->requestsPerSecond > best->requestsPerSecond)
          best = *p;
        return true;
      };
      // A batch at the step sizes the search tries: those given (a fixed
      // batch alone keeps a row per sequence), or under continuous
      // batching one row per sequence and then twice as many while the
      // rows beyond the sequences could still hold a prompt: a wider step
      // reads a prompt in fewer steps and reads the weights once for more
      // rows, but takes longer (vLLM's max_num_batched_tokens).
      auto tryBatch = [&](int64_t b) -> bool {
        bool met = tryRows(b, w.stepTokens);
        if (w.batching == Batching::Continuous && w.stepTokens == 0 &&
            w.batch == 0)
          for (int64_t rows = 2 * b; rows <= b + w.promptLen; rows *= 2)
            met = tryRows(b, rows) || met;
        return met;
      };
      if (w.batch > 0) {
        tryBatch(w.batch);
      } else if (!top.ok()) {
        tryBatch(1); // for its memory error
      } else {
        // Under chunked prefill a small batch leaves few rows for prompts,
        // so the TTFT falls as the batch grows before the TPOT bounds it:
        // the batches within the targets are a range. Scan in steps of a
        // quarter for its top, then bisect to the batch.
        int64_t hi = top->maxBatch;
        if (w.batching == Batching::Continuous && w.stepTokens > 0)
          hi = std::min(hi, w.stepTokens);
        int64_t lo = 0, above = hi + 1;
        for (int64_t b = 1; b <= hi; b = std::max(b + 1, b + b / 4)) {
          if (tryBatch(b)) {
            lo = b;
          } else if (lo > 0) {
            above = b;
            break;
          }
        }
        for (int64_t up = above - 1; lo > 0 && lo < up;) {
          int64_t mid = lo + (up - lo + 1) / 2;
          if (tryBatch(mid))
            lo = mid;
          else
            up = mid - 1;
        }
      }
      shape.plan = best;
      shape.why = best ? "" : why;
      if (best)
        feasible.push_back(*best);
      result.shapes.push_back(std::move(shape));
    }
  }
  if (feasible.empty())
    return absl::FailedPreconditionError(
        closest.empty()
            ? std::string("no tensor and pipeline degrees fit the devices")
            : absl::StrCat("no plan meets the targets; the closest: ",
                           closest));
  std::sort(feasible.begin(), feasible.end(),
            [](const ServingPrediction &a, const ServingPrediction &b) {
              return a.requestsPerSecond > b.requestsPerSecond;
            });
  if (feasible.size() > size_t(std::max(1, topK)))
    feasible.resize(std::max(1, topK));
  result.best = std::move(feasible);
  return result;
}

absl::StatusOr<DisaggregatedPrediction>
searchDisaggregatedPlans(const TransformerModel &m, const Cluster &cluster,
                         const ServingWorkload &w, const Profile *profile) {
  int64_t devices = cluster.numDevices();
  std::vector<std::pair<int64_t, int64_t>> shapes;
  for (int64_t tp = 1; tp <= cluster.devicesPerNode; ++tp)
    if (cluster.devicesPerNode % tp == 0 && m.heads % tp == 0)
      for (int64_t pp = 1; pp <= m.layers && tp * pp < devices; ++pp)
        shapes.push_back({tp, pp});
  // A pool's shape priced as one replica on a cluster of its own size.
  auto alone = [&](int64_t tp, int64_t pp) {
    Cluster c = cluster;
    if (tp * pp <= c.devicesPerNode) {
      c.nodes = 1;
      c.devicesPerNode = tp * pp;
    } else {
      c.nodes = tp * pp / c.devicesPerNode;
    }
    return c;
  };
  // Prefill replicas: one prompt at a time, their stages pipelined.
  struct Prefill {
    int64_t tp, pp;
    ServingPrediction p;
    double capacity;
  };
  std::vector<Prefill> prefills;
  std::string closest, prefillMiss, decodeMiss;
  double fastestPrefill = INFINITY, fastestDecode = INFINITY;
  for (auto [tp, pp] : shapes) {
    if ((tp * pp) % cluster.devicesPerNode && tp * pp > cluster.devicesPerNode)
      continue;
    ServingWorkload one = w;
    one.batch = 1;
    one.batching = Batching::Static;
    absl::StatusOr<ServingPrediction> p =
        scoreServingPlan(m, alone(tp, pp), one, tp, pp, profile);
    if (!p.ok()) {
      closest = std::string(p.status().message());
      continue;
    }
    if (w.ttft > 0 && p->ttftSeconds > w.ttft) {
      if (p->ttftSeconds < fastestPrefill) {
        fastestPrefill = p->ttftSeconds;
        prefillMiss = absl::StrFormat(
            "the fastest prefill, tp=%d x pp=%d, takes TTFT %.4g s > %.4g s",
            tp, pp, p->ttftSeconds, w.ttft);
      }
      continue;
    }
    prefills.push_back({tp, pp, *p, double(pp) / p->ttftSeconds});
  }
  // Decode replicas: the largest batch memory and the TPOT target allow.
  struct Decode {
    int64_t tp, pp;
    ServingPrediction p;
  };
  std::vector<Decode> decodes;
  for (auto [tp, pp] : shapes) {
    if ((tp * pp) % cluster.devicesPerNode && tp * pp > cluster.devicesPerNode)
      continue;
    ServingWorkload at = w;
    at.batching = Batching::DecodeOnly;
    Cluster c = alone(tp, pp);
    auto fits = [&](int64_t b) -> std::optional<ServingPrediction> {
      at.batch = b;
      absl::StatusOr<ServingPrediction> p =
          scoreServingPlan(m, c, at, tp, pp, profile);
      if (!p.ok()) {
        closest = std::string(p.status().message());
        return std::nullopt;
      }
      if (w.tpot > 0 && p->tpotSeconds > w.tpot) {
        if (b == 1 && p->tpotSeconds < fastestDecode) {
          fastestDecode = p->tpotSeconds;
          decodeMiss = absl::StrFormat(
              "the fastest decode, tp=%d x pp=%d at batch 1, takes TPOT %.4g "
              "s > %.4g s",
              tp, pp, p->tpotSeconds, w.tpot);
        }
        return std::nullopt;
      }
      return *p;
    };
    std::optional<ServingPrediction> best = fits(1);
    if (!best)
      continue;
    int64_t lo = 1, hi = best->maxBatch;
    while (lo < hi) {
      int64_t mid = lo + (hi - lo + 1) / 2;
      if (std::optional<ServingPrediction> p = fits(mid)) {
        best = p;
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    decodes.push_back({tp, pp, *best});
  }
  // The cache of one prompt, from a prefill device to a decode device (a
  // node apart where the cluster has several).
  double cacheBytes =
      kvCacheBytesPerToken(m, m.layers, 1, w.precision) * w.promptLen;
  absl::StatusOr<CollectiveCost> transfer = estimateCollective(
      Collective::SendRecv, cacheBytes, Group{{0, devices - 1}}, cluster,
      profile);
  if (!transfer.ok())
    return transfer.status();
  std::optional<DisaggregatedPrediction> best;
  for (const Prefill &p : prefills)
    for (const Decode &d : decodes) {
      int64_t ps = p.tp * p.pp, ds = d.tp * d.pp;
      for (int64_t np = 1; np * ps < devices; ++np) {
        int64_t rest = devices - np * ps;
        if (rest % ds)
          continue;
        DisaggregatedPrediction r;
        r.prefill = p.p;
        r.decode = d.p;
        r.prefillReplicas = np;
        r.decodeReplicas = rest / ds;
        r.transferSeconds = transfer->seconds;
        r.tpotSeconds = d.p.tpotSeconds;
        r.ttftSeconds = p.p.ttftSeconds + transfer->seconds +
                        0.5 * d.p.tpotSeconds;
        if (w.ttft > 0 && r.ttftSeconds > w.ttft)
          continue;
        r.prefillCapacity = np * p.capacity;
        r.decodeCapacity = r.decodeReplicas * d.p.requestsPerSecond;
        r.requestsPerSecond = std::min(r.prefillCapacity, r.decodeCapacity);
        r.outputTokensPerSecond = r.requestsPerSecond * w.outputLen;
        if (!best || r.requestsPerSecond > best->requestsPerSecond)
          best = r;
      }
    }
  if (!best) {
    std::string why = prefills.empty() && !prefillMiss.empty() ? prefillMiss
                      : decodes.empty() && !decodeMiss.empty() ? decodeMiss
                      : prefills.empty() || decodes.empty()
                          ? closest
                          : std::string("the prefill, the cache transfer and "
                                        "half a decode step exceed --ttft");
    return absl::FailedPreconditionError(
        absl::StrCat("no split into prefill and decode pools meets the "
                     "targets: ",
                     why));
  }
  return *best;
}

} // namespace cleave::cost
