//===- PagedAttentionTest.cpp - Paged cache kernels against FlashAttention -===//
//
// Sequences' keys and values written into a shuffled pool of blocks with
// cacheWrite, then read back by pagedAttention: every query must get what
// the contiguous causal attention (flashAttention, itself checked against
// the unfused ops) gives over that sequence's keys alone.
//
//===----------------------------------------------------------------------===//

#include "cleave/runtime/kernels/FlashAttention.h"
#include "cleave/runtime/kernels/PagedAttention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>

using namespace cleave::kernels;

namespace {

Tensor randomTensor(Shape shape, std::mt19937 &rng) {
  std::normal_distribution<float> normal;
  Tensor t(std::move(shape));
  for (float &x : t.values())
    x = normal(rng);
  return t;
}

/// A pool of `blocks` blocks of `blockSize` rows; each sequence of
/// `lengths` gets its blocks from a shuffled list, so neighbours in a
/// sequence are far apart in the pool.
struct Paged {
  Tensor keyCache, valueCache;
  IndexTensor table, lengths;
  Tensor keys, values; // per sequence, contiguous: [B][kvHeads, L_b, dim]
  std::vector<Tensor> keysOf, valuesOf;
};

Paged makePaged(const std::vector<int64_t> &lengths, int64_t blockSize,
                int64_t kvHeads, int64_t dim, std::mt19937 &rng) {
  int64_t batch = lengths.size();
  int64_t maxBlocks = 0, blocks = 0;
  for (int64_t l : lengths) {
    maxBlocks = std::max(maxBlocks, (l + blockSize - 1) / blockSize);
    blocks += (l + blockSize - 1) / blockSize;
  }
  blocks += 3; // free blocks the sequences never read
  std::vector<int64_t> order(blocks);
  for (int64_t i = 0; i < blocks; ++i)
    order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  Paged p{Tensor({blocks, blockSize, kvHeads, dim}, 0.0f),
          Tensor({blocks, blockSize, kvHeads, dim}, 0.0f),
          IndexTensor({batch, std::max<int64_t>(maxBlocks, 1)}, -1),
          IndexTensor({batch}, 0), Tensor({1}), Tensor({1}), {}, {}};
  int64_t next = 0;
  for (int64_t b = 0; b < batch; ++b) {
    p.lengths[b] = lengths[b];
    for (int64_t i = 0; i * blockSize < lengths[b]; ++i)
      p.table[b * p.table.shape()[1] + i] = order[next++];
    // The sequence's rows [L, kvHeads, dim], written through their slots.
    Tensor rowsK = randomTensor({lengths[b], kvHeads, dim}, rng);
    Tensor rowsV = randomTensor({lengths[b], kvHeads, dim}, rng);
    IndexTensor slots({lengths[b]});
    for (int64_t pos = 0; pos < lengths[b]; ++pos)
      slots[pos] = p.table[b * p.table.shape()[1] + pos / blockSize] *
                       blockSize +
                   pos % blockSize;
    cacheWrite(rowsK.ref(), slots.ref(), p.keyCache.ref());
    cacheWrite(rowsV.ref(), slots.ref(), p.valueCache.ref());
    // The same as [1, kvHeads, L, dim] for flashAttention.
    Tensor k({1, kvHeads, lengths[b], dim}), v({1, kvHeads, lengths[b], dim});
    for (int64_t pos = 0; pos < lengths[b]; ++pos)
      for (int64_t h = 0; h < kvHeads; ++h)
        for (int64_t d = 0; d < dim; ++d) {
          k[(h * lengths[b] + pos) * dim + d] = rowsK[(pos * kvHeads + h) * dim + d];
          v[(h * lengths[b] + pos) * dim + d] = rowsV[(pos * kvHeads + h) * dim + d];
        }
    p.keysOf.push_back(std::move(k));
    p.valuesOf.push_back(std::move(v));
  }
  return p;
}

/// pagedAttention against flashAttention per sequence; `tokens` queries a
/// sequence, the last at its last position.
void expectMatchesContiguous(const std::vector<int64_t> &lengths,
                             int64_t tokens, int64_t heads, int64_t kvHeads,
                             int64_t dim, int64_t blockSize) {
  std::mt19937 rng(42);
  Paged p = makePaged(lengths, blockSize, kvHeads, dim, rng);
  int64_t batch = lengths.size();
  Tensor q = randomTensor({batch, heads, tokens, dim}, rng);
  Tensor out({batch, heads, tokens, dim}, 7.0f);
  float scale = 1.0f / std::sqrt(float(dim));
  pagedAttention(q.ref(), p.keyCache.ref(), p.valueCache.ref(), p.table.ref(),
                 p.lengths.ref(), scale, out.ref());
  for (int64_t b = 0; b < batch; ++b) {
    // The queries at positions >= 0 against the sequence's keys.
    int64_t seen = std::min(tokens, lengths[b]);
    int64_t first = tokens - seen;
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t t = 0; t < first; ++t)
        for (int64_t d = 0; d < dim; ++d)
          EXPECT_EQ(out[((b * heads + h) * tokens + t) * dim + d], 0.0f)
              << "a query before the sequence's first position sees nothing";
    if (seen == 0)
      continue;
    Tensor qb({1, heads, seen, dim}), ob({1, heads, seen, dim}),
        lse({1, heads, seen});
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t t = 0; t < seen; ++t)
        for (int64_t d = 0; d < dim; ++d)
          qb[(h * seen + t) * dim + d] =
              q[((b * heads + h) * tokens + first + t) * dim + d];
    FlashAttentionOptions o;
    o.scale = scale;
    o.causal = true;
    flashAttention(qb.ref(), p.keysOf[b].ref(), p.valuesOf[b].ref(), o,
                   ob.ref(), lse.ref());
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t t = 0; t < seen; ++t)
        for (int64_t d = 0; d < dim; ++d)
          EXPECT_NEAR(out[((b * heads + h) * tokens + first + t) * dim + d],
                      ob[(h * seen + t) * dim + d], 2e-5)
              << "sequence " << b << " head " << h << " query " << t;
  }
}

TEST(PagedAttention, DecodeStepMatchesContiguousCausalAttention) {
  // One new token a sequence, grouped-query heads, lengths across blocks.
  expectMatchesContiguous({5, 17, 1, 8}, /*tokens=*/1, /*heads=*/4,
                          /*kvHeads=*/2, /*dim=*/16, /*blockSize=*/4);
}

TEST(PagedAttention, PrefillMatchesContiguousCausalAttention) {
  // A prompt's tokens at once: each sees the keys up to its position.
  expectMatchesContiguous({9, 12}, /*tokens=*/9, /*heads=*/2, /*kvHeads=*/2,
                          /*dim=*/8, /*blockSize=*/4);
}

TEST(PagedAttention, ShortAndEmptySequencesGetZeros) {
  // Length 2 with 4 tokens: the first two queries sit before position 0;
  // length 0 is an empty batch slot.
  expectMatchesContiguous({2, 0, 6}, /*tokens=*/4, /*heads=*/4, /*kvHeads=*/1,
                          /*dim=*/8, /*blockSize=*/2);
}

TEST(CacheWrite, WritesRowsAtTheirSlotsAndSkipsNegativeOnes) {
  Tensor cache({2, 2, 1, 2}, 0.0f);
  Tensor rows({3, 1, 2}, {1, 2, 3, 4, 5, 6});
  IndexTensor slots({3}, {3, -1, 0});
  cacheWrite(rows.ref(), slots.ref(), cache.ref());
  EXPECT_EQ(cache.values(), (std::vector<float>{5, 6, 0, 0, 0, 0, 1, 2}));
}

TEST(CacheWrite, RefusesASlotBeyondThePool) {
  Tensor cache({2, 2, 1, 2}, 0.0f);
  Tensor rows({1, 1, 2}, {1, 2});
  IndexTensor slots({1}, {4});
  EXPECT_THROW(cacheWrite(rows.ref(), slots.ref(), cache.ref()),
               std::invalid_argument);
}

TEST(PagedAttention, RefusesLengthsBeyondTheTableAndBlocksBeyondThePool) {
  Tensor cache({2, 2, 1, 2}, 0.0f), q({1, 1, 1, 2}, 1.0f), out({1, 1, 1, 2});
  IndexTensor table({1, 1}, {0}), tooLong({1}, {3});
  EXPECT_THROW(pagedAttention(q.ref(), cache.ref(), cache.ref(), table.ref(),
                              tooLong.ref(), 1.0f, out.ref()),
               std::invalid_argument);
  IndexTensor badBlock({1, 1}, {2}), length({1}, {1});
  EXPECT_THROW(pagedAttention(q.ref(), cache.ref(), cache.ref(),
                              badBlock.ref(), length.ref(), 1.0f, out.ref()),
               std::invalid_argument);
}

} // namespace
