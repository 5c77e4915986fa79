//===- FlashAttentionTest.cpp - Fused attention against the unfused ops ---===//

#include "cleave/runtime/kernels/FlashAttention.h"

#include "GradCheck.h"

#include <cmath>
#include <limits>

using namespace cleave::kernels;
using namespace cleave::kernels::test;

namespace {

/// The unfused ops in double: p = softmax(scale q k^T, masked), out = p v,
/// and the gradients through them (as graph.matmul, graph.softmax and
/// their backward rules compute them).
struct Reference {
  Tensor out, dq, dk, dv;
};

Reference unfused(const Tensor &q, const Tensor &k, const Tensor &v,
                  const Tensor &dOut, const FlashAttentionOptions &o) {
  int64_t B = q.shape()[0], H = q.shape()[1], S = q.shape()[2],
          D = q.shape()[3], Hk = k.shape()[1], T = k.shape()[2];
  RowOffsets shift = o.causalShift ? *o.causalShift : RowOffsets(T - S);
  Reference r{Tensor(q.shape(), 0.0f), Tensor(q.shape(), 0.0f),
              Tensor(k.shape(), 0.0f), Tensor(v.shape(), 0.0f)};
  auto at = [](const Tensor &t, int64_t b, int64_t h, int64_t i, int64_t x) {
    const Shape &s = t.shape();
    return ((b * s[1] + h) * s[2] + i) * s[3] + x;
  };
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      int64_t g = h / (H / Hk);
      std::vector<double> p(S * T, 0.0), dp(S * T, 0.0);
      for (int64_t i = 0; i < S; ++i) {
        int64_t seen = o.causal ? std::clamp<int64_t>(shift(i) + 1, 0, T) : T;
        const float *mask =
            o.mask.data ? o.mask.head(b * H + h) + i * o.mask.rowStride
                        : nullptr;
        double mx = -std::numeric_limits<double>::infinity(), sum = 0;
        for (int64_t j = 0; j < seen; ++j) {
          double s = 0;
          for (int64_t x = 0; x < D; ++x)
            s += double(q[at(q, b, h, i, x)]) * k[at(k, b, g, j, x)];
          p[i * T + j] =
              s * o.scale + (mask ? double(maskedScore(mask[j])) : 0.0);
          mx = std::max(mx, p[i * T + j]);
        }
        if (mx == -std::numeric_limits<double>::infinity())
          seen = 0; // every key masked: output 0, no gradient
        for (int64_t j = 0; j < seen; ++j)
          sum += p[i * T + j] = std::exp(p[i * T + j] - mx);
        for (int64_t j = 0; j < seen; ++j)
          p[i * T + j] /= sum;
        for (int64_t x = 0; x < D; ++x) {
          double acc = 0;
          for (int64_t j = 0; j < seen; ++j)
            acc += p[i * T + j] * v[at(v, b, g, j, x)];
          r.out[at(q, b, h, i, x)] = float(acc);
        }
        // dp = dOut v^T; ds = p (dp - sum_j p dp).
        double dot = 0;
        for (int64_t j = 0; j < seen; ++j) {
          double s = 0;
          for (int64_t x = 0; x < D; ++x)
            s += double(dOut[at(q, b, h, i, x)]) * v[at(v, b, g, j, x)];
          dp[i * T + j] = s;
          dot += p[i * T + j] * s;
        }
        for (int64_t j = 0; j < seen; ++j) {
          double ds = p[i * T + j] * (dp[i * T + j] - dot) * o.scale;
          for (int64_t x = 0; x < D; ++x) {
            r.dq[at(q, b, h, i, x)] += float(ds * k[at(k, b, g, j, x)]);
            r.dk[at(k, b, g, j, x)] += float(ds * q[at(q, b, h, i, x)]);
            r.dv[at(v, b, g, j, x)] +=
                float(p[i * T + j] * dOut[at(q, b, h, i, x)]);
          }
        }
      }
    }
  return r;
}

struct Case {
  int64_t batch, heads, kvHeads, queries, keys, dim;
  bool causal;
  std::optional<RowOffsets> shift;
  int64_t blockQueries, blockKeys;
};

void check(const Case &c, uint64_t seed,
           const std::optional<Tensor> &mask = std::nullopt) {
  SCOPED_TRACE(::testing::Message()
               << "heads " << c.heads << "/" << c.kvHeads << ", " << c.queries
               << "x" << c.keys << " dim " << c.dim << (c.causal ? " causal" : "")
               << ", blocks " << c.blockQueries << "x" << c.blockKeys);
  Tensor q = randomTensor({c.batch, c.heads, c.queries, c.dim}, seed);
  Tensor k = randomTensor({c.batch, c.kvHeads, c.keys, c.dim}, seed + 1);
  Tensor v = randomTensor({c.batch, c.kvHeads, c.keys, c.dim}, seed + 2);
  Tensor dOut = randomTensor(q.shape(), seed + 3);
  FlashAttentionOptions o;
  o.scale = 1.0f / std::sqrt(float(c.dim));
  o.causal = c.causal;
  o.causalShift = c.shift;
  o.blockQueries = c.blockQueries;
  o.blockKeys = c.blockKeys;
  if (mask)
    o.mask = attentionMask(mask->data(), mask->shape(), q.shape(), c.keys);
  Tensor out = poisoned(q.shape()), lse = poisoned({c.batch, c.heads, c.queries});
  flashAttention(q, k, v, o, out, lse);
  Tensor dq = poisoned(q.shape()), dk = poisoned(k.shape()),
         dv = poisoned(v.shape());
  flashAttentionBackward(q, k, v, out, lse, dOut, o, dq, dk, dv);
  Reference r = unfused(q, k, v, dOut, o);
  EXPECT_TRUE(allClose(out, r.out, 1e-5, 1e-6));
  EXPECT_TRUE(allClose(dq, r.dq, 1e-4, 1e-5));
  EXPECT_TRUE(allClose(dk, r.dk, 1e-4, 1e-5));
  EXPECT_TRUE(allClose(dv, r.dv, 1e-4, 1e-5));
}

TEST(FlashAttention, MatchesTheUnfusedOpsAndTheirGradients) {
  std::vector<Case> cases = {
      // Blocks that do not divide the lengths, one block, one row blocks.
      {2, 2, 2, 13, 13, 8, false, std::nullopt, 4, 5},
      {1, 3, 3, 7, 11, 4, false, std::nullopt, 64, 64},
      {1, 2, 2, 9, 9, 16, false, std::nullopt, 1, 1},
      // Causal, square and with cached keys (keys > queries).
      {2, 2, 2, 17, 17, 8, true, std::nullopt, 4, 4},
      {1, 2, 2, 6, 15, 8, true, std::nullopt, 4, 3},
      // Grouped-query attention: four query heads on two key/value heads.
      {1, 4, 2, 12, 12, 8, true, std::nullopt, 5, 4},
      {2, 6, 1, 5, 9, 4, false, std::nullopt, 2, 4},
  };
  uint64_t seed = 10;
  for (const Case &c : cases)
    check(c, seed += 4);
}

TEST(FlashAttention, MaskedRowsAndContextParallelBlocks) {
  // More queries than keys under the causal mask: the first queries see
  // nothing, get 0 and lse -inf, and pass no gradient.
  Case c{1, 1, 1, 6, 3, 4, true, std::nullopt, 2, 2};
  check(c, 3);
  Tensor q = randomTensor({1, 1, 6, 4}, 3), k = randomTensor({1, 1, 3, 4}, 4),
         v = randomTensor({1, 1, 3, 4}, 5);
  FlashAttentionOptions o;
  o.causal = true;
  Tensor out = poisoned(q.shape()), lse = poisoned({1, 1, 6});
  flashAttention(q, k, v, o, out, lse);
  for (int64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(lse[i], -std::numeric_limits<float>::infinity()) << i;
    for (int64_t x = 0; x < 4; ++x)
      EXPECT_EQ(out[i * 4 + x], 0.0f);
  }
  // Context parallelism: the third block of 4 queries of a 16-long
  // sequence sees keys up to its own position (shift 8).
  check({1, 2, 2, 4, 16, 8, true, RowOffsets(8), 3, 5}, 21);
  // Zig-zag context parallelism, 4 devices over 16 positions (8 chunks of
  // 2): device g's 4 queries are chunk g then chunk 7 - g; blocks that
  // straddle the two chunks and blocks that do not.
  for (int64_t g = 0; g < 4; ++g) {
    check({1, 2, 2, 4, 16, 8, true, RowOffsets::zigzag(4, g, 4), 3, 5},
          30 + g);
    check({1, 2, 1, 4, 16, 8, true, RowOffsets::zigzag(4, g, 4), 2, 2},
          40 + g);
  }
}

/// A mask of `shape` (last dimension the keys) whose entries are random
/// in [-2, 2], with every `every`-th key of each row at -inf (padding) when
/// `every` is set.
Tensor maskOf(const Shape &shape, uint64_t seed, int64_t every = 0) {
  Tensor m = randomTensor(shape, seed);
  int64_t keys = shape.back();
  for (int64_t e = 0; e < m.numElements(); ++e) {
    m[e] *= 2.0f;
    if (every && (e % keys) % every == every - 1)
      m[e] = -std::numeric_limits<float>::infinity();
  }
  return m;
}

TEST(FlashAttention, AdditiveMasksOfEveryBroadcast) {
  // Per batch entry, broadcast over heads (PyTorch's padding + causal).
  check({2, 4, 4, 9, 9, 8, false, std::nullopt, 4, 4}, 50,
        maskOf({2, 1, 9, 9}, 51, 4));
  // One row for every query (key padding), with the causal mask too.
  check({2, 2, 2, 7, 7, 8, true, std::nullopt, 3, 2}, 52,
        maskOf({2, 1, 1, 7}, 53, 3));
  // One mask for all, keys longer than queries, grouped-query heads.
  check({1, 4, 2, 5, 11, 4, false, std::nullopt, 2, 4}, 54,
        maskOf({1, 1, 5, 11}, 55));
  // A full mask per head (relative-position biases).
  check({2, 3, 3, 6, 6, 4, true, std::nullopt, 64, 64}, 56,
        maskOf({2, 3, 6, 6}, 57, 5));
  // Broadcast over the batch, kept per head.
  check({2, 3, 1, 6, 6, 4, false, std::nullopt, 4, 4}, 58,
        maskOf({1, 3, 6, 6}, 59));
}

TEST(FlashAttention, FullyMaskedRowsGetZeroAndLargeNegativeMasksAreUniform) {
  Tensor q = randomTensor({1, 1, 3, 4}, 60), k = randomTensor({1, 1, 5, 4}, 61),
         v = randomTensor({1, 1, 5, 4}, 62);
  float inf = std::numeric_limits<float>::infinity();
  float lowest = std::numeric_limits<float>::lowest();
  // Row 0: every key -inf; row 1: every key at the lowest float (as the
  // exporters write the mask), the same; row 2: nothing masked.
  Tensor mask({1, 1, 3, 5}, 0.0f);
  for (int64_t j = 0; j < 5; ++j)
    mask[j] = -inf, mask[5 + j] = lowest;
  FlashAttentionOptions o;
  o.blockKeys = 2;
  o.mask = attentionMask(mask.data(), mask.shape(), q.shape(), 5);
  Tensor out = poisoned(q.shape()), lse = poisoned({1, 1, 3});
  flashAttention(q, k, v, o, out, lse);
  EXPECT_EQ(lse[0], -inf);
  EXPECT_EQ(lse[1], -inf);
  for (int64_t x = 0; x < 8; ++x)
    EXPECT_EQ(out[x], 0.0f);
  // A row masked at -1e4 and below but for one key reads that key's value
  // alone, its gradients with the rest (the reference) too.
  mask[10] = -1e4f, mask[11] = -1e9f, mask[12] = lowest, mask[13] = -inf;
  o.mask = attentionMask(mask.data(), mask.shape(), q.shape(), 5);
  flashAttention(q, k, v, o, out, lse);
  for (int64_t x = 0; x < 4; ++x)
    EXPECT_NEAR(out[8 + x], v[16 + x], 1e-6);
  check({1, 1, 1, 3, 5, 4, false, std::nullopt, 2, 2}, 60, mask);
}

TEST(FlashAttention, MasksThatDoNotBroadcastAreRefused) {
  Shape q{2, 3, 4, 6, 8};
  EXPECT_NO_THROW(attentionMask(nullptr, {2, 1, 1, 6, 7}, q, 7));
  EXPECT_NO_THROW(attentionMask(nullptr, {1, 3, 4, 1, 7}, q, 7));
  // Kept dimensions 0 and 2 around a broadcast one: not one run.
  EXPECT_THROW(attentionMask(nullptr, {2, 1, 4, 6, 7}, q, 7),
               std::invalid_argument);
  EXPECT_THROW(attentionMask(nullptr, {2, 3, 4, 6, 6}, q, 7),
               std::invalid_argument); // columns are not the keys
  EXPECT_THROW(attentionMask(nullptr, {2, 3, 4, 3, 7}, q, 7),
               std::invalid_argument); // rows are neither 6 nor 1
  EXPECT_THROW(attentionMask(nullptr, {3, 6, 7}, q, 7),
               std::invalid_argument); // rank
  AttentionMask m = attentionMask(nullptr, {1, 3, 1, 6, 7}, q, 7);
  EXPECT_EQ(m.div, 4);
  EXPECT_EQ(m.mod, 3);
  EXPECT_EQ(m.plane, 42);
}

/// Scores a causal kernel computes for a block of queries placed by
/// `place` against `keys` keys: the ones it does not mask.
int64_t visibleScores(RowOffsets place, int64_t queries, int64_t keys) {
  int64_t n = 0;
  for (int64_t i = 0; i < queries; ++i)
    n += std::clamp<int64_t>(place(i) + 1, 0, keys);
  return n;
}

TEST(FlashAttention, ZigzagBlocksBalanceTheCausalWork) {
  // 8 devices over 1024 positions: contiguous blocks leave the last
  // device (2 - 1/8) times the average; zig-zag blocks give all the same.
  int64_t n = 8, keys = 1024, rows = keys / n;
  int64_t total = keys * (keys + 1) / 2;
  for (int64_t g = 0; g < n; ++g)
    EXPECT_EQ(visibleScores(RowOffsets::zigzag(rows, g, n), rows, keys) * n,
              total)
        << g;
  double last =
      double(visibleScores(RowOffsets::block(rows, n - 1, n), rows, keys));
  EXPECT_NEAR(last * n / double(total), 2.0 - 1.0 / n, 1e-2);
}

TEST(FlashAttention, RowOffsetsPlaceZigzagChunks) {
  // 2 devices, 8 positions in 4 chunks of 2: device 0 holds positions
  // 0 1 6 7, device 1 holds 2 3 4 5.
  RowOffsets d0 = RowOffsets::zigzag(4, 0, 2), d1 = RowOffsets::zigzag(4, 1, 2);
  EXPECT_EQ((std::vector<int64_t>{d0(0), d0(1), d0(2), d0(3)}),
            (std::vector<int64_t>{0, 1, 6, 7}));
  EXPECT_EQ((std::vector<int64_t>{d1(0), d1(1), d1(2), d1(3)}),
            (std::vector<int64_t>{2, 3, 4, 5}));
  // The first query of device 0 that sees key 3 is row 2 (position 6).
  EXPECT_EQ(d0.firstAtOrPast(3), 2);
  EXPECT_EQ(d0.firstAtOrPast(0), 0);
  EXPECT_EQ(d1.firstAtOrPast(5), 3);
  EXPECT_EQ(RowOffsets(4).firstAtOrPast(2), 0);
}

TEST(FlashAttention, WrongShapesAreRefused) {
  Tensor q({1, 4, 8, 16}, 0.0f), k({1, 3, 8, 16}, 0.0f), v({1, 3, 8, 16}, 0.0f);
  Tensor out({1, 4, 8, 16}, 0.0f), lse({1, 4, 8}, 0.0f);
  EXPECT_THROW(flashAttention(q, k, v, {}, out, lse), std::invalid_argument);
  Tensor k2({1, 2, 8, 8}, 0.0f);
  EXPECT_THROW(flashAttention(q, k2, k2, {}, out, lse), std::invalid_argument);
  Tensor k4({1, 2, 8, 16}, 0.0f), badLse({1, 4, 7}, 0.0f);
  EXPECT_THROW(flashAttention(q, k4, k4, {}, out, badLse),
               std::invalid_argument);
  FlashAttentionOptions zero;
  zero.blockKeys = 0;
  EXPECT_THROW(flashAttention(q, k4, k4, zero, out, lse), std::invalid_argument);
}

} // namespace
