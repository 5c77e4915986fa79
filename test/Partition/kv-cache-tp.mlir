// RUN: cleave-opt %s --cleave-intra-op-search="mesh=2 param-memory=110000" | cleave-opt --pass-pipeline='builtin.module(func.func(cleave-spmd-partition{axis=tp size=2}))' | FileCheck %s
// One decode step of a grouped-query layer (4 query heads over 2 key/value
// heads) under tensor parallelism: the search splits each paged cache over
// its key/value heads (graph.cache_write's "kv_heads") and the attention
// over its query heads ("heads"), so each device writes and reads only its
// heads' keys and values, with no collective between the projections and
// the attention; the block table, lengths and slots stay whole.

// CHECK-LABEL: func.func @forward
// CHECK: %[[KC:.*]] = graph.param "k_cache" frozen {cleave.global_shape = array<i64: 32, 16, 2, 16>, cleave.shard_axes = ["", "", "tp", ""]} : tensor<32x16x1x16xf32>
// CHECK: %[[VC:.*]] = graph.param "v_cache" frozen {cleave.global_shape = array<i64: 32, 16, 2, 16>, cleave.shard_axes = ["", "", "tp", ""]} : tensor<32x16x1x16xf32>
// CHECK-NOT: graph.all_
// CHECK: %[[K:.*]] = graph.cache_write %{{.*}} into %[[KC]] at %{{.*}} : tensor<4x1x16xf32>, tensor<32x16x1x16xf32>, tensor<4xi64>
// CHECK: %[[V:.*]] = graph.cache_write %{{.*}} into %[[VC]] at %{{.*}} : tensor<4x1x16xf32>, tensor<32x16x1x16xf32>, tensor<4xi64>
// CHECK-NEXT: graph.paged_attention %{{.*}}, %[[K]], %[[V]], %{{.*}}, %{{.*}} scale = 2.500000e-01 : tensor<4x2x1x16xf32>, tensor<32x16x1x16xf32>, tensor<32x16x1x16xf32>, tensor<4x8xi64>, tensor<4xi64> -> tensor<4x2x1x16xf32>
func.func @forward() -> tensor<4x64xf32> {
  %x = graph.input "x" : tensor<4x64xf32>
  %slots = graph.input "slots" : tensor<4xi64>
  %table = graph.input "block_table" : tensor<4x8xi64>
  %len = graph.input "lengths" : tensor<4xi64>
  %wq = graph.param "wq" : tensor<64x64xf32>
  %wk = graph.param "wk" : tensor<64x32xf32>
  %wv = graph.param "wv" : tensor<64x32xf32>
  %wo = graph.param "wo" : tensor<64x64xf32>
  %kc = graph.param "k_cache" frozen : tensor<32x16x2x16xf32>
  %vc = graph.param "v_cache" frozen : tensor<32x16x2x16xf32>
  %q = graph.matmul %x, %wq : tensor<4x64xf32>, tensor<64x64xf32>
  %k = graph.matmul %x, %wk : tensor<4x64xf32>, tensor<64x32xf32>
  %v = graph.matmul %x, %wv : tensor<4x64xf32>, tensor<64x32xf32>
  %q4 = graph.reshape %q : tensor<4x64xf32> -> tensor<4x4x1x16xf32>
  %k3 = graph.reshape %k : tensor<4x32xf32> -> tensor<4x2x16xf32>
  %v3 = graph.reshape %v : tensor<4x32xf32> -> tensor<4x2x16xf32>
  %kc2 = graph.cache_write %k3 into %kc at %slots : tensor<4x2x16xf32>, tensor<32x16x2x16xf32>, tensor<4xi64>
  %vc2 = graph.cache_write %v3 into %vc at %slots : tensor<4x2x16xf32>, tensor<32x16x2x16xf32>, tensor<4xi64>
  %o = graph.paged_attention %q4, %kc2, %vc2, %table, %len scale = 0.25 : tensor<4x4x1x16xf32>, tensor<32x16x2x16xf32>, tensor<32x16x2x16xf32>, tensor<4x8xi64>, tensor<4xi64> -> tensor<4x4x1x16xf32>
  %o2 = graph.reshape %o : tensor<4x4x1x16xf32> -> tensor<4x64xf32>
  %y = graph.matmul %o2, %wo : tensor<4x64xf32>, tensor<64x64xf32>
  return %y : tensor<4x64xf32>
}
