//===- ServingPlan.h - Planning LLM inference for latency targets -*- C++ -*-===//
//
// Serving a model too large for one device: each replica splits it with
// tensor and pipeline parallelism, prefills a batch of prompts (compute-
// bound GEMMs over every prompt token), then decodes one token per
// sequence per step against its key/value cache (memory-bound: every
// step reads the stage's weights and the batch's cache). The plan is the
// (tp, pp, replicas, batch) that serves the most requests per second
// within the time-to-first-token (TTFT) and time-per-output-token (TPOT)
// targets, as AlpaServe and DistServe frame it; the batch is bounded by
// the memory the weights leave for the cache.
//
// The cache is priced exactly: layers x 2 (key, value) x kv_heads x
// head_dim x tokens x bytes, each device holding its stage's layers and
// its tensor-parallel share of the kv heads (a head is replicated where tp
// exceeds them). Every kernel is priced by the training cost model's
// operator and collective formulas (OperatorCost.h, Collectives.h), the
// tp all-reduces at the small sizes decode sends (latency-bound), so a
// measured profile (cleave profile) refines serving as it does training.
//
// Batching is continuous with chunked prefill (as vLLM's and cleave's
// runtime; Batching::Continuous, the default) or static; separate prefill
// and decode pools are searchDisaggregatedPlans'. Scope today: a fixed
// prompt and output length, a steady state (no arrival process, length
// distributions or queueing beyond the step a new request waits for).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_COST_MODEL_SERVINGPLAN_H
#define CLEAVE_COST_MODEL_SERVINGPLAN_H

#include "cleave/cost_model/Cluster.h"
#include "cleave/cost_model/DType.h"
#include "cleave/cost_model/TransformerPlan.h"

#include "absl/status/statusor.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cleave::cost {

struct Profile;

/// How a replica batches requests. Static: it prefills a batch of
/// prompts, then decodes them all to the end. Continuous (vLLM, Orca):
/// `batch` sequences decode together, and a finished one's place goes at
/// once to a new request. A step computes a row per running sequence, or
/// `stepTokens` rows, and the rows the decoding sequences leave read
/// prompts, several tokens of one prompt at once (chunked prefill, as
/// Sarathi-Serve and vLLM schedule; cleave's runtime does the same).
/// DecodeOnly: a disaggregated pool's decode replica (DistServe,
/// Splitwise), which receives each sequence's cache from a prefill pool
/// and only decodes: no prefill workspace, no prefills between its steps.
enum class Batching { Static, Continuous, DecodeOnly };

struct ServingWorkload {
  int64_t promptLen = 0;
  int64_t outputLen = 0;
  /// Sequences per replica; 0: searched up to what memory holds.
  int64_t batch = 0;
  /// Continuous batching: rows a step computes (`--step-tokens`, vLLM's
  /// max_num_batched_tokens), at least the batch. 0: scoreServingPlan
  /// gives each sequence one; searchServingPlans also tries wider steps
  /// where the batch is not fixed either.
  int64_t stepTokens = 0;
  /// Targets in seconds; 0: none.
  double ttft = 0, tpot = 0;
  DType precision = DType::Bf16;
  Batching batching = Batching::Continuous;
  /// Plan separate prefill and decode pools (searchDisaggregatedPlans)
  /// instead of replicas that do both.
  bool disaggregated = false;
  /// Tensor and pipeline degrees fixed by the user (`--fix tp=,pp=`); 0:
  /// searched.
  int64_t fixedTp = 0, fixedPp = 0;
};

struct ServingPrediction {
  int64_t tp = 1, pp = 1, replicas = 1, batch = 1;
  /// The time to a request's first token and one step per further token
  /// (at the mean context, prompt plus half the output), as a request
  /// sees them. Static batching: a prefill of the batch's prompts, then
  /// decode steps of the batch. Continuous: half a step's wait, then the
  /// steps its prompt is read in, on the rows the decoding sequences leave.
  double ttftSeconds = 0, tpotSeconds = 0;
  /// A step's rows, and of them, on average in the steady state, the
  /// rows of decoding sequences and the prompt rows; the steps a prompt
  /// is read in.
  int64_t stepRows = 0, prefillSteps = 0;
  double decodeRowsPerStep = 0, promptRowsPerStep = 0;
  /// Of the decode step: the time its tensor-parallel all-reduces and
  /// pipeline sends take.
  double tpotCommSeconds = 0;
  double requestsPerSecond = 0, outputTokensPerSecond = 0;
  /// Per device, the fullest stage: weights, the batch's cache at the
  /// full context, the step's workspace (its widest activations), their
  /// sum; the cache one
  /// sequence takes; the device's memory.
  double weightBytes = 0, cacheBytes = 0, workspaceBytes = 0, memoryBytes = 0;
  double cacheBytesPerSequence = 0, deviceBytes = 0;
  /// The most sequences per replica the memory holds.
  int64_t maxBatch = 0;
};

/// Bytes of key/value cache one token takes on one device of a stage of
/// `layersOnStage` layers under tensor parallelism `tp`.
double kvCacheBytesPerToken(const TransformerModel &model,
                            int64_t layersOnStage, int64_t tp, DType dtype);

/// Prices serving `model` with (tp, pp) replicas of `workload.batch`
/// sequences on `cluster` (replicas: every device). Errors: degrees that
/// do not divide the devices, the heads or the layers; a batch the memory
/// cannot hold (naming the bytes).
absl::StatusOr<ServingPrediction>
scoreServingPlan(const TransformerModel &model, const Cluster &cluster,
                 const ServingWorkload &workload, int64_t tp, int64_t pp,
                 const Profile *profile = nullptr);

struct ServingSearchResult {
  /// The plans meeting the targets, most requests per second first (at
  /// most topK).
  std::vector<ServingPrediction> best;
  /// Per (tp, pp) shape: its best plan within the targets, or why it has
  /// none ("memory: ...", "TTFT ...", "TPOT ..."), for --explain.
  struct Shape {
    int64_t tp = 1, pp = 1;
    std::optional<ServingPrediction> plan;
    std::string why;
  };
  std::vector<Shape> shapes;
  int64_t candidates = 0;
};

/// Separate prefill and decode pools (DistServe, Splitwise): prefill
/// replicas of one shape prefill one prompt at a time (their stages
/// pipelined) and send its KV cache to a decode replica of another shape,
/// which decodes a continuous batch with no prefill between its steps.
struct DisaggregatedPrediction {
  ServingPrediction prefill, decode;
  int64_t prefillReplicas = 0, decodeReplicas = 0;
  /// A request's cache sent from the prefill to the decode pool.
  double transferSeconds = 0;
  double ttftSeconds = 0, tpotSeconds = 0;
  /// Requests per second each pool sustains; the plan serves the lesser.
  double prefillCapacity = 0, decodeCapacity = 0;
  double requestsPerSecond = 0, outputTokensPerSecond = 0;
};

/// Every split of the devices into a prefill and a decode pool (each a
/// whole number of replicas of its own tensor x pipeline shape), each
/// decode shape at the largest batch its memory and --tpot allow; the
/// most requests per second within the targets. FailedPrecondition as
/// searchServingPlans.
absl::StatusOr<DisaggregatedPrediction>
searchDisaggregatedPlans(const TransformerModel &model, const Cluster &cluster,
                         const ServingWorkload &workload,
                         const Profile *profile = nullptr);

/// Every tp (a divisor of the node's devices and of the heads) and pp (up
/// to the layers) whose product divides the devices, and every batch from
/// memory's bound down by halves, within the targets.
/// FailedPrecondition when no plan meets them, naming the limit that binds
/// closest (memory, TTFT or TPOT) with the figures.
absl::StatusOr<ServingSearchResult>
searchServingPlans(const TransformerModel &model, const Cluster &cluster,
                   const ServingWorkload &workload, int topK = 1,
                   const Profile *profile = nullptr);

} // namespace cleave::cost

#endif // CLEAVE_COST_MODEL_SERVINGPLAN_H
