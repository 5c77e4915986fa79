//===- IntegerOpsTest.cpp - Integer tensors on the CUDA backend -----------===//
//
// Integer arithmetic, compare, where, cast and data movement of imported
// models run on the host with the CPU kernels (HostIntegerOps.cpp); the
// results must be the CPU backend's, byte for byte, and float operands of
// the same ops must still reach their device kernels.
//
//===----------------------------------------------------------------------===//

#include "CudaOpCase.h"

namespace cleave::test {
namespace {

TEST_F(CudaOps, IntegerArithmeticBroadcasts) {
  // Position ids: a [2, 5] cumulative mask plus an offset row.
  for (const char *op : {"graph.add", "graph.sub", "graph.mul", "graph.max"}) {
    SCOPED_TRACE(op);
    OpCase t(op);
    t.i64({2, 5}, {0, 1, 2, 3, 4, 1, 1, 2, 2, 3});
    t.i64({5}, {7, -2, 0, 5, 1});
    t.output({2, 5}, plan::I64);
    t.expectMatch(0, 0);
  }
}

TEST_F(CudaOps, IntegerDivisionAndModTruncateAndFloor) {
  for (const char *op : {"graph.div", "graph.mod"}) {
    SCOPED_TRACE(op);
    OpCase t(op);
    t.i64({6}, {7, -7, 7, -7, 0, 13});
    t.i64({6}, {2, 2, -2, -2, 3, 5});
    t.output({6}, plan::I64);
    t.expectMatch(0, 0);
  }
}

TEST_F(CudaOps, IntegerCompareWhereAndCast) {
  OpCase compare("graph.compare");
  compare.i64({4}, {1, 5, 3, 3});
  compare.i64({4}, {2, 5, 1, 4});
  compare.output({4}, plan::BOOL);
  compare.setString("predicate", "le");
  compare.expectMatch(0, 0);

  OpCase where("graph.where");
  where.mask({4}, {1, 0, 1, 0});
  where.i64({4}, {10, 20, 30, 40});
  where.i64({4}, {-1, -2, -3, -4});
  where.output({4}, plan::I64);
  where.expectMatch(0, 0);

  OpCase cast("graph.cast");
  cast.i64({5}, {0, 1, -3, 1000000, 7});
  cast.output({5});
  cast.expectMatch(0, 0);
}

TEST_F(CudaOps, IntegerDataMovesAndFloatsStayOnTheDevice) {
  OpCase gather("graph.gather");
  gather.i64({4, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  gather.i64({2}, {3, 1});
  gather.output({2, 3}, plan::I64);
  gather.setInt("axis", 0);
  gather.expectMatch(0, 0);

  OpCase slice("graph.slice");
  slice.i64({2, 6}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  slice.output({2, 2}, plan::I64);
  slice.setInts("starts", {0, 1});
  slice.setInts("limits", {2, 5});
  slice.setInts("strides", {1, 2});
  slice.expectMatch(0, 0);

  // The same op on floats: the device kernel, as before.
  OpCase add("graph.add");
  add.f32({3, 4}, 5);
  add.f32({4}, 6);
  add.output({3, 4});
  add.expectMatch(0, 0);
}

} // namespace
} // namespace cleave::test
