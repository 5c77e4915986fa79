// RUN: cleave-opt %s --mlir-print-elementsattrs-with-hex-if-larger=1000 --pass-pipeline='builtin.module(func.func(cleave-intra-op-search{mesh=2 cluster=cpu-local,devices=2 context-parallel=true},cleave-spmd-partition{axis=cp size=2 zigzag=true}))' | FileCheck %s

// Zig-zag context parallelism: the sequence of 512 is cut into 4 chunks of
// 128 and device g holds chunks g and 3 - g. The tokens and the position
// table take the two chunks (shard_slice zigzag); keys and values are
// all-gathered, then put back in sequence order by a gather of constant
// indices (device 0's block holds positions 0-127 and 384-511, device
// 1's 128-383: sequence order reads slots 0-127, 256-383, 384-511,
// 128-255 of the gathered blocks); the
// fused attention of a block is told it is zig-zag; a rotary embedding
// likewise.
// CHECK-LABEL: func.func @attention
func.func @attention() -> tensor<f32> {
  // CHECK: %[[TOK:.*]] = graph.input "tokens" : tensor<1x512xi64>
  %tok = graph.input "tokens" : tensor<1x512xi64>
  %lab = graph.input "labels" : tensor<1x512xi64>
  %wte = graph.param "wte" : tensor<32x16xf32>
  %wpe = graph.param "wpe" : tensor<512x16xf32>
  %wq = graph.param "h.0.q" : tensor<16x16xf32>
  %wk = graph.param "h.0.k" : tensor<16x16xf32>
  %wv = graph.param "h.0.v" : tensor<16x16xf32>
  %head = graph.param "head" : tensor<16x32xf32>
  // CHECK-DAG: graph.shard_slice %[[TOK]] axes ["cp"] size 2 dim 1 zigzag : tensor<1x512xi64> -> tensor<1x256xi64>
  // CHECK-DAG: graph.shard_slice %{{.*}} axes ["cp"] size 2 dim 0 zigzag : tensor<512x16xf32> -> tensor<256x16xf32>
  %e = graph.gather %wte[%tok] axis = 0 : tensor<32x16xf32>, tensor<1x512xi64>
  %x = graph.add %e, %wpe : tensor<1x512x16xf32>, tensor<512x16xf32>
  %q0 = graph.matmul %x, %wq : tensor<1x512x16xf32>, tensor<16x16xf32>
  %k0 = graph.matmul %x, %wk : tensor<1x512x16xf32>, tensor<16x16xf32>
  %v = graph.matmul %x, %wv : tensor<1x512x16xf32>, tensor<16x16xf32>
  %q4 = graph.reshape %q0 : tensor<1x512x16xf32> -> tensor<1x512x2x8xf32>
  %k4 = graph.reshape %k0 : tensor<1x512x16xf32> -> tensor<1x512x2x8xf32>
  // CHECK: graph.rope %{{.*}} theta = 1.000000e+04 position_blocks ["cp"] zigzag : tensor<1x256x2x8xf32>
  %qr = graph.rope %q4 theta = 10000.0 : tensor<1x512x2x8xf32>
  %kr = graph.rope %k4 theta = 10000.0 : tensor<1x512x2x8xf32>
  %q = graph.reshape %qr : tensor<1x512x2x8xf32> -> tensor<1x512x16xf32>
  %k = graph.reshape %kr : tensor<1x512x2x8xf32> -> tensor<1x512x16xf32>
  // CHECK: %[[KB:.*]] = graph.all_gather %{{.*}} axes ["cp"] size 2 dim 1 varying_grad : tensor<1x256x16xf32> -> tensor<1x512x16xf32>
  // CHECK: %[[ORDER:.*]] = graph.constant dense<[0, 1, {{.*}}, 126, 127, 256, 257, {{.*}}, 382, 383, 384, 385, {{.*}}, 510, 511, 128, 129, {{.*}}, 254, 255]> : tensor<512xi64>
  // CHECK: %[[K:.*]] = graph.gather %[[KB]][%[[ORDER]]] axis = 1 : tensor<1x512x16xf32>, tensor<512xi64>
  // CHECK: graph.attention %{{.*}}, %[[K]], %{{.*}} scale = {{.*}} causal query_blocks ["cp"] zigzag : tensor<1x256x16xf32>, tensor<1x512x16xf32>, tensor<1x512x16xf32>
  %o, %lse = graph.attention %q, %k, %v scale = 0.25 causal : tensor<1x512x16xf32>, tensor<1x512x16xf32>, tensor<1x512x16xf32>
  %logits = graph.matmul %o, %head : tensor<1x512x16xf32>, tensor<16x32xf32>
  %l = graph.cross_entropy %logits, %lab : tensor<1x512x32xf32>, tensor<1x512xi64>
  // CHECK: graph.all_reduce %{{.*}} axes ["cp"] size 2 reduction "mean" : tensor<f32>
  return %l : tensor<f32>
}
