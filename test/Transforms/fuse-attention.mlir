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
