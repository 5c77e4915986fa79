//===- Memory.h - Per-device memory of transformer training -----*- C++ -*-===//
//
// What one device of a tensor (t), sequence, pipeline (p) and data (N)
// parallel GPT-style transformer holds during training, after:
//
//  - Korthikanti et al., "Reducing Activation Recomputation in Large
//    Transformer Models", 2022 (arXiv:2205.05198), section 4: activation
//    bytes per layer and per microbatch, with 16-bit activations and 1-byte
//    dropout masks,
//      no parallelism                 s b h (34 + 5 a s / h)
//      tensor parallel                s b h (10 + 24/t + 5 a s / (h t))
//      tensor + sequence parallel     s b h (34 + 5 a s / h) / t
//      ... + selective recomputation  s b h 34 / t
//      full recomputation             2 s b h (the layer input only)
//    We keep the paper's decomposition (attention 11 sbh + 5 a s^2 b,
//    MLP 19 sbh, layer norms 4 sbh) with the element size as a parameter:
//    (16 d + 2) s b h + (2 d + 1) a s^2 b for d-byte activations.
//  - Narayanan et al., "Efficient Large-Scale Language Model Training on GPU
//    Clusters Using Megatron-LM", 2021 (arXiv:2104.04473): 1F1B keeps at
//    most p microbatches in flight on the first stage, p - i on stage i;
//    the interleaved schedule with v chunks per device keeps
//    p (1 + (p-1)/(p v)) on the first stage (Korthikanti 4.2.3), i.e.
//    Megatron's warm-up count 2(p-i-1) + (v-1)p, plus one, chunk-microbatches.
//    GPipe keeps all m microbatches. Zero-bubble ZB-H1 (Qi et al. 2024,
//    arXiv:2401.10241) keeps the same as 1F1B.
//  - Rajbhandari et al., "ZeRO", 2020 (arXiv:1910.02054): mixed-precision
//    Adam holds 2 + 2 + 12 = 16 bytes per parameter (fp16 weights and
//    gradients; fp32 master weights, momentum, variance); over N data-
//    parallel ranks ZeRO-1 leaves 4 + 12/N, ZeRO-2 2 + 14/N, ZeRO-3 16/N.
//
// The last stage adds the output layer (Korthikanti 4.3: 4 s b h / t
// (1 + V/h) with sequence parallelism, logits in fp32) and the first the
// embedding's dropout mask. Allowances we add, each documented at its
// field: communication buffers and allocator fragmentation.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_COST_MODEL_MEMORY_H
#define CLEAVE_COST_MODEL_MEMORY_H

#include "absl/status/statusor.h"

#include <cstdint>
#include <string_view>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace cleave::cost {

enum class PipelineSchedule { GPipe, OneFOneB, Interleaved1F1B, ZeroBubbleH1 };
enum class Recompute { None, Selective, Full };

std::string_view pipelineScheduleName(PipelineSchedule schedule);
std::string_view recomputeName(Recompute recompute);
/// "none", "selective" or "full"; unset for any other text.
std::optional<Recompute> parseRecompute(std::string_view name);

struct TransformerMemoryConfig {
  // The model (GPT: 4h MLP, learned biases, tied input/output embedding).
  int64_t seqLength = 0;      ///< s
  int64_t microBatch = 1;     ///< b
  int64_t hidden = 0;         ///< h
  int64_t heads = 0;          ///< a
  int64_t layersPerStage = 0; ///< transformer layers on this device
  int64_t vocab = 0;          ///< V; 0 leaves out embedding and output layer
  /// MLP width (0: 4h, the paper's) and key/value heads (0: heads). A gated
  /// (SwiGLU) MLP keeps four f-wide tensors (gate, its SiLU, up, their
  /// product) instead of two.
  int64_t ffn = 0;
  int64_t kvHeads = 0;
  bool gatedMlp = false;
  /// Dropout layers (the paper's model has them; a model without keeps no
  /// masks and no attention-dropout output).
  bool dropout = true;
  /// Fused attention keeps no score-sized tensors: only the log-sum-exp of
  /// each query row (fp32) beside Q, K, V and the output.
  bool fusedAttention = false;
  /// Mixture of experts: `moeLayers` of the stage's layers route each
  /// token to `topK` of `experts` expert MLPs, each taking up to
  /// capacityFactor x tokens x topK / experts tokens.
  int64_t experts = 0;
  int64_t topK = 1;
  double capacityFactor = 1.25;
  int64_t moeLayers = 0;

  // Parallelism.
  int64_t tp = 1;
  bool sequenceParallel = false;
  /// Context parallelism: seqLength is then one device's block of the
  /// sequence; each of its queries still scores every key, so the
  /// attention-core terms span cp blocks of keys.
  int64_t cp = 1;
  int64_t pp = 1;
  int64_t stage = 0; ///< 0 .. pp-1
  PipelineSchedule schedule = PipelineSchedule::OneFOneB;
  int64_t virtualStages = 1; ///< v: model chunks per device (interleaved)
  /// Interleaved: the layers of each of this stage's v chunks, in order.
  /// Given, the stashes are priced in the lowering's frames
  /// (planStashFrames); empty, as v even chunks.
  std::vector<int64_t> chunkLayers;
  /// Interleaved, with experts: the MoE layers of each chunk.
  std::vector<int64_t> chunkMoeLayers;
  int64_t microbatches = 1;  ///< m: per step
  Recompute recompute = Recompute::None;
  int zeroStage = 0; ///< 0 (none) to 3
  int64_t dp = 1;

  // Bytes per element.
  double activationBytes = 2;
  double paramBytes = 2;
  double gradBytes = 2;
  double optimizerBytes = 12; ///< fp32 master, momentum, variance
  /// What ZeRO-3 gathers a parameter in (0: paramBytes). Under bf16 the
  /// stored block is the fp32 master and the gather carries its bf16 copy
  /// (FSDP's param_dtype).
  double gatheredParamBytes = 0;

  /// Gradient buckets in flight for the data-parallel reduction: two of
  /// PyTorch DDP's default 25 MiB (bucket_cap_mb). Under ZeRO-2 and 3 the
  /// same bytes hold the lowering's windows of reduce-scatters and
  /// parameter prefetches in flight (zeroWindowBytes).
  double dpBucketBytes = 2 * 25.0 * 1024 * 1024;
  /// NCCL's own buffers per communicator (tensor, pipeline, data): about
  /// 16 channels x (4 MiB Simple + 4 MiB LL128) receive buffers, NCCL's
  /// default NCCL_BUFFSIZE being 4 MiB. An allowance, to be measured.
  double ncclBytesPerCommunicator = 128.0 * 1024 * 1024;
  /// Allocator fragmentation, as a fraction of everything else: the gap
  /// between PyTorch's memory_reserved and memory_allocated is typically
  /// 5-15% in large-model training; we allow 10%.
  double fragmentation = 0.10;
};

struct MemoryBreakdown {
  double params = 0;
  double grads = 0;
  double optimizer = 0;
  double activations = 0;
  double commBuffers = 0;
  /// The part of commBuffers the communication library allocates itself
  /// (NCCL's buffers per communicator), outside any buffer plan.
  double commLibrary = 0;
  /// Transients that coexist with every activation at the peak (the last
  /// stage's logits gradient at the start of the backward pass).
  double workspace = 0;
  double fragmentation = 0;
  /// A generation plan's key/value caches (none in training).
  double kvCache = 0;
  double total = 0;

  /// The fields with their names ("params", "grads", "optimizer",
  /// "activations", "comm_buffers", "workspace", "fragmentation",
  /// "total"), in order; "kv_cache" before "total" where there is one.
  std::vector<std::pair<std::string_view, double>> items() const;
};

/// Parameters of one transformer layer held by one tensor-parallel rank:
/// 12h^2/t + 7h/t + 6h (QKV, projection and MLP weights split; the row-
/// parallel biases and the two layer norms replicated). 12h^2 + 13h at t=1.
double transformerLayerParams(int64_t hidden, int64_t tp);

/// Activation bytes one layer keeps for one microbatch (see above).
double layerActivationBytes(const TransformerMemoryConfig &config);

/// What a mixture-of-experts layer stashes beyond the dense layer of the
/// same MLP width: its experts' MLP activations over their capacity slots,
/// the tokens dispatched to them and their outputs, the router's input
/// (whole tokens) and its probabilities and choices. 0 without experts or
/// under full recomputation.
double moeLayerExtraBytes(const TransformerMemoryConfig &config);

/// Microbatches whose activations the stage holds at its peak, in units of
/// the whole stage (fractional for the interleaved schedule).
double microbatchesInFlight(const TransformerMemoryConfig &config);

struct ModelStateBytes {
  double params = 0;
  double grads = 0;
  double optimizer = 0;
  double total() const { return params + grads + optimizer; }
};

/// The bytes of collectives the lowering keeps in flight beside compute
/// (PyTorch DDP's default 25 MiB bucket): its gradient buckets, and the
/// window of ZeRO's reduce-scatters and parameter prefetches.
inline constexpr double kCollectiveWindowBytes = 25.0 * 1024 * 1024;

/// What that window keeps alive on a stage holding `stageParamBytes` of
/// parameters under ZeRO stage `zeroStage`: ZeRO-2's reduce-scatters in
/// flight hold up to a window of whole gradients, and ZeRO-3 also gathers
/// up to a window of parameters ahead; neither more than the stage has.
double zeroWindowBytes(int zeroStage, double stageParamBytes);

/// Model states of `paramCount` parameters under ZeRO stage `zeroStage`
/// over `dp` data-parallel ranks. ZeRO-1's gradients include the block of
/// the reduce-scattered gradient its update reads (gradBytes / dp per
/// parameter), and ZeRO-1 and 2's optimizer state the updated block of
/// the parameter (paramBytes / dp), kept until the next step gathers it;
/// the ZeRO paper's accounting leaves both out.
ModelStateBytes modelStateBytes(double paramCount, int zeroStage, int64_t dp,
                                double paramBytes = 2, double gradBytes = 2,
                                double optimizerBytes = 12);

/// Errors name the field that is out of range or inconsistent.
absl::Status validateMemoryConfig(const TransformerMemoryConfig &config);

absl::StatusOr<MemoryBreakdown>
estimateTransformerMemory(const TransformerMemoryConfig &config);

} // namespace cleave::cost

#endif // CLEAVE_COST_MODEL_MEMORY_H
