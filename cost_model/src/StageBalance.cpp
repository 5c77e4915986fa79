//===- StageBalance.cpp - Layers per pipeline stage -----------------------===//

#include "cleave/cost_model/StageBalance.h"

#include <algorithm>

namespace cleave::cost {

std::vector<int64_t> evenLayerSplit(int64_t layers, int64_t chunks) {
  if (chunks <= 0)
    return {};
  std::vector<int64_t> split(chunks, layers / chunks);
  for (int64_t i = 0; i < layers % chunks; ++i)
    split[chunks - 1 - i] += 1;
  return split;
}

namespace {
/// Each chunk's time under `split`: its layers (layer l of chunk c costs
/// cost(c, l)), the first extra on the first chunk and the last on the
/// last.
template <typename Cost>
std::vector<double> chunkSecondsOf(Cost cost, size_t layers, double firstExtra,
                                   double lastExtra,
                                   const std::vector<int64_t> &split) {
  std::vector<double> out;
  size_t layer = 0;
  for (size_t c = 0; c < split.size(); ++c) {
    double t = c == 0 ? firstExtra : 0;
    if (c + 1 == split.size())
      t += lastExtra;
    for (int64_t i = 0; i < split[c] && layer < layers; ++i)
      t += cost(c, layer++);
    out.push_back(t);
  }
  return out;
}

std::vector<double> chunkSeconds(const std::vector<double> &layerSeconds,
                                 double firstExtra, double lastExtra,
                                 const std::vector<int64_t> &split) {
  return chunkSecondsOf(
      [&](size_t, size_t l) { return layerSeconds[l]; }, layerSeconds.size(),
      firstExtra, lastExtra, split);
}

/// The busiest stage's work and the slowest chunk's time of `chunks` (chunk
/// c on stage c % stages).
std::pair<double, double> stageScore(const std::vector<double> &chunks,
                                     int64_t stages) {
  std::vector<double> load(stages, 0.0);
  for (size_t c = 0; c < chunks.size(); ++c)
    load[c % stages] += chunks[c];
  return {*std::max_element(load.begin(), load.end()),
          chunks.empty() ? 0.0
                         : *std::max_element(chunks.begin(), chunks.end())};
}

/// The local search of refineForStages: layer l of chunk c costs
/// cost(c, l). Each move shifts one layer across one boundary and changes
/// only those two chunks' times, so a move is priced by updating them (and
/// their stages' loads) in place, not by summing every chunk again.
template <typename Cost>
std::vector<int64_t> refine(Cost cost, size_t layers, double firstExtra,
                            double lastExtra, std::vector<int64_t> split,
                            int64_t stages) {
  size_t n = split.size();
  if (n < 2 || stages < 1)
    return split;
  std::vector<size_t> start(n, 0);
  for (size_t c = 1; c < n; ++c)
    start[c] = start[c - 1] + split[c - 1];
  auto chunkTime = [&](size_t c) {
    double t = (c == 0 ? firstExtra : 0) + (c + 1 == n ? lastExtra : 0);
    for (size_t l = start[c]; l < start[c] + split[c] && l < layers; ++l)
      t += cost(c, l);
    return t;
  };
  std::vector<double> times(n), loads(stages, 0.0);
  for (size_t c = 0; c < n; ++c) {
    times[c] = chunkTime(c);
    loads[c % stages] += times[c];
  }
  auto score = [&] {
    return std::make_pair(*std::max_element(loads.begin(), loads.end()),
                          *std::max_element(times.begin(), times.end()));
  };
  auto better = [](std::pair<double, double> a, std::pair<double, double> b) {
    const double eps = 1e-12;
    if (a.first < b.first * (1 - eps))
      return true;
    return a.first <= b.first * (1 + eps) && a.second < b.second * (1 - eps);
  };
  auto best = score();
  // Each accepted move lowers the score, so the search ends; the bound
  // only caps pathological inputs.
  for (size_t round = 0; round < 4 * layers + 16; ++round) {
    bool moved = false;
    for (size_t c = 0; c + 1 < n; ++c)
      for (int dir : {-1, 1}) {
        // dir -1: chunk c gives its last layer to c + 1; +1: takes c + 1's
        // first.
        if (split[c] + dir < 1 || split[c + 1] - dir < 1)
          continue;
        size_t layer = dir < 0 ? start[c + 1] - 1 : start[c + 1];
        double dc = dir * cost(c, layer), dn = -dir * cost(c + 1, layer);
        double oldC = times[c], oldN = times[c + 1];
        double oldLoadC = loads[c % stages], oldLoadN = loads[(c + 1) % stages];
        times[c] += dc;
        times[c + 1] += dn;
        loads[c % stages] += dc;
        loads[(c + 1) % stages] += dn;
        auto s = score();
        if (better(s, best)) {
          split[c] += dir;
          split[c + 1] -= dir;
          start[c + 1] += dir;
          best = s;
          moved = true;
        } else {
          times[c] = oldC;
          times[c + 1] = oldN;
          loads[c % stages] = oldLoadC;
          loads[(c + 1) % stages] = oldLoadN;
        }
      }
    if (!moved)
      break;
  }
  return split;
}
} // namespace

double slowestChunk(const std::vector<double> &layerSeconds, double firstExtra,
                    double lastExtra, const std::vector<int64_t> &split) {
  std::vector<double> chunks =
      chunkSeconds(layerSeconds, firstExtra, lastExtra, split);
  return chunks.empty() ? 0 : *std::max_element(chunks.begin(), chunks.end());
}

double busiestStage(const std::vector<double> &layerSeconds, double firstExtra,
                    double lastExtra, const std::vector<int64_t> &split,
                    int64_t stages) {
  if (stages < 1)
    return 0;
  return stageScore(chunkSeconds(layerSeconds, firstExtra, lastExtra, split),
                    stages)
      .first;
}

std::vector<int64_t> refineForStages(const std::vector<double> &layerSeconds,
                                     double firstExtra, double lastExtra,
                                     std::vector<int64_t> split,
                                     int64_t stages) {
  return refine([&](size_t, size_t l) { return layerSeconds[l]; },
                layerSeconds.size(), firstExtra, lastExtra, std::move(split),
                stages);
}

namespace {
/// The chunks of at most `bound` each, every chunk as full as it can be
/// while leaving a layer for each later one (exact for contiguous chunks
/// of nonnegative, chunk-dependent layer costs: filling an earlier chunk
/// more never hurts a later one); empty if there are none.
std::vector<int64_t>
greedyUnder(const std::vector<std::vector<double>> &byChunk, double firstExtra,
            double lastExtra, double bound) {
  size_t chunks = byChunk.size(), layers = byChunk.front().size();
  std::vector<int64_t> split;
  size_t layer = 0;
  for (size_t c = 0; c < chunks; ++c) {
    double load = (c == 0 ? firstExtra : 0) + (c + 1 == chunks ? lastExtra : 0);
    size_t last = c + 1 == chunks ? layers : layers - (chunks - c - 1);
    int64_t taken = 0;
    while (layer < last &&
           (load + byChunk[c][layer] <= bound || c + 1 == chunks)) {
      load += byChunk[c][layer++];
      ++taken;
    }
    if (taken == 0 || load > bound)
      return {};
    split.push_back(taken);
  }
  return split;
}
} // namespace

std::vector<int64_t>
refineForChunkCosts(const std::vector<std::vector<double>> &layerSecondsByChunk,
                    double firstExtra, double lastExtra,
                    std::vector<int64_t> split, int64_t stages) {
  if (layerSecondsByChunk.size() != split.size() || stages < 1)
    return split;
  size_t layers = layerSecondsByChunk.front().size();
  auto times = [&](const std::vector<int64_t> &s) {
    return chunkSecondsOf(
        [&](size_t c, size_t l) { return layerSecondsByChunk[c][l]; }, layers,
        firstExtra, lastExtra, s);
  };
  // The split that minimises the slowest chunk (bisection on it with the
  // greedy check), as a second start: moving one layer at a time stalls
  // where two chunks tie for the slowest.
  double lo = 0, hi = firstExtra + lastExtra;
  for (const std::vector<double> &row : layerSecondsByChunk)
    hi += *std::max_element(row.begin(), row.end()) * row.size();
  if (!greedyUnder(layerSecondsByChunk, firstExtra, lastExtra, hi).empty()) {
    for (int i = 0; i < 60 && hi - lo > 1e-12 * hi; ++i) {
      double mid = (lo + hi) / 2;
      (greedyUnder(layerSecondsByChunk, firstExtra, lastExtra, mid).empty()
           ? lo
           : hi) = mid;
    }
    std::vector<int64_t> tight =
        greedyUnder(layerSecondsByChunk, firstExtra, lastExtra, hi);
    if (!tight.empty() && stageScore(times(tight), stages) <
                              stageScore(times(split), stages))
      split = std::move(tight);
  }
  return refine(
      [&](size_t c, size_t l) { return layerSecondsByChunk[c][l]; }, layers,
      firstExtra, lastExtra, std::move(split), stages);
}

namespace {

/// The work items: the layers, with the embedding folded into the first
/// and the head into the last, so every chunk holds a real layer.
std::vector<double> items(const std::vector<double> &layerSeconds,
                          double firstExtra, double lastExtra) {
  std::vector<double> w = layerSeconds;
  w.front() += firstExtra;
  w.back() += lastExtra;
  return w;
}

/// The fewest contiguous chunks none of which exceeds `bound` (greedy:
/// each chunk takes items while they fit), or chunks + 1 if some item
/// alone exceeds it.
int64_t chunksNeeded(const std::vector<double> &w, double bound,
                     int64_t chunks) {
  int64_t used = 1;
  double load = 0;
  for (double x : w) {
    if (x > bound)
      return chunks + 1;
    if (load + x > bound) {
      ++used;
      load = 0;
    }
    load += x;
  }
  return used;
}

} // namespace

std::vector<int64_t> balanceLayers(const std::vector<double> &layerSeconds,
                                   double firstExtra, double lastExtra,
                                   int64_t chunks) {
  int64_t layers = layerSeconds.size();
  if (chunks <= 0 || layers < chunks)
    return {};
  std::vector<int64_t> even = evenLayerSplit(layers, chunks);
  if (chunks == 1)
    return even;
  std::vector<double> w = items(layerSeconds, firstExtra, lastExtra);
  double lo = *std::max_element(w.begin(), w.end()), hi = 0;
  for (double x : w)
    hi += x;
  // The bottleneck lies in [largest item, total]; 60 halvings pin it to
  // double precision.
  if (chunksNeeded(w, lo, chunks) > chunks) {
    for (int i = 0; i < 60 && hi - lo > 1e-12 * hi; ++i) {
      double mid = (lo + hi) / 2;
      (chunksNeeded(w, mid, chunks) <= chunks ? hi : lo) = mid;
    }
  } else {
    hi = lo;
  }
  double evenWorst = slowestChunk(layerSeconds, firstExtra, lastExtra, even);
  if (evenWorst <= hi * (1 + 1e-9))
    return even;
  // The greedy chunks under the bound, then the largest split further
  // until there are `chunks` of them (splitting never raises a maximum).
  std::vector<int64_t> split;
  double load = 0;
  for (double x : w) {
    if (split.empty() || load + x > hi) {
      split.push_back(0);
      load = 0;
    }
    split.back() += 1;
    load += x;
  }
  while (int64_t(split.size()) < chunks) {
    auto largest = std::max_element(split.begin(), split.end());
    int64_t half = *largest / 2;
    *largest -= half;
    split.insert(largest + 1, half);
  }
  return split;
}

} // namespace cleave::cost
