//===- AttentionOpsTest.cpp - softmax, softmax_grad and rope --------------===//
//
// Row lengths cover every launch shape of the softmax kernels: one warp
// per row (up to 512), blocks holding the row in registers (up to 8192)
// and blocks re-reading it (beyond). Long rows are compared with a tiny
// absolute tolerance, since their probabilities are small; the CPU sums
// them sequentially in fp32, the GPU in a tree, hence rtol 2e-5.
//
//===----------------------------------------------------------------------===//

#include "CudaOpCase.h"

#include <cstdint>
#include <string>
#include <vector>

using namespace cleave::test;

namespace {

const std::vector<int64_t> kRowLengths = {1,    5,    32,   33,   100,  129,
                                          257,  513,  1000, 1025, 2048, 3000,
                                          4096, 8192, 9000, 20000};

/// A one-rank mesh with a "cp" axis: what the local communicator runs.
} // namespace

TEST_F(CudaOps, SoftmaxEveryRowLength) {
  for (int64_t n : kRowLengths) {
    SCOPED_TRACE("row length " + std::to_string(n));
    OpCase t("graph.softmax");
    t.f32({3, n}, 100 + n, -4.0f, 4.0f);
    t.output({3, n});
    t.setInt("axis", -1);
    t.expectMatch(2e-5, 1e-9);
  }
}

TEST_F(CudaOps, SoftmaxAlongLeadingAndMiddleAxes) {
  OpCase t("graph.softmax");
  t.f32({3, 7, 5}, 1, -3.0f, 3.0f);
  t.output({3, 7, 5});
  t.setInt("axis", 1);
  t.expectMatch();
  OpCase u("graph.softmax");
  u.f32({9, 4, 6}, 2, -3.0f, 3.0f);
  u.output({9, 4, 6});
  u.setInt("axis", 0);
  u.expectMatch();
}

TEST_F(CudaOps, CausalSoftmaxMatchesCpu) {
  OpCase t("graph.softmax");
  t.f32({2, 4, 33, 33}, 3);
  t.output({2, 4, 33, 33});
  t.setInt("axis", -1).setBool("causal", true);
  t.expectMatch();
}

TEST_F(CudaOps, CausalSoftmaxWithMoreKeysOrMoreQueries) {
  // Keys cached ahead of the queries: every query sees 4 more keys.
  OpCase t("graph.softmax");
  t.f32({2, 3, 5, 9}, 4);
  t.output({2, 3, 5, 9});
  t.setInt("axis", -1).setBool("causal", true);
  t.expectMatch();
  // More queries than keys: the first 4 queries see no key (all zeros).
  OpCase u("graph.softmax");
  u.f32({2, 9, 5}, 5);
  u.output({2, 9, 5});
  u.setInt("axis", 2).setBool("causal", true);
  u.expectMatch();
}

TEST_F(CudaOps, CausalSoftmaxLongRows) {
  // Block rows in registers, keys ahead of the queries.
  OpCase t("graph.softmax");
  t.f32({2, 40, 1200}, 6, -4.0f, 4.0f);
  t.output({2, 40, 1200});
  t.setInt("axis", -1).setBool("causal", true);
  t.expectMatch(2e-5, 1e-9);
  // Block rows, more queries than keys: 80 empty rows first.
  OpCase u("graph.softmax");
  u.f32({600, 520}, 7, -4.0f, 4.0f);
  u.output({600, 520});
  u.setInt("axis", -1).setBool("causal", true);
  u.expectMatch(2e-5, 1e-9);
  // Rows re-read per pass.
  OpCase v("graph.softmax");
  v.f32({1, 3, 9000}, 8, -4.0f, 4.0f);
  v.output({1, 3, 9000});
  v.setInt("axis", -1).setBool("causal", true);
  v.expectMatch(2e-5, 1e-9);
}

TEST_F(CudaOps, CausalSoftmaxWithQueryBlocks) {
  // The local communicator runs one rank, so the group has one block and
  // the shift is keys - queries; the attribute's path still runs.
  OpCase t("graph.softmax");
  t.f32({2, 2, 8, 12}, 9);
  t.output({2, 2, 8, 12});
  t.setInt("axis", -1).setBool("causal", true);
  t.setStrings("query_blocks", {"cp"});
  t.setMesh(contextParallelRank(1, 0));
  t.expectMatch();
}

TEST_F(CudaOps, SoftmaxGradEveryRowLength) {
  for (int64_t n : kRowLengths) {
    SCOPED_TRACE("row length " + std::to_string(n));
    OpCase t("graph.softmax_grad");
    // Probabilities of a row of n, and an upstream gradient.
    t.f32({3, n}, 200 + n, 0.0f, 2.0f / n);
    t.f32({3, n}, 201);
    t.output({3, n});
    t.setInt("axis", -1);
    t.expectMatch(1e-4, 1e-8);
  }
}

TEST_F(CudaOps, SoftmaxGradAlongAMiddleAxis) {
  OpCase t("graph.softmax_grad");
  t.f32({4, 6, 5}, 10, 0.0f, 0.3f);
  t.f32({4, 6, 5}, 11);
  t.output({4, 6, 5});
  t.setInt("axis", -2);
  t.expectMatch(1e-5, 1e-7);
}

TEST_F(CudaOps, RopeForwardAndInverse) {
  for (bool inverse : {false, true}) {
    SCOPED_TRACE(inverse ? "inverse" : "forward");
    OpCase t("graph.rope");
    t.f32({2, 17, 3, 64}, 12);
    t.output({2, 17, 3, 64});
    t.setFloat("theta", 10000.0).setBool("inverse", inverse);
    t.expectMatch();
  }
}

TEST_F(CudaOps, RopeOddHalfAndLargeOffset) {
  // head_dim 6 (pairs of 3), positions past 10^5.
  OpCase t("graph.rope");
  t.f32({3, 5, 2, 6}, 13);
  t.output({3, 5, 2, 6});
  t.setFloat("theta", 500000.0).setInt("offset", 100003);
  t.expectMatch();
}

TEST_F(CudaOps, RopeWithPositionBlocks) {
  OpCase t("graph.rope");
  t.f32({1, 9, 4, 16}, 14);
  t.output({1, 9, 4, 16});
  t.setFloat("theta", 10000.0).setInt("offset", 7);
  t.setStrings("position_blocks", {"cp"});
  t.setMesh(contextParallelRank(1, 0));
  t.expectMatch();
}

TEST_F(CudaOps, RopeAndSoftmaxWithZigzagBlocks) {
  // Rank 1 of 2 on "cp": rows 0-1 at positions 2-3, rows 2-3 at 4-5.
  cleave::comm::MeshInfo mesh = contextParallelRank(2, 1);
  OpCase rope("graph.rope");
  rope.f32({2, 4, 3, 8}, 21);
  rope.output({2, 4, 3, 8});
  rope.setFloat("theta", 10000.0).setBool("zigzag", true);
  rope.setStrings("position_blocks", {"cp"});
  rope.setMesh(mesh);
  rope.expectMatch();
  OpCase softmax("graph.softmax");
  softmax.f32({2, 3, 4, 8}, 22);
  softmax.output({2, 3, 4, 8});
  softmax.setInt("axis", 3).setBool("causal", true).setBool("zigzag", true);
  softmax.setStrings("query_blocks", {"cp"});
  softmax.setMesh(mesh);
  softmax.expectMatch();
  OpCase slice("graph.shard_slice");
  slice.f32({2, 8, 3}, 23);
  slice.output({2, 4, 3});
  slice.setStrings("axes", {"cp"}).setInt("group_size", 2).setInt("dim", 1);
  slice.setBool("zigzag", true);
  slice.setMesh(mesh);
  slice.expectMatch(0, 0);
}

//===----------------------------------------------------------------------===//
// A generation step's kernels: rope at each token's position, cache writes
// in place, attention over a paged cache.
//===----------------------------------------------------------------------===//

TEST_F(CudaOps, RopeAtEachTokensPosition) {
  for (bool inverse : {false, true}) {
    SCOPED_TRACE(inverse ? "inverse" : "forward");
    OpCase t("graph.rope");
    t.f32({3, 2, 4, 16}, 31);
    t.i64({3, 2}, {0, 1, 17, 4095, 100003, 2});
    t.output({3, 2, 4, 16});
    t.setFloat("theta", 10000.0).setBool("inverse", inverse);
    t.expectMatch();
  }
}

TEST_F(CudaOps, CacheWriteInPlaceSkipsNegativeSlots) {
  OpCase t("graph.cache_write");
  t.f32({3, 2, 8}, 32);
  int32_t cache = t.f32({4, 4, 2, 8}, 33);
  t.i64({3}, {5, -1, 12});
  t.outputIsInput(cache);
  t.compare(cache);
  t.expectMatch(0, 0);
}

TEST_F(CudaOps, PagedAttentionMatchesCpu) {
  // Two sequences of 9 and 3 keys in blocks of 4 scattered over a pool of
  // 6, three queries each (the first of the short one before position 0),
  // 4 query heads over 2 key/value heads.
  OpCase t("graph.paged_attention");
  t.f32({2, 4, 3, 16}, 34);
  t.f32({6, 4, 2, 16}, 35);
  t.f32({6, 4, 2, 16}, 36);
  t.i64({2, 3}, {4, 1, 0, 2, 5, 3});
  t.i64({2}, {9, 2});
  t.output({2, 4, 3, 16});
  t.setFloat("scale", 0.25);
  t.expectMatch(1e-5, 1e-6);
}
