// RUN: cleave-opt %s --pass-pipeline='builtin.module(func.func(cleave-intra-op-search{mesh=2 cluster=cpu-local,devices=2 context-parallel=true},cleave-spmd-partition{axis=cp size=2}))' | FileCheck %s

// Context parallelism: one head of causal attention over a sequence of 512
// with a position table, on 2 devices. The tokens are split along the
// sequence, weights stay whole (the position table is sliced to the
// block's positions), keys and values are all-gathered (their gradients
// reduce-scattered), and the softmax of a query block is told where it
// sits.
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
  // CHECK-DAG: graph.shard_slice %[[TOK]] axes ["cp"] size 2 dim 1 : tensor<1x512xi64> -> tensor<1x256xi64>
  // CHECK-DAG: graph.shard_slice %{{.*}} axes ["cp"] size 2 dim 0 : tensor<512x16xf32> -> tensor<256x16xf32>
  %e = graph.gather %wte[%tok] axis = 0 : tensor<32x16xf32>, tensor<1x512xi64>
  %x = graph.add %e, %wpe : tensor<1x512x16xf32>, tensor<512x16xf32>
  // CHECK: graph.matmul %{{.*}}, %{{.*}} : tensor<1x256x16xf32>, tensor<16x16xf32>
  %q = graph.matmul %x, %wq : tensor<1x512x16xf32>, tensor<16x16xf32>
  %k = graph.matmul %x, %wk : tensor<1x512x16xf32>, tensor<16x16xf32>
  %v = graph.matmul %x, %wv : tensor<1x512x16xf32>, tensor<16x16xf32>
  // CHECK: %[[K:.*]] = graph.all_gather %{{.*}} axes ["cp"] size 2 dim 1 varying_grad : tensor<1x256x16xf32> -> tensor<1x512x16xf32>
  // CHECK: graph.matmul %{{.*}}, %[[K]] transpose_rhs : tensor<1x256x16xf32>, tensor<1x512x16xf32>
  %s = graph.matmul %q, %k transpose_rhs : tensor<1x512x16xf32>, tensor<1x512x16xf32>
  // CHECK: graph.softmax %{{.*}} axis = 2 causal query_blocks ["cp"] : tensor<1x256x512xf32>
  %p = graph.softmax %s axis = 2 causal : tensor<1x512x512xf32>
  // CHECK: %[[V:.*]] = graph.all_gather %{{.*}} axes ["cp"] size 2 dim 1 varying_grad : tensor<1x256x16xf32> -> tensor<1x512x16xf32>
  // CHECK: graph.matmul %{{.*}}, %[[V]] : tensor<1x256x512xf32>, tensor<1x512x16xf32>
  %o = graph.matmul %p, %v : tensor<1x512x512xf32>, tensor<1x512x16xf32>
  %logits = graph.matmul %o, %head : tensor<1x512x16xf32>, tensor<16x32xf32>
  %l = graph.cross_entropy %logits, %lab : tensor<1x512x32xf32>, tensor<1x512xi64>
  // The loss is the mean over both blocks' tokens.
  // CHECK: graph.all_reduce %{{.*}} axes ["cp"] size 2 reduction "mean" : tensor<f32>
  return %l : tensor<f32>
}
