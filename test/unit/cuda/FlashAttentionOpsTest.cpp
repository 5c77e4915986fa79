//===- FlashAttentionOpsTest.cpp - graph.attention and its gradient -------===//
//
// The CUDA kernels (warp per row, key tiles in shared memory) against the
// CPU's FlashAttention-2 blocks: head sizes over each register layout (up
// to 32, 64, 128, 256 elements a row), causal and not, more keys than
// queries and more queries than keys (rows that see no key), grouped-query
// heads, additive masks of each broadcast, and a block of queries placed
// by query_blocks. The backward runs
// on the forward's own output and log-sum-exp (a two-instruction case).
// Both sum in fp32 in different orders, hence the tolerances.
//
//===----------------------------------------------------------------------===//

#include "CudaOpCase.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

using namespace cleave::test;

namespace {

struct AttentionCase {
  std::vector<int64_t> query, key;
  bool causal;
};

std::vector<int64_t> lseShape(std::vector<int64_t> query) {
  query.pop_back();
  return query;
}

void forwardCase(const AttentionCase &c, uint64_t seed) {
  OpCase t("graph.attention");
  t.f32(c.query, seed);
  t.f32(c.key, seed + 1);
  t.f32(c.key, seed + 2);
  t.output(c.query);
  t.output(lseShape(c.query));
  t.setFloat("scale", 1.0 / std::sqrt(double(c.query.back())));
  t.setBool("causal", c.causal);
  t.expectMatch(2e-4, 2e-5);
}

void backwardCase(const AttentionCase &c, uint64_t seed) {
  OpCase t("graph.attention");
  int32_t q = t.f32(c.query, seed);
  int32_t k = t.f32(c.key, seed + 1);
  int32_t v = t.f32(c.key, seed + 2);
  int32_t out = t.output(c.query);
  int32_t lse = t.output(lseShape(c.query));
  double scale = 1.0 / std::sqrt(double(c.query.back()));
  t.setFloat("scale", scale).setBool("causal", c.causal);
  t.then("graph.attention_grad");
  t.input(q);
  t.input(k);
  t.input(v);
  t.input(out);
  t.input(lse);
  t.f32(c.query, seed + 3);
  t.output(c.query);
  t.output(c.key);
  t.output(c.key);
  t.setFloat("scale", scale).setBool("causal", c.causal);
  t.expectMatch(5e-4, 5e-5);
}

const std::vector<AttentionCase> kCases = {
    {{2, 3, 17, 16}, {2, 3, 17, 16}, true},
    {{1, 2, 40, 64}, {1, 2, 40, 64}, false},
    {{1, 2, 33, 128}, {1, 2, 33, 128}, true},
    {{1, 1, 20, 256}, {1, 1, 20, 256}, true},
    // Keys cached ahead of the queries, and queries with no key.
    {{2, 2, 9, 32}, {2, 2, 25, 32}, true},
    {{1, 2, 30, 32}, {1, 2, 11, 32}, true},
    // Grouped-query attention: 2 key heads, groups of 3 query heads.
    {{2, 2, 3, 21, 48}, {2, 2, 1, 21, 48}, true},
};

/// The attention of rank `coord` of `size` on "cp": its block of 8 causal
/// queries against all 8 x size keys, contiguous or zig-zag, and with
/// `backward` its gradient.
void blockCase(int64_t size, int64_t coord, bool zigzag, bool backward,
               uint64_t seed) {
  std::vector<int64_t> query{1, 2, 8, 32}, key{1, 2, 8 * size, 32};
  OpCase t("graph.attention");
  int32_t q = t.f32(query, seed);
  int32_t k = t.f32(key, seed + 1);
  int32_t v = t.f32(key, seed + 2);
  int32_t out = t.output(query);
  int32_t lse = t.output(lseShape(query));
  auto attributes = [&] {
    t.setFloat("scale", 0.25).setBool("causal", true).setBool("zigzag",
                                                              zigzag);
    t.setStrings("query_blocks", {"cp"});
  };
  attributes();
  if (backward) {
    t.then("graph.attention_grad");
    for (int32_t id : {q, k, v, out, lse})
      t.input(id);
    t.f32(query, seed + 3);
    t.output(query);
    t.output(key);
    t.output(key);
    attributes();
  }
  t.setMesh(contextParallelRank(size, coord));
  if (backward)
    t.expectMatch(5e-4, 5e-5);
  else
    t.expectMatch(2e-4, 2e-5);
}

/// Forward and backward with an additive mask of `maskShape` (values in
/// [-2, 2], every third key at the lowest float as exporters write
/// padding), against the CPU kernels.
void maskedCase(const AttentionCase &c, std::vector<int64_t> maskShape,
                uint64_t seed) {
  std::vector<float> values;
  int64_t n = 1;
  for (int64_t d : maskShape)
    n *= d;
  for (int64_t e = 0; e < n; ++e)
    values.push_back(e % maskShape.back() % 3 == 2
                         ? -3.4028235e38f
                         : float((e * 7919 + seed) % 401) / 100.0f - 2.0f);
  OpCase t("graph.attention");
  int32_t q = t.f32(c.query, seed);
  int32_t k = t.f32(c.key, seed + 1);
  int32_t v = t.f32(c.key, seed + 2);
  int32_t m = t.f32(maskShape, values);
  int32_t out = t.output(c.query);
  int32_t lse = t.output(lseShape(c.query));
  double scale = 1.0 / std::sqrt(double(c.query.back()));
  t.setFloat("scale", scale).setBool("causal", c.causal);
  t.then("graph.attention_grad");
  for (int32_t id : {q, k, v, out, lse})
    t.input(id);
  t.f32(c.query, seed + 3);
  t.input(m);
  t.output(c.query);
  t.output(c.key);
  t.output(c.key);
  t.setFloat("scale", scale).setBool("causal", c.causal);
  t.expectMatch(5e-4, 5e-5);
}

} // namespace

TEST_F(CudaOps, FlashAttentionWithAdditiveMasks) {
  // Padding per batch entry over the heads, with the causal mask.
  maskedCase({{2, 3, 17, 16}, {2, 3, 17, 16}, true}, {2, 1, 17, 17}, 700);
  // Key padding (one row for all queries), grouped-query heads.
  maskedCase({{2, 2, 3, 21, 48}, {2, 2, 1, 21, 48}, false}, {2, 1, 1, 1, 21},
             710);
  // A bias per head, broadcast over the batch.
  maskedCase({{2, 4, 9, 64}, {2, 4, 9, 64}, false}, {1, 4, 9, 9}, 720);
}

TEST_F(CudaOps, FlashAttentionForwardMatchesCpu) {
  for (size_t i = 0; i < kCases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    forwardCase(kCases[i], 100 + 10 * i);
  }
}

TEST_F(CudaOps, FlashAttentionBackwardMatchesCpu) {
  for (size_t i = 0; i < kCases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    backwardCase(kCases[i], 300 + 10 * i);
  }
}

TEST_F(CudaOps, FlashAttentionWithQueryBlocks) {
  // One rank on "cp": the shift is keys - queries; the attribute's path
  // (the executor's causalShift) still runs.
  blockCase(1, 0, /*zigzag=*/false, /*backward=*/false, 7);
}

TEST_F(CudaOps, FlashAttentionWithZigzagBlocks) {
  // Rank 1 of 4 on "cp" over 32 positions (8 chunks of 4): its 8 queries
  // are chunks 1 and 6; forward and backward place both halves.
  blockCase(4, 1, /*zigzag=*/true, /*backward=*/true, 17);
}
