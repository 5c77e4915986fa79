//===- TransformerPlan.h - Score a parallel plan of a transformer -*- C++ -*-===//
//
// Prices one training step of a transformer under a plan given as knobs
// (data, tensor, pipeline, context and expert parallel degrees, sequence
// parallelism, ZeRO stage, microbatch size, pipeline schedule,
// recomputation, precision), the way Megatron-LM executes it (but full
// recomputation as cleave's lowering runs it, unless recomputeWholeLayer):
// every GEMM
// and memory-bound kernel of a layer priced by the operator model, the
// tensor-parallel collectives on the critical path, pipeline transfers and
// data-parallel gradient reduction on their own streams, the whole step
// simulated event by event. This is how users score a hand-tuned
// configuration and how the search ranks candidates.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_COST_MODEL_TRANSFORMERPLAN_H
#define CLEAVE_COST_MODEL_TRANSFORMERPLAN_H

#include "cleave/cost_model/Cluster.h"
#include "cleave/cost_model/Collectives.h"
#include "cleave/cost_model/DType.h"
#include "cleave/cost_model/Memory.h"
#include "cleave/cost_model/PipelineSchedule.h"
#include "cleave/cost_model/Simulator.h"

#include "absl/container/inlined_vector.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace cleave::cost {

struct Profile;

/// The shape of a decoder- or encoder-only transformer.
struct TransformerModel {
  std::string name;
  int64_t layers = 0;
  int64_t hidden = 0;
  int64_t heads = 0;
  /// Key/value heads (grouped-query attention); 0 means `heads`.
  int64_t kvHeads = 0;
  /// MLP width; 0 means 4 * hidden.
  int64_t ffn = 0;
  int64_t vocab = 0;
  int64_t seq = 0;
  /// SwiGLU (three MLP matrices, no biases) instead of GELU (two, biased).
  bool gatedMlp = false;
  /// Learned position embeddings of `seq` rows (GPT, BERT).
  bool learnedPositions = true;
  bool tiedEmbedding = true;
  /// Dropout after attention, the MLP and the embedding, and on the
  /// attention probabilities (the layers Korthikanti et al. count); without
  /// it, no masks or dropout outputs are kept.
  bool dropout = true;
  /// Causal (decoder) attention: a fused attention kernel skips the masked
  /// half of the scores.
  bool causal = true;
  /// Whether the attention can run as one fused kernel: no dropout on the
  /// probabilities, and, for an imported graph, a form cleave-fuse-attention
  /// recognises in every layer (the compiler tries it). The search prices
  /// fused attention only where it can.
  bool attentionFuses = true;
  bool canFuseAttention() const { return attentionFuses && !dropout; }
  /// Mixture of experts: every `moeEvery`-th MLP has `experts` experts of
  /// which each token uses `topK`.
  int64_t experts = 0;
  int64_t topK = 1;
  int64_t moeEvery = 1;
  double capacityFactor = 1.25;

  int64_t kv() const { return kvHeads ? kvHeads : heads; }
  int64_t mlp() const { return ffn ? ffn : 4 * hidden; }
  bool isMoeLayer(int64_t layer) const {
    return experts > 0 && layer % moeEvery == moeEvery - 1;
  }
  /// Parameters of the whole model.
  double parameters() const;
  /// One MLP's parameters: a dense layer's, or each expert's.
  double mlpParameters() const;
  /// Parameter tensors of one layer, each its own ZeRO collective in the
  /// lowering: GPT's q/k/v/o projections, two MLP matrices and two layer
  /// norms, with biases (16); SwiGLU layers have three matrices, RMS norms
  /// and no biases (9); an MoE layer adds its router.
  int64_t parameterTensors(int64_t layer) const {
    return (gatedMlp ? 9 : 16) + (isMoeLayer(layer) ? 1 : 0);
  }
};

/// The knobs of a plan.
struct ParallelConfig {
  int64_t dp = 1, tp = 1, pp = 1, cp = 1, ep = 1;
  bool sequenceParallel = false;
  int zero = 0;
  /// The ranks ZeRO shards the model states over: the data- and
  /// context-parallel ones, which hold the same parameters and sum their
  /// gradients (Megatron-Core's distributed optimizer shards over dp x cp;
  /// each microbatch's sum over cp folds into ZeRO's reduce-scatter).
  int64_t zeroReplicas() const { return dp * cp; }
  int64_t microbatchSize = 1;
  /// Samples per step, across all data-parallel replicas.
  int64_t globalBatch = 1;
  ScheduleKind schedule = ScheduleKind::OneFOneB;
  /// Model chunks per stage (interleaved schedule).
  int64_t chunks = 1;
  Recompute recompute = Recompute::None;
  /// Recomputation per pipeline stage (pp entries), or empty: every stage
  /// `recompute`. Under 1F1B the first stage keeps pp microbatches'
  /// activations and the last one: the early stages may recompute while
  /// the later ones do not (`recompute` then names the heaviest).
  std::vector<Recompute> stageRecompute;
  Recompute recomputeOf(int64_t stage) const {
    return stage >= 0 && stage < static_cast<int64_t>(stageRecompute.size())
               ? stageRecompute[stage]
               : recompute;
  }
  DType precision = DType::Bf16;
  /// How the runtime executes the plan. cleave's runtime overlaps
  /// gradient reduction with the backward pass and pipeline transfers with
  /// compute; Megatron-LM as published in 2021 did neither (it reduced
  /// gradients after the pipeline flush and blocked on transfers), which
  /// the validation against its measurements models with these off.
  bool overlapGradReduce = true;
  bool overlapTransfers = true;
  /// Layers per pipeline chunk balanced against the embedding on the first
  /// and the head and loss on the last (StageBalance.h); off: the even
  /// split, as Megatron-LM cuts its stages.
  bool balanceStages = true;
  /// What full recomputation runs again. Off (cleave's lowering,
  /// cleave-recompute): only what the backward pass reads, so not a dense
  /// layer's MLP output GEMM, its tensor-parallel reduction and the
  /// residual add, whose result is the stashed layer output. On
  /// (Megatron-LM's activation checkpointing): the layer's whole forward
  /// pass. Pricing only: a plan artifact is always lowered as off.
  bool recomputeWholeLayer = false;
  /// Attention as one fused kernel (FlashAttention-2: tiled, online
  /// softmax, the backward recomputing the scores from the saved
  /// log-sum-exp, fully masked blocks skipped) instead of the unfused
  /// GEMM-softmax-dropout-GEMM ops (`attention=fused`); the lowering
  /// rewrites the model's attention into graph.attention
  /// (cleave-fuse-attention), which needs attention without dropout.
  bool fusedAttention = false;
  /// Tensor-parallel collectives overlapped with the GEMMs beside them
  /// (`overlap-tp`, Megatron-Core's --tp-comm-overlap: Transformer
  /// Engine splits each sequence-parallel all-gather and reduce-scatter
  /// into a ring of tp chunks and runs the adjacent GEMM chunk by chunk
  /// while the next chunk moves). Needs sequence parallelism. Pricing
  /// only: cleave's runtime runs each collective between its GEMMs, so
  /// `cleave compile -o` refuses a plan with it on.
  bool overlapTpComm = false;
  /// ZeRO's gradient reduce-scatters and parameter all-gathers: 0, one
  /// collective per parameter tensor (cleave's lowering); else parameters
  /// packed into buckets of this many elements, one collective each
  /// (`zero-bucket`, in millions; Megatron-Core's distributed optimizer
  /// packs 40 M at least). Each collective pays NCCL's latency, which at
  /// hundreds of tensors over a data-parallel ring of many nodes is most
  /// of the time. Pricing only, like overlap-tp.
  int64_t zeroBucketElements = 0;
  /// Under 16-bit storage, weight gradients accumulated and reduced in the
  /// storage type (`grad-reduce=half`, Megatron-LM in 2021 for fp16)
  /// instead of fp32 (`grad-reduce=fp32`, cleave's lowering and
  /// Megatron-Core's accumulate_allreduce_grads_in_fp32). Pricing only,
  /// like overlap-tp.
  bool halfGradReduce = false;
};

/// The collectives one device of a stage runs per step, as the cost model
/// prices them: calls, and bytes summed over the calls (each call's
/// buffer as nccl-tests sizes it: an all-gather's output, a
/// reduce-scatter's input). Keyed by kind and whether the group spans
/// nodes. Pipeline transfers count each message the device sends or
/// receives.
struct CollectiveTally {
  struct Volume {
    double calls = 0;
    double bytes = 0;
  };
  using Key = std::pair<Collective, bool>;
  /// A map of at most twelve keys, kept sorted inline: the search builds
  /// tallies for every layer of every plan it prices, and a node-based
  /// map's allocations were a fifth of its time.
  class Volumes {
  public:
    using value_type = std::pair<Key, Volume>;
    using const_iterator =
        absl::InlinedVector<value_type, 6>::const_iterator;
    Volume &operator[](Key key) {
      auto it = lowerBound(key);
      if (it == entries.end() || it->first != key)
        it = entries.insert(it, {key, Volume()});
      return it->second;
    }
    const_iterator find(Key key) const {
      auto it = std::lower_bound(entries.begin(), entries.end(), key,
                                 [](const value_type &e, const Key &k) {
                                   return e.first < k;
                                 });
      return it != entries.end() && it->first == key ? it : entries.end();
    }
    /// Throws std::out_of_range for a key not counted (as std::map::at).
    const Volume &at(Key key) const {
      auto it = find(key);
      if (it == entries.end())
        throw std::out_of_range("no collectives of this kind counted");
      return it->second;
    }
    const_iterator begin() const { return entries.begin(); }
    const_iterator end() const { return entries.end(); }
    size_t size() const { return entries.size(); }
    bool empty() const { return entries.empty(); }
    /// Every volume, to scale in place.
    auto &all() { return entries; }

  private:
    absl::InlinedVector<value_type, 6>::iterator lowerBound(Key key) {
      return std::lower_bound(entries.begin(), entries.end(), key,
                              [](const value_type &e, const Key &k) {
                                return e.first < k;
                              });
    }
    absl::InlinedVector<value_type, 6> entries;
  };
  Volumes byKind;

  void add(Collective kind, bool crossNode, double calls, double bytesEach);
  CollectiveTally &operator+=(const CollectiveTally &other);
  /// Every volume times `k` (a layer's tally over its microbatches).
  CollectiveTally scaled(double k) const;
};

struct PlanPrediction {
  ParallelConfig plan;
  int64_t numMicrobatches = 0;
  /// Transformer layers of each stage (all its chunks).
  std::vector<int64_t> layersPerStage;
  /// Transformer layers of each model chunk, in model order (chunk c runs
  /// on stage c % pp); the lowering cuts the model the same way.
  std::vector<int64_t> layersPerChunk;
  double stepSeconds = 0;
  /// Model FLOPs (forward and backward, recomputation excluded) and the
  /// FLOPs the hardware runs (recomputation included), per step.
  double modelFlops = 0, hardwareFlops = 0;
  double tflopsPerDevice = 0, hwTflopsPerDevice = 0;
  double mfu = 0;
  double bubbleFraction = 0;
  /// The largest device's memory and its breakdown.
  double peakMemoryBytes = 0;
  int64_t peakMemoryStage = 0;
  MemoryBreakdown memory;
  /// Every stage's memory per device (memory is stage peakMemoryStage's).
  std::vector<MemoryBreakdown> stageMemory;
  /// Every stage's collectives per device and step.
  std::vector<CollectiveTally> stageCollectives;
  /// Where a layer's forward time goes on one rank (seconds per microbatch).
  double layerGemmSeconds = 0, layerElementwiseSeconds = 0,
         layerTensorCommSeconds = 0;
  double gradReduceSeconds = 0, pipelineSendSeconds = 0;
  /// The most work one stage's compute stream does: no schedule can run the
  /// step faster.
  double lowerBoundSeconds = 0;
  /// False when the plan was not simulated because its lower bound was
  /// above `simulateBelow`; stepSeconds is then that bound.
  bool simulated = true;
};

/// Checks the plan against the model and cluster (degrees multiply to the
/// device count, divisibility, batch) and prices it: its layers, embedding
/// and head from the model's shape, split over the pipeline chunks, as a
/// StageWorkload that scoreStages scores (StageWorkload.h). An infeasible plan
/// fails with a message naming the reason; one that does not fit in memory
/// names the stage and its memory breakdown. With `graph` and `timeline`,
/// the simulated step is returned for a Chrome trace.
absl::StatusOr<PlanPrediction>
scoreTransformerPlan(const TransformerModel &model, const Cluster &cluster,
                     const ParallelConfig &plan,
                     const Profile *profile = nullptr,
                     TaskGraph *graph = nullptr, Timeline *timeline = nullptr,
                     double simulateBelow = HUGE_VAL);

/// Megatron-LM's FLOPs per step with full recomputation (Narayanan et al.
/// 2021, eq. 3): 96 B s l h^2 (1 + s / 6h + V / 16lh).
double megatronFlopsPerStep(const TransformerModel &model,
                            int64_t globalBatch);

} // namespace cleave::cost

#endif // CLEAVE_COST_MODEL_TRANSFORMERPLAN_H
