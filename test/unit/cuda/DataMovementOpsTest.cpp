//===- DataMovementOpsTest.cpp - Copies, casts, strided views -------------===//

#include "CudaOpCase.h"

using namespace cleave::test;

TEST_F(CudaOps, TransposeHeads) {
  OpCase t("graph.transpose");
  t.f32({2, 17, 4, 8}, 1);
  t.output({2, 4, 17, 8});
  t.setInts("permutation", {0, 2, 1, 3});
  t.expectMatch(0, 0);
}

TEST_F(CudaOps, TransposeMatrixAndRank5) {
  OpCase t("graph.transpose");
  t.f32({33, 65}, 2);
  t.output({65, 33});
  t.setInts("permutation", {1, 0});
  t.expectMatch(0, 0);
  OpCase u("graph.transpose");
  u.f32({2, 3, 4, 5, 6}, 3);
  u.output({6, 4, 2, 5, 3});
  u.setInts("permutation", {4, 2, 0, 3, 1});
  u.expectMatch(0, 0);
}

TEST_F(CudaOps, SliceWithStridesAndItsGradient) {
  OpCase t("graph.slice");
  t.f32({6, 10}, 4);
  t.output({2, 3});
  t.setInts("starts", {1, 2}).setInts("limits", {5, 9}).setInts("strides",
                                                                 {2, 3});
  t.expectMatch(0, 0);
  OpCase g("graph.slice_grad");
  g.f32({2, 3}, 5);
  g.output({6, 10});
  g.setInts("starts", {1, 2}).setInts("strides", {2, 3});
  g.expectMatch(0, 0);
}

TEST_F(CudaOps, ConcatAndSplitAlongTheMiddle) {
  OpCase t("graph.concat");
  t.f32({3, 2, 5}, 6);
  t.f32({3, 4, 5}, 7);
  t.output({3, 6, 5});
  t.setInt("axis", 1);
  t.expectMatch(0, 0);
  OpCase s("graph.split");
  s.f32({3, 6, 5}, 8);
  s.output({3, 2, 5});
  s.output({3, 4, 5});
  s.setInt("axis", -2);
  s.expectMatch(0, 0);
}

TEST_F(CudaOps, CastsBetweenIdsAndFloats) {
  OpCase t("graph.cast");
  t.i64({5}, {0, 3, 7, 1000, 16777216});
  t.output({5});
  t.expectMatch(0, 0);
  OpCase u("graph.cast");
  u.f32({4}, std::vector<float>{0.0f, 2.0f, 7.9f, 50000.0f});
  u.output({4}, cleave::plan::I64);
  u.expectMatch(0, 0);
}

TEST_F(CudaOps, ReshapeAndCopies) {
  for (const char *op : {"graph.reshape", "graph.stop_gradient",
                         "runtime.copy"}) {
    OpCase t(op);
    t.f32({6, 7}, 10);
    t.output({42});
    t.expectMatch(0, 0);
  }
}

TEST_F(CudaOps, ShardSliceTakesThisRanksBlock) {
  OpCase t("graph.shard_slice");
  t.f32({4, 12}, 11);
  t.output({4, 4});
  t.setStrings("axes", {"tp"}).setInt("dim", 1);
  cleave::comm::MeshInfo mesh;
  mesh.axisNames = {"tp"};
  mesh.axisSizes = {3};
  mesh.coords = {2};
  t.setMesh(mesh);
  t.expectMatch(0, 0);
}

TEST_F(CudaOps, ZeroClearsItsOutputs) {
  OpCase t("runtime.zero");
  t.output({1000});
  t.output({7, 3});
  t.expectMatch(0, 0);
}
