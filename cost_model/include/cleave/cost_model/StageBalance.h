//===- StageBalance.h - Layers per pipeline stage ---------------*- C++ -*-===//
//
// A pipeline runs at the pace of its slowest stage, and the stages are not
// alike: the first also embeds the tokens, the last runs the head over the
// whole vocabulary and the loss. With a large vocabulary the head costs
// layers' worth of compute (LLaMA-3's 128k vocabulary at hidden 4096: 2.6
// layers), so an even split of the layers leaves the last stage slowest.
// This chooses, for contiguous chunks of layers, the counts that minimise
// the slowest chunk (the one-dimensional stage partition of PipeDream and
// Alpa's inter-op pass), keeping the even split where it is as fast.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_COST_MODEL_STAGEBALANCE_H
#define CLEAVE_COST_MODEL_STAGEBALANCE_H

#include <cstdint>
#include <vector>

namespace cleave::cost {

/// The even split: every chunk gets layers / chunks, and the spare layers go
/// to the last chunks (the first carries the embedding and, under 1F1B,
/// the most in-flight activations).
std::vector<int64_t> evenLayerSplit(int64_t layers, int64_t chunks);

/// Layers per chunk, in order, each at least one, that minimise the
/// largest chunk time: the sum of its layers' `layerSeconds`, plus
/// `firstExtra` on the first chunk and `lastExtra` on the last. Exact
/// (bisection on the bottleneck with a greedy check, which is exact for
/// contiguous partitions), O(layers) per step. Returns the even split
/// where that is as fast; an empty vector when there are fewer layers than
/// chunks.
std::vector<int64_t> balanceLayers(const std::vector<double> &layerSeconds,
                                   double firstExtra, double lastExtra,
                                   int64_t chunks);

/// The most work of one stage when chunk c of `split` runs on stage
/// c % stages (the interleaved schedule's round robin): the sum of its
/// chunks' times, the first extra on chunk 0 and the last on the last.
double busiestStage(const std::vector<double> &layerSeconds, double firstExtra,
                    double lastExtra, const std::vector<int64_t> &split,
                    int64_t stages);

/// `split` improved for the interleaved schedule, where a stage runs all its
/// chunks in turn: layers move one at a time across chunk boundaries while
/// that lowers the busiest stage (busiestStage), or keeps it and lowers
/// the slowest chunk (which bounds the pipeline's fill and drain). A local
/// search from `split` (balanceLayers' chunks or the even split): exact
/// for neither objective, never worse than where it starts.
std::vector<int64_t> refineForStages(const std::vector<double> &layerSeconds,
                                     double firstExtra, double lastExtra,
                                     std::vector<int64_t> split,
                                     int64_t stages);

/// refineForStages where chunk c's layers cost layerSecondsByChunk[c]
/// (one vector of every layer's time per chunk): stages that recompute
/// activations (ParallelConfig::stageRecompute) run the same layers
/// slower. Returns `split` unchanged when the table does not have a row
/// per chunk.
std::vector<int64_t>
refineForChunkCosts(const std::vector<std::vector<double>> &layerSecondsByChunk,
                    double firstExtra, double lastExtra,
                    std::vector<int64_t> split, int64_t stages);

/// The largest chunk time of a split (see balanceLayers).
double slowestChunk(const std::vector<double> &layerSeconds, double firstExtra,
                    double lastExtra, const std::vector<int64_t> &split);

} // namespace cleave::cost

#endif // CLEAVE_COST_MODEL_STAGEBALANCE_H
