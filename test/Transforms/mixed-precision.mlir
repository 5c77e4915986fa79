// RUN: cleave-opt %s --cleave-mixed-precision --split-input-file | FileCheck %s

// Parameters and inputs are read through bf16 copies, the ops on them
// produce bf16, the cross-entropy reads fp32 logits and the loss stays fp32.
// CHECK-LABEL: func.func @forward
// CHECK: %[[W:.*]] = graph.param "w" : tensor<8x16xf32>
// CHECK: %[[W16:.*]] = graph.cast %[[W]] : tensor<8x16xf32> to tensor<8x16xbf16>
// CHECK: %[[X:.*]] = graph.input "x" : tensor<4x8xf32>
// CHECK: %[[X16:.*]] = graph.cast %[[X]] : tensor<4x8xf32> to tensor<4x8xbf16>
// CHECK: %[[H:.*]] = graph.matmul %[[X16]], %[[W16]] : tensor<4x8xbf16>, tensor<8x16xbf16>
// CHECK: %[[G:.*]] = graph.gelu %[[H]] {{.*}}: tensor<4x16xbf16>
// CHECK: %[[C:.*]] = graph.constant dense<5.000000e-01> : tensor<f32>
// CHECK: %[[C16:.*]] = graph.cast %[[C]] : tensor<f32> to tensor<bf16>
// CHECK: %[[S:.*]] = graph.mul %[[G]], %[[C16]] : tensor<4x16xbf16>, tensor<bf16>
// CHECK: %[[S32:.*]] = graph.cast %[[S]] : tensor<4x16xbf16> to tensor<4x16xf32>
// CHECK: %[[L:.*]] = graph.cross_entropy %[[S32]], %{{.*}} : tensor<4x16xf32>, tensor<4xi64>
// CHECK: return %[[L]] : tensor<f32>
func.func @forward() -> tensor<f32> {
  %w = graph.param "w" : tensor<8x16xf32>
  %x = graph.input "x" : tensor<4x8xf32>
  %y = graph.input "labels" : tensor<4xi64>
  %h = graph.matmul %x, %w : tensor<4x8xf32>, tensor<8x16xf32>
  %g = graph.gelu %h : tensor<4x16xf32>
  %c = graph.constant dense<0.5> : tensor<f32>
  %s = graph.mul %g, %c : tensor<4x16xf32>, tensor<f32>
  %l = graph.cross_entropy %s, %y : tensor<4x16xf32>, tensor<4xi64>
  return %l : tensor<f32>
}

// -----

// Fused attention: out in bf16, its log-sum-exp in fp32; a bf16 result
// returned is cast back to the signature's fp32.
// CHECK-LABEL: func.func @attention
// CHECK: %[[O:.*]], %[[LSE:.*]] = graph.attention {{.*}} : tensor<1x2x8x4xbf16>, tensor<1x2x8x4xbf16>, tensor<1x2x8x4xbf16>
// CHECK: %[[O32:.*]] = graph.cast %[[O]] : tensor<1x2x8x4xbf16> to tensor<1x2x8x4xf32>
// CHECK: return %[[O32]], %[[LSE]] : tensor<1x2x8x4xf32>, tensor<1x2x8xf32>
func.func @attention() -> (tensor<1x2x8x4xf32>, tensor<1x2x8xf32>) {
  %q = graph.param "q" : tensor<1x2x8x4xf32>
  %o, %lse = graph.attention %q, %q, %q scale = 0.5 causal : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>
  return %o, %lse : tensor<1x2x8x4xf32>, tensor<1x2x8xf32>
}

// -----

// An op mixing the loss (fp32) with a bf16 value computes in fp32.
// CHECK-LABEL: func.func @mixed
// CHECK: %[[A:.*]] = graph.reduce_mean %{{.*}} [0] : tensor<4xbf16>
// CHECK: %[[A32:.*]] = graph.cast %[[A]] : tensor<bf16> to tensor<f32>
// CHECK: graph.add %{{.*}}, %[[A32]] : tensor<f32>, tensor<f32>
func.func @mixed() -> tensor<f32> {
  %p = graph.param "p" : tensor<4x3xf32>
  %y = graph.input "labels" : tensor<4xi64>
  %l = graph.cross_entropy %p, %y : tensor<4x3xf32>, tensor<4xi64>
  %r = graph.reduce_sum %p [1] : tensor<4x3xf32>
  %a = graph.reduce_mean %r [0] : tensor<4xf32>
  %t = graph.add %l, %a : tensor<f32>, tensor<f32>
  return %t : tensor<f32>
}

// -----

// A key/value cache stays in 16 bits: keys that arrive in fp32 (rotary
// angles computed in fp32 from the positions, as exported decoders
// compute them) are cast down to it, and so are the queries read against
// it, rather than the cache cast up to fp32 every step.
// CHECK-LABEL: func.func @forward
// CHECK: %[[C:.*]] = graph.cast %{{.*}} : tensor<4x16x2x4xf32> to tensor<4x16x2x4xbf16>
// CHECK: %[[R:.*]] = graph.cast %{{.*}} : tensor<2x2x4xf32> to tensor<2x2x4xbf16>
// CHECK: %[[W:.*]] = graph.cache_write %[[R]] into %[[C]] at %{{.*}} : tensor<2x2x4xbf16>, tensor<4x16x2x4xbf16>, tensor<2xi64>
// CHECK: %[[Q:.*]] = graph.cast %{{.*}} : tensor<2x2x1x4xf32> to tensor<2x2x1x4xbf16>
// CHECK: graph.paged_attention %[[Q]], %[[W]], %[[W]], {{.*}} -> tensor<2x2x1x4xbf16>
func.func @forward() -> tensor<2x2x1x4xf32> {
  %pos = graph.input "positions" : tensor<2x1xi64>
  %slots = graph.input "slots" : tensor<2xi64>
  %table = graph.input "block_table" : tensor<2x2xi64>
  %len = graph.input "lengths" : tensor<2xi64>
  %x = graph.param "x" : tensor<2x2x4xf32>
  %cache = graph.param "layers.0.k_cache" frozen : tensor<4x16x2x4xf32>
  %pf = graph.cast %pos : tensor<2x1xi64> to tensor<2x1xf32>
  %angle = graph.reshape %pf : tensor<2x1xf32> -> tensor<2x1x1xf32>
  %rows = graph.mul %x, %angle : tensor<2x2x4xf32>, tensor<2x1x1xf32>
  %w = graph.cache_write %rows into %cache at %slots : tensor<2x2x4xf32>, tensor<4x16x2x4xf32>, tensor<2xi64>
  %q4 = graph.reshape %rows : tensor<2x2x4xf32> -> tensor<2x2x1x4xf32>
  %o = graph.paged_attention %q4, %w, %w, %table, %len scale = 0.5 : tensor<2x2x1x4xf32>, tensor<4x16x2x4xf32>, tensor<4x16x2x4xf32>, tensor<2x2xi64>, tensor<2xi64> -> tensor<2x2x1x4xf32>
  return %o : tensor<2x2x1x4xf32>
}
