//===- GatherOpsTest.cpp - gather and gather_grad -------------------------===//
//
// Gathers are copies, and the gradient adds each row's slices in index
// order as the CPU does (sorted, not atomic), so both must match exactly.
// Rows whose length is a multiple of 4 take the float4 path.
//
//===----------------------------------------------------------------------===//

#include "CudaOpCase.h"

#include <cstdint>
#include <random>
#include <vector>

using namespace cleave::test;

namespace {

/// n indices in [-size, size): negative ones count from the end (ONNX).
std::vector<int64_t> indices(int64_t n, int64_t size, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> v(n);
  for (int64_t &i : v)
    i = static_cast<int64_t>(rng() % (2 * size)) - size;
  return v;
}

} // namespace

TEST_F(CudaOps, GatherEmbeddingRowsWithNegativeIds) {
  // Axis 0 of a [vocab, hidden] table; ids repeat and count from the end.
  std::vector<int64_t> ids = indices(21, 50, 1);
  ids[0] = -1;
  ids[1] = -50;
  ids[2] = 49;
  ids[3] = ids[4] = 7;
  OpCase t("graph.gather");
  t.f32({50, 16}, 2);
  t.i64({3, 7}, ids);
  t.output({3, 7, 16});
  t.setInt("axis", 0);
  t.expectMatch(0, 0);
}

TEST_F(CudaOps, GatherAlongInnerAxes) {
  // Axis 1 of [4, 9, 5]: odd rows, the scalar path.
  OpCase t("graph.gather");
  t.f32({4, 9, 5}, 3);
  t.i64({6}, {0, -1, 8, -9, 4, 4});
  t.output({4, 6, 5});
  t.setInt("axis", 1);
  t.expectMatch(0, 0);
  // The last axis, named from the end, with a 2-d index tensor.
  OpCase u("graph.gather");
  u.f32({3, 8}, 4);
  u.i64({2, 2}, {7, -8, 3, -3});
  u.output({3, 2, 2});
  u.setInt("axis", -1);
  u.expectMatch(0, 0);
  // A 0-d index drops the axis.
  OpCase v("graph.gather");
  v.f32({5, 12}, 5);
  v.i64({}, {-2});
  v.output({12});
  v.setInt("axis", 0);
  v.expectMatch(0, 0);
}

TEST_F(CudaOps, GatherGradAddsRepeatedRowsInOrder) {
  // Many repeats of few rows: every table row is a sum of several slices.
  OpCase t("graph.gather_grad");
  t.f32({8, 40, 16}, 6);
  t.i64({8, 40}, indices(320, 12, 7));
  t.output({12, 16});
  t.setInt("axis", 0);
  t.expectMatch(0, 0);
  // A larger vocabulary, most rows untouched (zeros).
  OpCase u("graph.gather_grad");
  u.f32({5, 9, 64}, 8);
  u.i64({5, 9}, indices(45, 1000, 9));
  u.output({1000, 64});
  u.setInt("axis", 0);
  u.expectMatch(0, 0);
}

TEST_F(CudaOps, GatherGradAlongInnerAxes) {
  // Axis 1 of [4, 9, 5], indices repeating with both signs.
  OpCase t("graph.gather_grad");
  t.f32({4, 30, 5}, 10);
  t.i64({30}, indices(30, 9, 11));
  t.output({4, 9, 5});
  t.setInt("axis", 1);
  t.expectMatch(0, 0);
  // The last axis (inner 1), a 2-d index tensor.
  OpCase u("graph.gather_grad");
  u.f32({3, 4, 6}, 12);
  u.i64({4, 6}, indices(24, 7, 13));
  u.output({3, 7});
  u.setInt("axis", -1);
  u.expectMatch(0, 0);
}
