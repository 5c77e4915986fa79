//===- Generate.h - Autoregressive generation on one rank -------*- C++ -*-===//
//
// The loop that `cleave generate` runs on every rank of a generation plan
// (plan.proto GenerationConfig): requests from a prompt file are admitted
// into the plan's batch entries as entries free up (continuous batching at
// the granularity of a step, as Orca and vLLM schedule), each sequence's
// cache blocks are taken from a free list as it grows and returned when it
// ends, and every step feeds one token per sequence: the next prompt token
// (the prompt is prefilled a token a step) or the token sampled last. The
// lowest rank holding the logits samples (greedy, or temperature, top-k
// and top-p with a seed) and broadcasts the choices, so every rank keeps
// the same schedule.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TOOLS_CLEAVE_WORKER_GENERATE_H
#define CLEAVE_TOOLS_CLEAVE_WORKER_GENERATE_H

#include "Options.h"

#include "cleave/runtime/executor/Executor.h"
#include "cleave/runtime/plan/plan.pb.h"

#include <cstdint>
#include <string>
#include <vector>

namespace cleave::worker {

/// A prompt file: one request a line, its token ids separated by spaces;
/// blank lines and lines starting with '#' are skipped. Errors name the
/// line.
absl::StatusOr<std::vector<std::vector<int64_t>>>
readPrompts(const std::string &path, int64_t vocab);

/// Generates for every prompt of options.generatePath; the sampling rank
/// prints, per request, its generated ids and latencies:
///
///   request 0: 8 prompt + 8 generated tokens: 17 3 250 ...  TTFT 4.1 ms  TPOT 1.2 ms
///
/// then `generated N tokens for R requests in S s (T tokens/s, K steps)`.
/// With options.logitsPath, the logits each generated token was chosen
/// from, float32, request after request, token after token, and beside
/// it (`<path>.tokens`) each request's generated ids, a line each.
/// Any error ends the job (fail).
void generate(const Options &options, const plan::Plan &plan,
              executor::Executor &ex);

} // namespace cleave::worker

#endif // CLEAVE_TOOLS_CLEAVE_WORKER_GENERATE_H
