// RUN: cleave-opt %s | cleave-opt | FileCheck %s
// graph.attention and graph.attention_grad print and parse back, with the
// inferred result types: out like the query, lse without its head size,
// gradients like query, key and value.

// CHECK-LABEL: func.func @mha
func.func @mha(%q: tensor<2x4x16x8xf32>, %k: tensor<2x4x16x8xf32>,
               %v: tensor<2x4x16x8xf32>) -> (tensor<2x4x16x8xf32>, tensor<2x4x16xf32>) {
  // CHECK: %{{.*}}, %{{.*}} = graph.attention %{{.*}}, %{{.*}}, %{{.*}} scale = 0.353553{{[0-9]*}} causal : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>
  %o, %lse = graph.attention %q, %k, %v scale = 0.35355339059327373 causal : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>
  return %o, %lse : tensor<2x4x16x8xf32>, tensor<2x4x16xf32>
}

// Grouped-query attention: 2 key heads, each read by a group of 3 query
// heads, through a trailing broadcast dimension; queries split over "cp".
// CHECK-LABEL: func.func @gqa_block
func.func @gqa_block(%q: tensor<1x2x3x8x16xf32>, %k: tensor<1x2x1x32x16xf32>,
                     %v: tensor<1x2x1x32x16xf32>, %dy: tensor<1x2x3x8x16xf32>) -> tensor<1x2x1x32x16xf32> {
  // CHECK: graph.attention {{.*}} scale = 2.500000e-01 causal query_blocks ["cp"] : tensor<1x2x3x8x16xf32>, tensor<1x2x1x32x16xf32>, tensor<1x2x1x32x16xf32>
  %o, %lse = graph.attention %q, %k, %v scale = 0.25 causal query_blocks ["cp"] : tensor<1x2x3x8x16xf32>, tensor<1x2x1x32x16xf32>, tensor<1x2x1x32x16xf32>
  // CHECK: graph.attention_grad {{.*}} scale = 2.500000e-01 causal query_blocks ["cp"] : tensor<1x2x3x8x16xf32>, tensor<1x2x1x32x16xf32>, tensor<1x2x1x32x16xf32>, tensor<1x2x3x8x16xf32>, tensor<1x2x3x8xf32>
  %dq, %dk, %dv = graph.attention_grad %q, %k, %v, %o, %lse, %dy scale = 0.25 causal query_blocks ["cp"] : tensor<1x2x3x8x16xf32>, tensor<1x2x1x32x16xf32>, tensor<1x2x1x32x16xf32>, tensor<1x2x3x8x16xf32>, tensor<1x2x3x8xf32>
  return %dk : tensor<1x2x1x32x16xf32>
}

// An additive mask (padding per batch entry, one row for all queries) on
// both; the gradient's mask operand after the gradient of the output.
// CHECK-LABEL: func.func @masked
func.func @masked(%q: tensor<2x4x16x8xf32>, %m: tensor<2x1x1x16xf32>,
                  %dy: tensor<2x4x16x8xf32>) -> tensor<2x4x16x8xf32> {
  // CHECK: %[[O:.*]], %[[L:.*]] = graph.attention %arg0, %arg0, %arg0 mask %arg1 : tensor<2x1x1x16xf32> scale = 1.250000e-01 causal : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>
  %o, %lse = graph.attention %q, %q, %q mask %m : tensor<2x1x1x16xf32> scale = 0.125 causal : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>
  // CHECK: graph.attention_grad %arg0, %arg0, %arg0, %[[O]], %[[L]], %arg2 mask %arg1 : tensor<2x1x1x16xf32> scale = 1.250000e-01 causal
  %dq, %dk, %dv = graph.attention_grad %q, %q, %q, %o, %lse, %dy mask %m : tensor<2x1x1x16xf32> scale = 0.125 causal : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16xf32>
  return %dq : tensor<2x4x16x8xf32>
}
