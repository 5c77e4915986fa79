// RUN: cleave-opt %s -split-input-file --cleave-kv-cache="max-length=64 block-size=16" | FileCheck %s
// cleave-kv-cache: a one-token step of a rotary decoder layer. The keys and
// values go into their layer's cache pools (named after the projections'
// module) and the queries attend over them; rope takes each token's
// position; the loss becomes the logits and the labels input goes.

// CHECK-LABEL: func.func @forward() -> tensor<2x1x8xf32>
// CHECK-DAG: %[[POS:.*]] = graph.input "positions" : tensor<2x1xi64>
// CHECK-DAG: %[[SLOTS:.*]] = graph.input "slots" : tensor<2xi64>
// CHECK-DAG: %[[TABLE:.*]] = graph.input "block_table" : tensor<2x4xi64>
// CHECK-DAG: %[[LEN:.*]] = graph.input "lengths" : tensor<2xi64>
// CHECK-NOT: "labels"
// CHECK: graph.rope %{{.*}} at %[[POS]] : tensor<2x1xi64> theta
// CHECK: graph.rope %{{.*}} at %[[POS]] : tensor<2x1xi64> theta
// CHECK: %[[KC:.*]] = graph.param "layers.0.attn.k_cache" frozen : tensor<8x16x2x4xf32>
// CHECK: %[[VC:.*]] = graph.param "layers.0.attn.v_cache" frozen : tensor<8x16x2x4xf32>
// CHECK: %[[K:.*]] = graph.cache_write %{{.*}} into %[[KC]] at %[[SLOTS]] : tensor<2x2x4xf32>, tensor<8x16x2x4xf32>, tensor<2xi64>
// CHECK: %[[V:.*]] = graph.cache_write %{{.*}} into %[[VC]] at %[[SLOTS]]
// CHECK: graph.paged_attention %{{.*}}, %[[K]], %[[V]], %[[TABLE]], %[[LEN]] scale = 5.000000e-01 : tensor<2x2x1x4xf32>, tensor<8x16x2x4xf32>, tensor<8x16x2x4xf32>, tensor<2x4xi64>, tensor<2xi64> -> tensor<2x2x1x4xf32>
// CHECK-NOT: graph.attention
// CHECK-NOT: graph.cross_entropy
// CHECK: return %{{.*}} : tensor<2x1x8xf32>
func.func @forward() -> tensor<f32> {
  %tokens = graph.input "tokens" : tensor<2x1xi64>
  %labels = graph.input "labels" : tensor<2x1xi64>
  %x = graph.input "x" : tensor<2x1x8xf32>
  %wq = graph.param "layers.0.attn.q_proj.weight" : tensor<8x8xf32>
  %q = graph.matmul %x, %wq : tensor<2x1x8xf32>, tensor<8x8xf32>
  %q4 = graph.reshape %q : tensor<2x1x8xf32> -> tensor<2x1x2x4xf32>
  %qr = graph.rope %q4 theta = 10000.0 : tensor<2x1x2x4xf32>
  %kr = graph.rope %q4 theta = 10000.0 : tensor<2x1x2x4xf32>
  %qt = graph.transpose %qr [0, 2, 1, 3] : tensor<2x1x2x4xf32>
  %kt = graph.transpose %kr [0, 2, 1, 3] : tensor<2x1x2x4xf32>
  %o, %lse = graph.attention %qt, %kt, %kt scale = 0.5 causal : tensor<2x2x1x4xf32>, tensor<2x2x1x4xf32>, tensor<2x2x1x4xf32>
  %ot = graph.transpose %o [0, 2, 1, 3] : tensor<2x2x1x4xf32>
  %y = graph.reshape %ot : tensor<2x1x2x4xf32> -> tensor<2x1x8xf32>
  %loss = graph.cross_entropy %y, %labels : tensor<2x1x8xf32>, tensor<2x1xi64>
  return %loss : tensor<f32>
}
