// RUN: cleave-opt %s --cleave-fuse-attention --split-input-file | FileCheck %s

// The zoo's form: q k^T through transpose_rhs, scaled by a constant,
// causal softmax, product with v.
// CHECK-LABEL: func.func @zoo_causal
// CHECK-NOT: graph.softmax
// CHECK: %[[O:.*]], %{{.*}} = graph.attention %arg0, %arg1, %arg2 scale = 0.353553{{[0-9]*}} causal : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>
// CHECK-NOT: graph.matmul
// CHECK: return %[[O]]
func.func @zoo_causal(%q: tensor<2x4x16x8xf32>, %k: tensor<2x4x16x8xf32>, %v: tensor<2x4x16x8xf32>) -> tensor<2x4x16x8xf32> {
  %s = graph.matmul %q, %k transpose_rhs : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>
  %c = graph.constant dense<0.353553385> : tensor<f32>
  %t = graph.mul %s, %c : tensor<2x4x16x16xf32>, tensor<f32>
  %p = graph.softmax %t axis = 3 causal : tensor<2x4x16x16xf32>
  %o = graph.matmul %p, %v : tensor<2x4x16x16xf32>, tensor<2x4x16x8xf32>
  return %o : tensor<2x4x16x8xf32>
}

// -----

// An ONNX export's form: an explicit transpose of k and a division by
// sqrt(d); not causal, keys longer than queries.
// CHECK-LABEL: func.func @onnx_div
// CHECK: graph.attention %arg0, %arg1, %arg2 scale = 2.500000e-01 : tensor<3x10x16xf32>, tensor<3x12x16xf32>, tensor<3x12x16xf32>
// CHECK-NOT: graph.transpose
func.func @onnx_div(%q: tensor<3x10x16xf32>, %k: tensor<3x12x16xf32>, %v: tensor<3x12x16xf32>) -> tensor<3x10x16xf32> {
  %kt = graph.transpose %k [0, 2, 1] : tensor<3x12x16xf32>
  %s = graph.matmul %q, %kt : tensor<3x10x16xf32>, tensor<3x16x12xf32>
  %c = graph.constant dense<4.0> : tensor<f32>
  %t = graph.div %s, %c : tensor<3x10x12xf32>, tensor<f32>
  %p = graph.softmax %t axis = 2 : tensor<3x10x12xf32>
  %o = graph.matmul %p, %v : tensor<3x10x12xf32>, tensor<3x12x16xf32>
  return %o : tensor<3x10x16xf32>
}

// -----

// Grouped-query attention as the zoo's LLaMA writes it (keys broadcast over
// the 3 query heads of each group); no scale; a dropout that drops nothing.
// CHECK-LABEL: func.func @gqa
// CHECK: graph.attention %arg0, %arg1, %arg2 scale = 1.000000e+00 causal : tensor<1x2x3x8x4xf32>, tensor<1x2x1x8x4xf32>, tensor<1x2x1x8x4xf32>
// CHECK-NOT: graph.dropout
func.func @gqa(%q: tensor<1x2x3x8x4xf32>, %k: tensor<1x2x1x8x4xf32>, %v: tensor<1x2x1x8x4xf32>) -> tensor<1x2x3x8x4xf32> {
  %s = graph.matmul %q, %k transpose_rhs : tensor<1x2x3x8x4xf32>, tensor<1x2x1x8x4xf32>
  %p = graph.softmax %s axis = 4 causal : tensor<1x2x3x8x8xf32>
  %d = graph.dropout %p ratio = 0.0 : tensor<1x2x3x8x8xf32>
  %o = graph.matmul %d, %v : tensor<1x2x3x8x8xf32>, tensor<1x2x1x8x4xf32>
  return %o : tensor<1x2x3x8x4xf32>
}

// -----

// Left unfused: a dropout that drops, probabilities read twice, scores
// scaled by a tensor, and queries broadcast over keys' heads.
// CHECK-LABEL: func.func @dropout
// CHECK-NOT: graph.attention
// CHECK: graph.softmax
func.func @dropout(%q: tensor<2x16x8xf32>, %v: tensor<2x16x8xf32>) -> tensor<2x16x8xf32> {
  %s = graph.matmul %q, %q transpose_rhs : tensor<2x16x8xf32>, tensor<2x16x8xf32>
  %p = graph.softmax %s axis = 2 : tensor<2x16x16xf32>
  %d = graph.dropout %p ratio = 0.1 : tensor<2x16x16xf32>
  %o = graph.matmul %d, %v : tensor<2x16x16xf32>, tensor<2x16x8xf32>
  return %o : tensor<2x16x8xf32>
}

// -----

// CHECK-LABEL: func.func @probs_returned
// CHECK-NOT: graph.attention
func.func @probs_returned(%q: tensor<2x16x8xf32>, %v: tensor<2x16x8xf32>) -> (tensor<2x16x8xf32>, tensor<2x16x16xf32>) {
  %s = graph.matmul %q, %q transpose_rhs : tensor<2x16x8xf32>, tensor<2x16x8xf32>
  %p = graph.softmax %s axis = 2 : tensor<2x16x16xf32>
  %o = graph.matmul %p, %v : tensor<2x16x16xf32>, tensor<2x16x8xf32>
  return %o, %p : tensor<2x16x8xf32>, tensor<2x16x16xf32>
}

// -----

// CHECK-LABEL: func.func @tensor_scale
// CHECK-NOT: graph.attention
func.func @tensor_scale(%q: tensor<2x16x8xf32>, %v: tensor<2x16x8xf32>, %m: tensor<2x16x16xf32>) -> tensor<2x16x8xf32> {
  %s = graph.matmul %q, %q transpose_rhs : tensor<2x16x8xf32>, tensor<2x16x8xf32>
  %t = graph.mul %s, %m : tensor<2x16x16xf32>, tensor<2x16x16xf32>
  %p = graph.softmax %t axis = 2 : tensor<2x16x16xf32>
  %o = graph.matmul %p, %v : tensor<2x16x16xf32>, tensor<2x16x8xf32>
  return %o : tensor<2x16x8xf32>
}

// -----

// CHECK-LABEL: func.func @query_broadcast
// CHECK-NOT: graph.attention
func.func @query_broadcast(%q: tensor<1x16x8xf32>, %k: tensor<2x16x8xf32>) -> tensor<2x16x8xf32> {
  %s = graph.matmul %q, %k transpose_rhs : tensor<1x16x8xf32>, tensor<2x16x8xf32>
  %p = graph.softmax %s axis = 2 : tensor<2x16x16xf32>
  %o = graph.matmul %p, %k : tensor<2x16x16xf32>, tensor<2x16x8xf32>
  return %o : tensor<2x16x8xf32>
}

// -----

// PyTorch's dynamo exporter's form of a LLaMA attention (SDPA decomposed):
// the scale split as its root on q and on k^T, k^T written as
// reshape-transpose-reshape, keys and values repeated over the grouped
// query heads by a product with ones, the padding-and-causal mask added
// to the scores, and the guard against fully masked rows. One
// graph.attention: queries regrouped [2, 4] -> [2, 2, 2] to read the keys
// unrepeated, the mask regrouped to broadcast over both, the output back.
// CHECK-LABEL: func.func @dynamo_sdpa
// CHECK-DAG: %[[Q:.*]] = graph.reshape %arg0 : tensor<2x4x16x8xf32> -> tensor<2x2x2x16x8xf32>
// CHECK-DAG: %[[K:.*]] = graph.reshape %arg1 : tensor<2x2x16x8xf32> -> tensor<2x2x1x16x8xf32>
// CHECK-DAG: %[[V:.*]] = graph.reshape %arg2 : tensor<2x2x16x8xf32> -> tensor<2x2x1x16x8xf32>
// CHECK-DAG: %[[M:.*]] = graph.reshape %arg3 : tensor<2x1x16x16xf32> -> tensor<2x1x1x16x16xf32>
// CHECK: %[[O:.*]], %{{.*}} = graph.attention %[[Q]], %[[K]], %[[V]] mask %[[M]] : tensor<2x1x1x16x16xf32> scale = 0.35355{{[0-9]*}} : tensor<2x2x2x16x8xf32>, tensor<2x2x1x16x8xf32>, tensor<2x2x1x16x8xf32>
// CHECK: %[[R:.*]] = graph.reshape %[[O]] : tensor<2x2x2x16x8xf32> -> tensor<2x4x16x8xf32>
// CHECK-NOT: graph.softmax
// CHECK: return %[[R]]
func.func @dynamo_sdpa(%q: tensor<2x4x16x8xf32>, %k: tensor<2x2x16x8xf32>, %v: tensor<2x2x16x8xf32>, %mask: tensor<2x1x16x16xf32>) -> tensor<2x4x16x8xf32> {
  %k5 = graph.reshape %k : tensor<2x2x16x8xf32> -> tensor<2x2x1x16x8xf32>
  %ones = graph.constant dense<1.0> : tensor<2x2x2x16x8xf32>
  %kx = graph.mul %k5, %ones : tensor<2x2x1x16x8xf32>, tensor<2x2x2x16x8xf32>
  %v5 = graph.reshape %v : tensor<2x2x16x8xf32> -> tensor<2x2x1x16x8xf32>
  %ones2 = graph.constant dense<1.0> : tensor<2x2x2x16x8xf32>
  %vx = graph.mul %v5, %ones2 : tensor<2x2x1x16x8xf32>, tensor<2x2x2x16x8xf32>
  %vr = graph.reshape %vx : tensor<2x2x2x16x8xf32> -> tensor<2x4x16x8xf32>
  %k3 = graph.reshape %kx : tensor<2x2x2x16x8xf32> -> tensor<8x16x8xf32>
  %kt = graph.transpose %k3 [0, 2, 1] : tensor<8x16x8xf32>
  %kt4 = graph.reshape %kt : tensor<8x8x16xf32> -> tensor<2x4x8x16xf32>
  %root = graph.constant dense<0.594603539> : tensor<f32>
  %qs = graph.mul %q, %root : tensor<2x4x16x8xf32>, tensor<f32>
  %ks = graph.mul %kt4, %root : tensor<2x4x8x16xf32>, tensor<f32>
  %s = graph.matmul %qs, %ks : tensor<2x4x16x8xf32>, tensor<2x4x8x16xf32>
  %sm = graph.add %s, %mask : tensor<2x4x16x16xf32>, tensor<2x1x16x16xf32>
  %p = graph.softmax %sm axis = 3 : tensor<2x4x16x16xf32>
  %nan = graph.compare "ne", %p, %p : tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>
  %zero = graph.constant dense<0.0> : tensor<f32>
  %pg = graph.where %nan, %zero, %p : tensor<2x4x16x16xi1>, tensor<f32>, tensor<2x4x16x16xf32>
  %o = graph.matmul %pg, %vr : tensor<2x4x16x16xf32>, tensor<2x4x16x8xf32>
  return %o : tensor<2x4x16x8xf32>
}

// -----

// The ONNX Attention import's boolean mask (where(keep, scores, -inf))
// becomes the additive where(keep, 0, -inf).
// CHECK-LABEL: func.func @boolean_mask
// CHECK: %[[A:.*]] = graph.where %arg3, %{{.*}}, %{{.*}} : tensor<2x1x1x6xi1>, tensor<f32>, tensor<f32>
// CHECK: graph.attention %arg0, %arg1, %arg2 mask %[[A]] : tensor<2x1x1x6xf32> scale = 5.000000e-01 causal : tensor<2x3x6x4xf32>, tensor<2x3x6x4xf32>, tensor<2x3x6x4xf32>
func.func @boolean_mask(%q: tensor<2x3x6x4xf32>, %k: tensor<2x3x6x4xf32>, %v: tensor<2x3x6x4xf32>, %keep: tensor<2x1x1x6xi1>) -> tensor<2x3x6x4xf32> {
  %s = graph.matmul %q, %k transpose_rhs : tensor<2x3x6x4xf32>, tensor<2x3x6x4xf32>
  %c = graph.constant dense<0.5> : tensor<f32>
  %t = graph.mul %s, %c : tensor<2x3x6x6xf32>, tensor<f32>
  %ninf = graph.constant dense<0xFF800000> : tensor<f32>
  %w = graph.where %keep, %t, %ninf : tensor<2x1x1x6xi1>, tensor<2x3x6x6xf32>, tensor<f32>
  %p = graph.softmax %w axis = 3 causal : tensor<2x3x6x6xf32>
  %o = graph.matmul %p, %v : tensor<2x3x6x6xf32>, tensor<2x3x6x4xf32>
  return %o : tensor<2x3x6x4xf32>
}

// -----

// Left unfused: a bias computed from a parameter (T5's relative-position
// bias) would need a gradient graph.attention does not make.
// CHECK-LABEL: func.func @trainable_bias
// CHECK-NOT: graph.attention
// CHECK: graph.softmax
func.func @trainable_bias(%q: tensor<2x3x6x4xf32>, %k: tensor<2x3x6x4xf32>, %v: tensor<2x3x6x4xf32>) -> tensor<2x3x6x4xf32> {
  %bias = graph.param "relative_attention_bias" : tensor<1x3x6x6xf32>
  %s = graph.matmul %q, %k transpose_rhs : tensor<2x3x6x4xf32>, tensor<2x3x6x4xf32>
  %b = graph.add %s, %bias : tensor<2x3x6x6xf32>, tensor<1x3x6x6xf32>
  %p = graph.softmax %b axis = 3 : tensor<2x3x6x6xf32>
  %o = graph.matmul %p, %v : tensor<2x3x6x6xf32>, tensor<2x3x6x4xf32>
  return %o : tensor<2x3x6x4xf32>
}

// -----

// A mask the exporter folded into an initializer is a frozen parameter: it
// needs no gradient and fuses.
// CHECK-LABEL: func.func @frozen_mask
// CHECK: graph.attention %arg0, %arg0, %arg0 mask %{{.*}} : tensor<1x1x6x6xf32> scale = 1.000000e+00
func.func @frozen_mask(%q: tensor<2x3x6x4xf32>) -> tensor<2x3x6x4xf32> {
  %mask = graph.param "val_160" frozen : tensor<1x1x6x6xf32>
  %s = graph.matmul %q, %q transpose_rhs : tensor<2x3x6x4xf32>, tensor<2x3x6x4xf32>
  %b = graph.add %s, %mask : tensor<2x3x6x6xf32>, tensor<1x1x6x6xf32>
  %p = graph.softmax %b axis = 3 : tensor<2x3x6x6xf32>
  %o = graph.matmul %p, %q : tensor<2x3x6x6xf32>, tensor<2x3x6x4xf32>
  return %o : tensor<2x3x6x4xf32>
}

// -----

// The TorchScript exporter's form of GPT-2's attention: k^T as one
// transpose from [B, S, H, D] to [B, H, D, S] (the key is read through
// the rest of it), and the causal mask folded into a constant of 0 and
// -inf, which becomes the op's `causal` (masked blocks skipped).
// CHECK-LABEL: func.func @torchscript_causal
// CHECK: %[[K:.*]] = graph.transpose %arg1 [0, 2, 1, 3] : tensor<1x4x2x8xf32>
// CHECK: graph.attention %arg0, %[[K]], %arg2 scale = 2.500000e-01 causal : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
// CHECK-NOT: mask
func.func @torchscript_causal(%q: tensor<1x2x4x8xf32>, %k: tensor<1x4x2x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %kt = graph.transpose %k [0, 2, 3, 1] : tensor<1x4x2x8xf32>
  %c = graph.constant dense<0.5> : tensor<f32>
  %qs = graph.mul %q, %c : tensor<1x2x4x8xf32>, tensor<f32>
  %ks = graph.mul %kt, %c : tensor<1x2x8x4xf32>, tensor<f32>
  %s = graph.matmul %qs, %ks : tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>
  %mask = graph.constant dense<[[0.0, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0xFF800000], [0.0, 0.0, 0.0, 0.0]]> : tensor<4x4xf32>
  %b = graph.add %s, %mask : tensor<1x2x4x4xf32>, tensor<4x4xf32>
  %p = graph.softmax %b axis = 3 : tensor<1x2x4x4xf32>
  %o = graph.matmul %p, %v : tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

// A constant mask that is not the causal triangle (here the lowest float
// above the diagonal but one entry off) stays a mask.
// CHECK-LABEL: func.func @almost_causal
// CHECK: graph.attention %arg0, %arg0, %arg0 mask %{{.*}} : tensor<1x1x3x3xf32> scale = 1.000000e+00 :
func.func @almost_causal(%q: tensor<1x2x3x8xf32>) -> tensor<1x2x3x8xf32> {
  %s = graph.matmul %q, %q transpose_rhs : tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>
  %mask = graph.constant dense<[[0.0, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, -3.40282347E+38], [0.0, -1.0, 0.0]]> : tensor<3x3xf32>
  %b = graph.add %s, %mask : tensor<1x2x3x3xf32>, tensor<3x3xf32>
  %p = graph.softmax %b axis = 3 : tensor<1x2x3x3xf32>
  %o = graph.matmul %p, %q : tensor<1x2x3x3xf32>, tensor<1x2x3x8xf32>
  return %o : tensor<1x2x3x8xf32>
}
