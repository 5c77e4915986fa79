//===- PipelineSchedule.cpp - Per-stage order of pipeline passes ----------===//

#include "cleave/cost_model/PipelineSchedule.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

#include <algorithm>
#include <functional>
#include <map>
#include <tuple>
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

namespace {

/// Up to this many chunks the peaks of every set of chunks are tabulated
/// in one walk of the order (2^(chunks-1) updates per pass).
constexpr int kTabulatedChunks = 10;

/// The most microbatches the chunks of each set (bit i: chunk i) hold at
/// once under `order`.
std::vector<int32_t> chunkSetPeaks(const std::vector<PipelineSlot> &order,
                                   int chunks) {
  uint32_t all = (1u << chunks) - 1;
  std::vector<int32_t> held(all + 1, 0), peak(all + 1, 0);
  for (const PipelineSlot &s : order) {
    if (s.pass == PassKind::WeightGrad || s.chunk < 0 || s.chunk >= chunks)
      continue;
    uint32_t bit = 1u << s.chunk, rest = all & ~bit;
    bool forward = s.pass == PassKind::Forward;
    // Every set holding the chunk: the subsets of the others, with it.
    for (uint32_t sub = rest;; sub = (sub - 1) & rest) {
      uint32_t set = sub | bit;
      if (forward)
        peak[set] = std::max(peak[set], ++held[set]);
      else
        --held[set];
      if (sub == 0)
        break;
    }
  }
  return peak;
}

/// The split with the fewest bytes, given the peak of any set of chunks.
StashFrames bestFrames(const std::function<int64_t(uint32_t)> &peakOf,
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
  // cut[i]: a new class starts at the i-th chunk in size order. A class's
  // frames are the peak of its set of chunks; the bytes are summed class
  // by class, smallest first, and the first split of the fewest bytes is
  // kept (in the order below), so the lowering and the cost model agree.
  auto bytesOf = [&](const std::vector<char> &cut) {
    double bytes = 0, frame = 0;
    uint32_t set = 0;
    for (int i = 0; i <= v; ++i) {
      if (i == v || (i > 0 && cut[i])) {
        bytes += frame * static_cast<double>(peakOf(set));
        if (i == v)
          break;
        frame = 0;
        set = 0;
      }
      set |= 1u << bySize[i];
      frame = std::max(frame, stashBytes[bySize[i]]);
    }
    return bytes;
  };
  std::vector<char> cut(v, 0), bestCut;
  double fewest = 0;
  auto evaluate = [&] {
    double bytes = bytesOf(cut);
    if (bestCut.empty() || bytes < fewest) {
      fewest = bytes;
      bestCut = cut;
    }
  };
  if (v <= 16) {
    for (uint32_t mask = 0; mask < (1u << (v - 1)); ++mask) {
      for (int i = 1; i < v; ++i)
        cut[i] = mask >> (i - 1) & 1;
      evaluate();
    }
  } else {
    evaluate();
    for (int i = 1; i < v; ++i) {
      cut[i] = 1;
      evaluate();
      cut[i] = 0;
    }
  }
  best.classOf.assign(v, 0);
  std::vector<uint32_t> sets(1, 0);
  best.frameBytes.assign(1, 0);
  for (int i = 0; i < v; ++i) {
    if (i > 0 && bestCut[i]) {
      best.frameBytes.push_back(0);
      sets.push_back(0);
    }
    best.classOf[bySize[i]] = static_cast<int>(best.frameBytes.size()) - 1;
    best.frameBytes.back() =
        std::max(best.frameBytes.back(), stashBytes[bySize[i]]);
    sets.back() |= 1u << bySize[i];
  }
  for (uint32_t set : sets)
    best.frames.push_back(peakOf(set));
  best.bytes = fewest;
  return best;
}

} // namespace

StashFrames planStashFrames(const std::vector<PipelineSlot> &order,
                            const std::vector<double> &stashBytes) {
  int v = static_cast<int>(stashBytes.size());
  if (v <= kTabulatedChunks) {
    std::vector<int32_t> peaks = chunkSetPeaks(order, v);
    return bestFrames([&](uint32_t set) { return peaks[set]; }, stashBytes);
  }
  // Many chunks: walk the order for each set asked about.
  return bestFrames(
      [&](uint32_t set) {
        int64_t held = 0, peak = 0;
        for (const PipelineSlot &s : order) {
          if (s.pass == PassKind::WeightGrad || s.chunk < 0 || s.chunk >= v ||
              !(set >> s.chunk & 1))
            continue;
          held += s.pass == PassKind::Forward ? 1 : -1;
          peak = std::max(peak, held);
        }
        return peak;
      },
      stashBytes);
}

absl::StatusOr<StashFrames>
planStashFrames(ScheduleKind kind, int stages, int stage, int microbatches,
                const std::vector<double> &stashBytes) {
  int v = static_cast<int>(stashBytes.size());
  if (v > kTabulatedChunks) {
    absl::StatusOr<std::vector<PipelineSlot>> order =
        pipelineOrder(kind, stages, stage, microbatches, v);
    if (!order.ok())
      return order.status();
    return planStashFrames(*order, stashBytes);
  }
  // A search prices the same (schedule, stage, microbatches, chunks) for
  // every tp, ZeRO stage and recomputation mode: the order and the peaks
  // of its chunk sets do not depend on them. One cache per thread, bounded.
  using Key = std::tuple<int, int, int, int, int>;
  thread_local std::map<Key, std::vector<int32_t>> cache;
  Key key{static_cast<int>(kind), stages, stage, microbatches, v};
  auto it = cache.find(key);
  if (it == cache.end()) {
    absl::StatusOr<std::vector<PipelineSlot>> order =
        pipelineOrder(kind, stages, stage, microbatches, v);
    if (!order.ok())
      return order.status();
    if (cache.size() >= 4096)
      cache.clear();
    it = cache.emplace(key, chunkSetPeaks(*order, v)).first;
  }
  const std::vector<int32_t> &peaks = it->second;
  return bestFrames([&](uint32_t set) { return peaks[set]; }, stashBytes);
}

} // namespace cleave::cost
