//===- Memory.cpp - Per-device memory of transformer training -------------===//

#include "cleave/cost_model/Memory.h"
#include "cleave/cost_model/PipelineSchedule.h"
#include "Strings.h"

#include <algorithm>
#include <cmath>

namespace cleave::cost {

std::string_view pipelineScheduleName(PipelineSchedule schedule) {
  switch (schedule) {
  case PipelineSchedule::GPipe:
    return "gpipe";
  case PipelineSchedule::OneFOneB:
    return "1f1b";
  case PipelineSchedule::Interleaved1F1B:
    return "interleaved-1f1b";
  case PipelineSchedule::ZeroBubbleH1:
    return "zb-h1";
  }
  return "1f1b";
}

std::string_view recomputeName(Recompute recompute) {
  switch (recompute) {
  case Recompute::None:
    return "none";
  case Recompute::Selective:
    return "selective";
  case Recompute::Full:
    return "full";
  }
  return "none";
}

std::optional<Recompute> parseRecompute(std::string_view name) {
  for (Recompute r : {Recompute::None, Recompute::Selective, Recompute::Full})
    if (name == recomputeName(r))
      return r;
  return std::nullopt;
}

std::vector<std::pair<std::string_view, double>>
MemoryBreakdown::items() const {
  std::vector<std::pair<std::string_view, double>> out = {
      {"params", params},          {"grads", grads},
      {"optimizer", optimizer},    {"activations", activations},
      {"comm_buffers", commBuffers}, {"workspace", workspace},
      {"fragmentation", fragmentation}};
  if (kvCache > 0)
    out.push_back({"kv_cache", kvCache});
  out.push_back({"total", total});
  return out;
}

double transformerLayerParams(int64_t hidden, int64_t tp) {
  double h = static_cast<double>(hidden), t = static_cast<double>(tp);
  return 12 * h * h / t + 7 * h / t + 6 * h;
}

namespace {

// The paper's terms of one layer and one microbatch, split by what tensor
// parallelism splits: `replicated` elements (layer-norm inputs, the inputs
// of the QKV and first MLP GEMMs) and masks stay whole on every rank unless
// sequence parallelism splits them too; `split` elements (Q, K, V, the
// projection input, the GeLU input and output) are divided by t; the
// attention-core terms (softmax output, its dropout mask and output) are
// divided by t (heads are split) and are what selective recomputation drops.
struct LayerActivations {
  double replicated = 0; // bytes, before sequence parallelism
  double split = 0;      // bytes, before tensor parallelism
  double attentionCore = 0;
};

LayerActivations layerTerms(const TransformerMemoryConfig &c) {
  double s = static_cast<double>(c.seqLength);
  double b = static_cast<double>(c.microBatch);
  double h = static_cast<double>(c.hidden);
  double a = static_cast<double>(c.heads);
  double d = c.activationBytes;
  double sbh = s * b * h;
  LayerActivations terms;
  // Two layer-norm inputs, the QKV input and the first MLP input (4 d), and
  // the two dropout masks after attention and MLP (1 byte each): 10 sbh.
  double masks = c.dropout ? 1 : 0;
  terms.replicated = (4 * d + 2 * masks) * sbh;
  // Q, K, V and the projection input (4 d), GeLU input and second MLP
  // input (4 h wide each: 8 d): 24 sbh. With grouped-query attention K and
  // V are kv/a as wide; a gated MLP keeps the gate, its SiLU, the up
  // projection and their product (f wide each) instead of the GeLU input
  // and output: cleave's graph runs SiLU and the product as two ops, so
  // both read tensors are kept (Megatron-LM's fused SwiGLU keeps three and
  // recomputes the SiLU; the lowering's LLaMA-2 70B stages plan 12% above
  // a three-tensor estimate).
  double kv = c.kvHeads ? static_cast<double>(c.kvHeads) : a;
  double f = c.ffn ? static_cast<double>(c.ffn) : 4 * h;
  double mlpTensors = c.gatedMlp ? 4 : 2;
  terms.split = d * sbh * (2 + 2 * kv / a + mlpTensors * f / h);
  // Softmax output and its dropout output (2 d), the dropout mask (1 byte),
  // a s^2 b each: 5 a s^2 b. Fused, the kernel keeps each query row's
  // log-sum-exp (4 bytes) and regenerates the dropout mask from its seed.
  terms.attentionCore = c.fusedAttention
                            ? 4.0 * a * s * b
                            : (d + masks * (d + 1)) * a * s * (s * c.cp) * b;
  return terms;
}

} // namespace

double moeLayerExtraBytes(const TransformerMemoryConfig &c) {
  if (c.experts <= 0 || c.recompute == Recompute::Full)
    return 0;
  double t = static_cast<double>(c.tp);
  double sequenceSplit = c.sequenceParallel ? t : 1.0;
  double tokens = static_cast<double>(c.seqLength) * c.microBatch;
  double h = static_cast<double>(c.hidden);
  double f = c.ffn ? static_cast<double>(c.ffn) : 4 * h;
  double d = c.activationBytes;
  double e = static_cast<double>(c.experts), k = static_cast<double>(c.topK);
  double mlpTensors = c.gatedMlp ? 4 : 2;
  // Each expert's capacity slots; tensor parallelism splits the experts
  // (the lowering's dispatched tensors are [experts / t, capacity, h]).
  double slots = e * std::ceil(c.capacityFactor * tokens * k / e) / t;
  double experts = d * slots * (mlpTensors * f + 2 * h);
  // The router reads whole tokens (gathered under sp), and keeps its
  // probabilities, the top-k weights and their indices (8 bytes).
  double router = d * tokens * h * (1 - 1 / sequenceSplit) +
                  tokens * (e * d + k * d + 8 * k);
  double denseMlp = d * tokens * mlpTensors * f / t;
  return experts + router - denseMlp;
}

double layerActivationBytes(const TransformerMemoryConfig &c) {
  double t = static_cast<double>(c.tp);
  double sequenceSplit = c.sequenceParallel ? t : 1.0;
  double sbh = static_cast<double>(c.seqLength) * c.microBatch * c.hidden;
  if (c.recompute == Recompute::Full)
    return c.activationBytes * sbh / sequenceSplit;
  LayerActivations terms = layerTerms(c);
  double bytes = terms.replicated / sequenceSplit + terms.split / t;
  if (c.recompute == Recompute::None)
    bytes += terms.attentionCore / t;
  return bytes;
}

double microbatchesInFlight(const TransformerMemoryConfig &c) {
  double m = static_cast<double>(c.microbatches);
  if (c.pp == 1)
    return 1; // gradient accumulation frees each microbatch before the next
  double p = static_cast<double>(c.pp), i = static_cast<double>(c.stage);
  switch (c.schedule) {
  case PipelineSchedule::GPipe:
    return m;
  case PipelineSchedule::OneFOneB:
  case PipelineSchedule::ZeroBubbleH1:
    return std::min(p - i, m);
  case PipelineSchedule::Interleaved1F1B: {
    double v = static_cast<double>(c.virtualStages);
    double chunks = std::min(2 * (p - i - 1) + (v - 1) * p + 1, m * v);
    return chunks / v;
  }
  }
  return 1;
}

double zeroWindowBytes(int zeroStage, double stageParamBytes) {
  double window = std::min(kCollectiveWindowBytes, stageParamBytes);
  return (zeroStage >= 2 ? window : 0) + (zeroStage >= 3 ? window : 0);
}

ModelStateBytes modelStateBytes(double paramCount, int zeroStage, int64_t dp,
                                double paramBytes, double gradBytes,
                                double optimizerBytes) {
  double n = static_cast<double>(dp);
  ModelStateBytes states;
  states.params = paramBytes * paramCount / (zeroStage >= 3 ? n : 1);
  // ZeRO-1 also keeps the reduce-scattered block of the gradient that its
  // update reads: the reduce-scatter runs beside the backward pass, so the
  // block outlives it (the lowering's `.grad_shard` tensors).
  states.grads = gradBytes * paramCount / (zeroStage >= 2 ? n : 1) +
                 (zeroStage == 1 && dp > 1 ? gradBytes * paramCount / n : 0);
  states.optimizer = optimizerBytes * paramCount / (zeroStage >= 1 ? n : 1);
  // ZeRO-1 and 2 also keep the updated block of the parameter until the
  // next step's forward pass has gathered it (the lowering's `.shard`
  // tensors; carryParameterGathers).
  if ((zeroStage == 1 || zeroStage == 2) && dp > 1)
    states.optimizer += paramBytes * paramCount / n;
  return states;
}

absl::Status validateMemoryConfig(const TransformerMemoryConfig &c) {
  std::vector<std::string> problems;
  auto require = [&](bool ok, std::string_view message) {
    if (!ok)
      problems.emplace_back(message);
  };
  require(c.seqLength >= 1, "seqLength must be at least 1");
  require(c.microBatch >= 1, "microBatch must be at least 1");
  require(c.hidden >= 1, "hidden must be at least 1");
  require(c.heads >= 1, "heads must be at least 1");
  require(c.layersPerStage >= 0, "layersPerStage must not be negative");
  require(c.vocab >= 0, "vocab must not be negative");
  require(c.tp >= 1, "tp must be at least 1");
  require(c.cp >= 1, "cp must be at least 1");
  require(c.pp >= 1, "pp must be at least 1");
  require(c.dp >= 1, "dp must be at least 1");
  require(c.microbatches >= 1, "microbatches must be at least 1");
  require(c.virtualStages >= 1, "virtualStages must be at least 1");
  require(c.stage >= 0 && c.stage < c.pp, "stage must be in [0, pp)");
  require(c.zeroStage >= 0 && c.zeroStage <= 3, "zeroStage must be 0 to 3");
  require(c.activationBytes > 0 && c.paramBytes >= 0 && c.gradBytes >= 0 &&
              c.optimizerBytes >= 0,
          "byte sizes must not be negative (activationBytes positive)");
  require(c.dpBucketBytes >= 0 && c.ncclBytesPerCommunicator >= 0,
          "buffer allowances must not be negative");
  require(c.fragmentation >= 0 && c.fragmentation < 1,
          "fragmentation must be in [0, 1)");
  if (problems.empty()) {
    require(c.hidden % c.heads == 0, "hidden must be a multiple of heads");
    require(c.heads % c.tp == 0,
            "heads must be a multiple of tp (tensor parallelism splits "
            "heads)");
    require(!c.sequenceParallel || c.seqLength % c.tp == 0,
            "seqLength must be a multiple of tp with sequence parallelism");
    require(c.virtualStages == 1 ||
                c.schedule == PipelineSchedule::Interleaved1F1B,
            "virtualStages > 1 needs the interleaved schedule");
    // Chunks may hold unequal layer counts (balanced against the head):
    // chunkLayers says how many, else they are priced as even.
  }
  if (problems.empty())
    return absl::OkStatus();
  return absl::InvalidArgumentError(
      cat("transformer memory: ", join(problems, "; ")));
}

absl::StatusOr<MemoryBreakdown>
estimateTransformerMemory(const TransformerMemoryConfig &c) {
  if (absl::Status status = validateMemoryConfig(c); !status.ok())
    return status;
  double s = static_cast<double>(c.seqLength);
  double b = static_cast<double>(c.microBatch);
  double h = static_cast<double>(c.hidden);
  double v = static_cast<double>(c.vocab);
  double t = static_cast<double>(c.tp);
  double sequenceSplit = c.sequenceParallel ? t : 1.0;
  double sbh = s * b * h;
  bool first = c.stage == 0, last = c.stage == c.pp - 1;

  // Parameters: the layers, the vocabulary-parallel word embedding on the
  // first stage, and on the last the final layer norm and the output
  // projection, which with pp > 1 is Megatron's copy of the tied embedding.
  double layerParams = transformerLayerParams(c.hidden, c.tp);
  double params = static_cast<double>(c.layersPerStage) * layerParams;
  if (first)
    params += v * h / t;
  if (last && c.vocab > 0)
    params += 2 * h + (c.pp > 1 ? v * h / t : 0.0);
  ModelStateBytes states = modelStateBytes(
      params, c.zeroStage, c.dp, c.paramBytes, c.gradBytes, c.optimizerBytes);

  MemoryBreakdown out;
  out.params = states.params;
  out.grads = states.grads;
  out.optimizer = states.optimizer;

  double inFlight = microbatchesInFlight(c);
  double layerBytes = layerActivationBytes(c);
  double moeExtra = moeLayerExtraBytes(c);
  double activations = 0; // the stashes are added below the head's terms
  if (c.schedule == PipelineSchedule::ZeroBubbleH1 && c.pp > 1) {
    // ZB-H1 defers the W (weight gradients) of the stage's first
    // p - i - 1 backwards to the cool-down. Until its W runs, a microbatch
    // keeps its weight GEMMs' inputs (QKV and MLP inputs, sequence-split
    // with sp unless recomputed, the projection input and the MLP's hidden activation) and,
    // from its B on, their output gradients (QKV, projection, MLP up and
    // down). The lowering holds them in frames the same way.
    double p = static_cast<double>(c.pp), i = static_cast<double>(c.stage);
    double pending =
        std::max(0.0, std::min(p - i - 1, static_cast<double>(c.microbatches)));
    double s = static_cast<double>(c.seqLength);
    double b = static_cast<double>(c.microBatch);
    double h = static_cast<double>(c.hidden);
    double t = static_cast<double>(c.tp);
    double a = static_cast<double>(c.heads);
    double kv = c.kvHeads ? static_cast<double>(c.kvHeads) : a;
    double f = c.ffn ? static_cast<double>(c.ffn) : 4 * h;
    // Under full recomputation the B pass rebuilds the layer, all-gathers
    // included, and the W reads those gathered copies: whole sequences.
    double wholeInputs = c.sequenceParallel && c.recompute != Recompute::Full
                             ? 2 * h / t
                             : 2 * h;
    double inputs = c.activationBytes * s * b * (wholeInputs + (h + f) / t);
    double outputGrads =
        c.activationBytes * s * b *
        (h * (1 + 2 * kv / a) / t + (c.gatedMlp ? 2 : 1) * f / t + 2 * h);
    // The first stage sends no gradient back, so the lowering runs its
    // whole backward as B (it has no upstream stage to unblock): it holds
    // nothing for a W, as under 1F1B.
    if (c.stage > 0)
      // Fully recomputed, the inputs too are made by the B (from the
      // stashed layer input), and live from there to the W like the
      // gradients.
      activations += static_cast<double>(c.layersPerStage) *
                     ((pending + (c.recompute == Recompute::Full)) * inputs +
                      (pending + 1) * outputGrads);
  }

  if (c.recompute != Recompute::None && c.layersPerStage > 0) {
    // Backward of a recomputed layer rebuilds what was dropped, for one
    // layer and one microbatch at a time.
    TransformerMemoryConfig whole = c;
    whole.recompute = Recompute::None;
    activations += layerActivationBytes(whole) - layerActivationBytes(c);
  }
  // The embedding's dropout mask and the head's stash, per microbatch.
  double embeddingMask =
      first && c.vocab > 0 && c.dropout ? sbh / sequenceSplit : 0.0;
  double headStash = 0;
  if (last && c.vocab > 0) {
    // Final layer-norm and output-projection inputs, and fp32 logits for
    // the cross entropy; at the start of the backward pass, while every
    // stashed activation is still held, the logits' gradient as well (the
    // loss gradient reads the logits: both live at the peak).
    //
    // What the lowering holds depends on whether tp splits the vocabulary
    // (TransformerPlan.cpp prices the same layouts):
    //  - tp = 1: the fused cross entropy keeps the logits; their gradient
    //    is a transient beside the head's weight gradient and its sum over
    //    the batch.
    //  - rows split over tp (Megatron's vocab-parallel cross entropy, as
    //    the graph decomposes it): the stash holds the block's exp(logits)
    //    and a one-byte mask of the label's column; the backward's where,
    //    product and sum are three block-sized transients alive at once.
    //  - a vocabulary that tp does not divide, the table split along the
    //    hidden dimension: every rank holds each microbatch's whole logits
    //    (all-reduced; with sp, reduce-scattered to a block of the tokens,
    //    which the stash keeps), and the whole logits' gradient is a
    //    transient -- beside the block with sp, beside the table
    //    gradient's two partial sums (the head's and the lookup's)
    //    without.
    // ZB-H1 splits the last stage's backward too: the head's weight
    // gradient (its W) reads the logits' gradient, which is held from the
    // B to it -- the block, or the whole logits' where tp does not divide
    // the vocabulary -- for the one microbatch between the two.
    double block = 4 * s * b * v / t, whole = 4 * s * b * v;
    bool vocabSplits = c.tp == 1 || c.vocab % c.tp == 0;
    double logits = vocabSplits || c.sequenceParallel ? block : whole;
    if (c.tp > 1 && vocabSplits)
      logits += s * b * v / t; // the label mask, one byte a logit
    headStash = 2 * c.activationBytes * sbh / sequenceSplit + logits;
    bool heldToW = c.pp > 1 && c.schedule == PipelineSchedule::ZeroBubbleH1;
    if (heldToW)
      activations += vocabSplits ? block : whole;
    // At the start of the backward pass, while every stashed activation is
    // still held, the logits' gradient lives beside the logits it is
    // computed from: a transient, not an activation, but at the peak.
    if (c.tp == 1)
      // Under ZB-H1 the fused loss's gradient is the one held to the W.
      // Beside it the head's weight gradient: its per-sequence products
      // and their sum are one GEMM (fused away), and the reshape of the
      // sum to the table's shape is a view of it.
      out.workspace = (heldToW ? 0 : block) + c.gradBytes * v * h;
    else if (vocabSplits)
      out.workspace = 3 * block;
    else if (c.sequenceParallel)
      out.workspace = whole + block;
    else
      out.workspace = whole + 2 * c.gradBytes * v * h / t;
  }
  int chunks = static_cast<int>(c.virtualStages);
  if (c.schedule == PipelineSchedule::Interleaved1F1B && c.pp > 1 &&
      chunks > 1 && static_cast<int>(c.chunkLayers.size()) == chunks) {
    // The lowering keeps the chunks' stashes in frames, a class of chunks
    // of like size sharing frames of its largest (planStashFrames): over
    // uneven chunks more than the average chunk in flight, and the head's
    // chunk, on the last stage, in a class of its own.
    std::vector<double> stash(chunks);
    for (int k = 0; k < chunks; ++k)
      stash[k] = static_cast<double>(c.chunkLayers[k]) * layerBytes +
                 (k < static_cast<int>(c.chunkMoeLayers.size())
                      ? static_cast<double>(c.chunkMoeLayers[k]) * moeExtra
                      : 0.0);
    stash[0] += embeddingMask;
    stash[chunks - 1] += headStash;
    absl::StatusOr<StashFrames> frames = planStashFrames(
        ScheduleKind::Interleaved, static_cast<int>(c.pp),
        static_cast<int>(c.stage), static_cast<int>(c.microbatches), stash);
    if (!frames.ok())
      return frames.status();
    activations += frames->bytes;
  } else {
    activations += (static_cast<double>(c.layersPerStage) * layerBytes +
                    static_cast<double>(c.moeLayers) * moeExtra) *
                   inFlight;
    activations += embeddingMask * inFlight;
    // The head's stash: on the last stage, whose backward of a microbatch
    // follows its forward, one (GPipe: all of them).
    activations += headStash * inFlight;
  }
  if (first && c.vocab > 0 && c.tp > 1 && c.vocab % c.tp != 0 &&
      !c.sequenceParallel)
    // A table split along the hidden dimension, without sp: the lookup's
    // backward scatters into the whole table's gradient, then slices this
    // rank's columns and adds them to the head's (tied) share.
    out.workspace =
        std::max(out.workspace, c.gradBytes * v * h * (1 + 2 / t));
  if (c.layersPerStage > 0 && !c.fusedAttention) {
    // The backward of a layer's attention core (unfused: no flash
    // attention) holds two score-sized gradients beside the softmax
    // output it reads: that of the probabilities and that of the scores.
    // The logits' gradient is freed by then.
    double a = static_cast<double>(c.heads);
    double scores = c.activationBytes * a * s * (s * c.cp) * b / t;
    out.workspace = std::max(out.workspace, 2 * scores);
  }
  out.activations = activations;

  double comm = 0;
  int communicators = (c.tp > 1) + (c.pp > 1) + (c.dp > 1);
  comm += communicators * c.ncclBytesPerCommunicator;
  out.commLibrary = communicators * c.ncclBytesPerCommunicator;
  if (c.pp > 1) {
    // Send buffers: each chunk sends its activations on (but the last
    // stage's last) and their gradients back (but the first stage's
    // first), each with two slots so the sender can run a microbatch
    // ahead (one where a stage holds one microbatch). What a stage
    // receives is its input, counted with the activations.
    double v = static_cast<double>(c.virtualStages);
    double sends = 2 * v - (first ? 1 : 0) - (last ? 1 : 0);
    double slots = microbatchesInFlight(c) > 1 ? 2 : 1;
    comm += sends * slots * c.activationBytes * sbh / sequenceSplit;
  }
  if (c.dp > 1)
    comm += c.dpBucketBytes;
  if (c.dp > 1 && c.zeroStage == 3)
    // ZeRO-3 gathers a layer's parameters before use and prefetches the
    // next, and holds one layer's full gradients before reduce-scattering.
    comm += (2 * (c.gatheredParamBytes > 0 ? c.gatheredParamBytes
                                           : c.paramBytes) +
             c.gradBytes) *
            layerParams;
  out.commBuffers = comm;

  double allocated = out.params + out.grads + out.optimizer + out.activations +
                     out.commBuffers + out.workspace;
  out.fragmentation = c.fragmentation * allocated;
  out.total = allocated + out.fragmentation;
  return out;
}

} // namespace cleave::cost
