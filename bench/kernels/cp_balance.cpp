//===- cp_balance.cpp - Causal attention work per context-parallel rank ---===//
//
// Times the fused attention kernels (forward and backward, the CPU
// FlashAttention-2 blocks) on each context-parallel rank's block of
// queries against the whole sequence of keys, with the blocks contiguous
// and zig-zag, one rank after another in this one process so that the
// layouts are measured side by side on the same core. Prints one line per
// layout and rank: milliseconds and the scores the kernel did not skip.
//
//   cleave-bench-cp-balance SEQ CP HEADS DIM REPEATS
//
//===----------------------------------------------------------------------===//

#include "cleave/runtime/kernels/FlashAttention.h"
#include "cleave/runtime/kernels/SequenceBlocks.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

using namespace cleave::kernels;

namespace {

std::vector<float> randomValues(int64_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(gen);
  return v;
}

/// Unmasked scores of `rows` queries placed by `place` against `keys`.
int64_t visibleScores(RowOffsets place, int64_t rows, int64_t keys) {
  int64_t n = 0;
  for (int64_t i = 0; i < rows; ++i)
    n += std::clamp<int64_t>(place(i) + 1, 0, keys);
  return n;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: %s SEQ CP HEADS DIM REPEATS\n", argv[0]);
    return 2;
  }
  int64_t seq = std::atoll(argv[1]), cp = std::atoll(argv[2]),
          heads = std::atoll(argv[3]), dim = std::atoll(argv[4]),
          repeats = std::atoll(argv[5]);
  if (seq <= 0 || cp <= 0 || heads <= 0 || dim <= 0 || repeats <= 0 ||
      seq % (2 * cp) != 0) {
    std::fprintf(stderr, "error: SEQ must be a positive multiple of 2 x CP, "
                         "and CP, HEADS, DIM, REPEATS positive\n");
    return 2;
  }
  int64_t rows = seq / cp;
  Shape qShape{1, heads, rows, dim}, kShape{1, heads, seq, dim};
  std::vector<float> q = randomValues(heads * rows * dim, 1),
                     k = randomValues(heads * seq * dim, 2),
                     v = randomValues(heads * seq * dim, 3),
                     dOut = randomValues(heads * rows * dim, 4);
  std::vector<float> out(q.size()), lse(heads * rows), dq(q.size()),
      dk(k.size()), dv(v.size());
  std::printf("layout rank ms scores\n");
  for (bool zigzag : {false, true}) {
    for (int64_t g = 0; g < cp; ++g) {
      FlashAttentionOptions o;
      o.scale = 1.0f / 8.0f;
      o.causal = true;
      RowOffsets place = zigzag ? RowOffsets::zigzag(rows, g, cp)
                                : RowOffsets::block(rows, g, cp);
      o.causalShift = place;
      double best = 1e300;
      for (int64_t r = 0; r < repeats; ++r) {
        auto start = std::chrono::steady_clock::now();
        flashAttention({q.data(), qShape}, {k.data(), kShape},
                       {v.data(), kShape}, o, {out.data(), qShape},
                       {lse.data(), {1, heads, rows}});
        flashAttentionBackward({q.data(), qShape}, {k.data(), kShape},
                               {v.data(), kShape}, {out.data(), qShape},
                               {lse.data(), {1, heads, rows}},
                               {dOut.data(), qShape}, o, {dq.data(), qShape},
                               {dk.data(), kShape}, {dv.data(), kShape});
        std::chrono::duration<double, std::milli> took =
            std::chrono::steady_clock::now() - start;
        best = std::min(best, took.count());
      }
      std::printf("%s %lld %.3f %lld\n", zigzag ? "zigzag" : "contiguous",
                  static_cast<long long>(g), best,
                  static_cast<long long>(visibleScores(place, rows, seq)));
    }
  }
  return 0;
}
