//===- PipelineSchedule.cpp - Per-stage order of pipeline passes ----------===//

#include "cleave/cost_model/PipelineSchedule.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

#include <algorithm>
#include <numeric>
#include <set>

namespace cleave::cost {

absl::StatusOr<ScheduleKind> parseSchedule(const std::string &name) {
  if (name == "gpipe")
    return ScheduleKind::GPipe;
  if (name == "1f1b")
    return ScheduleKind::OneFOneB;
  if (name == "interleaved")
    return ScheduleKind::Interleaved;
  if (name == "zb-h1" || name == "zbh1")
    return ScheduleKind::ZeroBubbleH1;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown schedule '", name,
                   "' (expected gpipe, 1f1b, interleaved or zb-h1)"));
}

const char *scheduleName(ScheduleKind kind) {
  switch (kind) {
  case ScheduleKind::GPipe:
    return "gpipe";
  case ScheduleKind::OneFOneB:
    return "1f1b";
  case ScheduleKind::Interleaved:
    return "interleaved";
  case ScheduleKind::ZeroBubbleH1:
    return "zb-h1";
  }
  return "?";
}

namespace {

/// Megatron-LM's mapping of the k-th forward (or backward) virtual
/// microbatch of a stage to (microbatch, chunk): groups of `stages`
/// microbatches go through chunk 0, then chunk 1, ...; backward visits the
/// chunks in reverse.
PipelineSlot virtualSlot(PassKind pass, int k, int stages, int chunks) {
  int group = k / (stages * chunks);
  int inGroup = k % (stages * chunks);
  int chunk = inGroup / stages;
  if (pass != PassKind::Forward)
    chunk = chunks - 1 - chunk;
  return {pass, group * stages + inGroup % stages, chunk};
}

} // namespace

absl::StatusOr<std::vector<PipelineSlot>>
pipelineOrder(ScheduleKind kind, int stages, int stage, int microbatches,
              int chunks) {
  if (stages < 1 || stage < 0 || stage >= stages || microbatches < 1 ||
      chunks < 1)
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid pipeline: stage ", stage, " of ", stages, ", ",
        microbatches, " microbatches, ", chunks, " chunks"));
  if (kind != ScheduleKind::Interleaved && chunks != 1)
    return absl::InvalidArgumentError(
        absl::StrCat("schedule ", scheduleName(kind),
                     " runs one chunk per stage, got ", chunks));
  std::vector<PipelineSlot> order;
  auto F = [&](int mb) { order.push_back({PassKind::Forward, mb, 0}); };
  auto B = [&](int mb) { order.push_back({PassKind::Backward, mb, 0}); };

  switch (kind) {
  case ScheduleKind::GPipe:
    for (int mb = 0; mb < microbatches; ++mb)
      F(mb);
    for (int mb = 0; mb < microbatches; ++mb)
      B(mb);
    return order;

  case ScheduleKind::OneFOneB: {
    int warmup = std::min(stages - stage - 1, microbatches);
    for (int mb = 0; mb < warmup; ++mb)
      F(mb);
    for (int i = 0; i + warmup < microbatches; ++i) {
      F(i + warmup);
      B(i);
    }
    for (int mb = std::max(0, microbatches - warmup); mb < microbatches; ++mb)
      B(mb);
    return order;
  }

  case ScheduleKind::Interleaved: {
    if (microbatches % stages)
      return absl::InvalidArgumentError(absl::StrCat(
          "the interleaved schedule needs the microbatch count (",
          microbatches, ") to be a multiple of the pipeline stages (", stages,
          ")"));
    int total = microbatches * chunks;
    int warmup = microbatches == stages
                     ? total
                     : std::min(total, (stages - stage - 1) * 2 +
                                           (chunks - 1) * stages);
    for (int k = 0; k < warmup; ++k)
      order.push_back(virtualSlot(PassKind::Forward, k, stages, chunks));
    for (int i = 0; i + warmup < total; ++i) {
      order.push_back(
          virtualSlot(PassKind::Forward, i + warmup, stages, chunks));
      order.push_back(virtualSlot(PassKind::Backward, i, stages, chunks));
    }
    for (int k = std::max(0, total - warmup); k < total; ++k)
      order.push_back(virtualSlot(PassKind::Backward, k, stages, chunks));
    return order;
  }

  case ScheduleKind::ZeroBubbleH1: {
    // 1F1B's order of F and B; the weight gradients of the first
    // p - s - 1 backwards wait until the cool-down, where stage s would
    // otherwise idle waiting for the next B from stage s + 1. Later W's
    // follow their B at once, which keeps the activation memory of 1F1B.
    int warmup = std::min(stages - stage - 1, microbatches);
    int deferred = std::min(stages - stage - 1, microbatches);
    std::vector<int> waiting;
    auto BW = [&](int mb) {
      B(mb);
      if (static_cast<int>(waiting.size()) < deferred &&
          mb < deferred) {
        waiting.push_back(mb);
        return;
      }
      order.push_back({PassKind::WeightGrad, mb, 0});
    };
    for (int mb = 0; mb < warmup; ++mb)
      F(mb);
    for (int i = 0; i + warmup < microbatches; ++i) {
      F(i + warmup);
      BW(i);
    }
    for (int mb = std::max(0, microbatches - warmup); mb < microbatches; ++mb) {
      BW(mb);
      // In the cool-down each B is followed by one deferred W, filling the
      // gap until the next B arrives.
      if (!waiting.empty() && mb >= microbatches - warmup) {
        order.push_back({PassKind::WeightGrad, waiting.front(), 0});
        waiting.erase(waiting.begin());
      }
    }
    for (int mb : waiting)
      order.push_back({PassKind::WeightGrad, mb, 0});
    return order;
  }
  }
  return absl::InternalError("unknown schedule");
}

int peakInFlight(const std::vector<PipelineSlot> &order) {
  int live = 0, peak = 0;
  for (const PipelineSlot &s : order) {
    if (s.pass == PassKind::Forward)
      peak = std::max(peak, ++live);
    else if (s.pass == PassKind::Backward)
      --live;
  }
  return peak;
}

int peakPendingWeightGrads(const std::vector<PipelineSlot> &order) {
  bool split = std::any_of(order.begin(), order.end(), [](const auto &s) {
    return s.pass == PassKind::WeightGrad;
  });
  if (!split)
    return 0;
  int pending = 0, peak = 0;
  for (const PipelineSlot &s : order) {
    if (s.pass == PassKind::Backward)
      peak = std::max(peak, ++pending);
    else if (s.pass == PassKind::WeightGrad)
      --pending;
  }
  return peak;
}

StashFrames planStashFrames(const std::vector<PipelineSlot> &order,
                            const std::vector<double> &stashBytes) {
  int v = static_cast<int>(stashBytes.size());
  StashFrames best;
  if (v == 0)
    return best;
  std::vector<int> bySize(v);
  std::iota(bySize.begin(), bySize.end(), 0);
  std::stable_sort(bySize.begin(), bySize.end(), [&](int a, int b) {
    return stashBytes[a] < stashBytes[b];
  });
  bool found = false;
  // cut[i]: a new class starts at the i-th chunk in size order.
  auto evaluate = [&](const std::vector<char> &cut) {
    StashFrames f;
    f.classOf.assign(v, 0);
    f.frameBytes.assign(1, 0);
    for (int i = 0; i < v; ++i) {
      if (i > 0 && cut[i])
        f.frameBytes.push_back(0);
      f.classOf[bySize[i]] = static_cast<int>(f.frameBytes.size()) - 1;
      f.frameBytes.back() =
          std::max(f.frameBytes.back(), stashBytes[bySize[i]]);
    }
    size_t classes = f.frameBytes.size();
    std::vector<int64_t> held(classes, 0);
    f.frames.assign(classes, 0);
    for (const PipelineSlot &s : order) {
      if (s.pass == PassKind::WeightGrad || s.chunk < 0 || s.chunk >= v)
        continue;
      int k = f.classOf[s.chunk];
      held[k] += s.pass == PassKind::Forward ? 1 : -1;
      f.frames[k] = std::max(f.frames[k], held[k]);
    }
    for (size_t k = 0; k < classes; ++k)
      f.bytes += f.frameBytes[k] * static_cast<double>(f.frames[k]);
    if (!found || f.bytes < best.bytes) {
      best = std::move(f);
      found = true;
    }
  };
  std::vector<char> cut(v, 0);
  if (v <= 16) {
    for (uint32_t mask = 0; mask < (1u << (v - 1)); ++mask) {
      for (int i = 1; i < v; ++i)
        cut[i] = mask >> (i - 1) & 1;
      evaluate(cut);
    }
  } else {
    evaluate(cut);
    for (int i = 1; i < v; ++i) {
      cut[i] = 1;
      evaluate(cut);
      cut[i] = 0;
    }
  }
  return best;
}

} // namespace cleave::cost
