// RUN: cleave-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(cleave-spmd-partition{axis=tp size=2}))' | FileCheck %s

// A depthwise convolution split by its groups: each device convolves its
// 8 channels with their 8 filters as 8 groups.
// CHECK-LABEL: func.func @groups
func.func @groups(%x: tensor<2x16x4x4xf32>) -> tensor<2x16x4x4xf32> {
  // CHECK: %[[W:.*]] = graph.param "dw" {{.*}}: tensor<8x1x3x3xf32>
  %w = graph.param "dw" {graph.sharding = #graph.op_sharding<"split0", results = [<[{0}, {}, {}, {}]>]>} : tensor<16x1x3x3xf32>
  // CHECK: %[[X:.*]] = graph.shard_slice %arg0 axes ["tp"] size 2 dim 1 : tensor<2x16x4x4xf32> -> tensor<2x8x4x4xf32>
  // CHECK: %[[Y:.*]] = graph.conv2d %[[X]], %[[W]] strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups = 8 : tensor<2x8x4x4xf32>, tensor<8x1x3x3xf32>
  %y = graph.conv2d %x, %w strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups = 16 {graph.sharding = #graph.op_sharding<"conv.groups", operands = [<[{}, {0}, {}, {}]>, <[{0}, {}, {}, {}]>], results = [<[{}, {0}, {}, {}]>]>} : tensor<2x16x4x4xf32>, tensor<16x1x3x3xf32>
  // CHECK: graph.all_gather %[[Y]] axes ["tp"] size 2 dim 1
  return %y : tensor<2x16x4x4xf32>
}

// -----

// A slice that takes a split dimension whole takes the local block whole.
// CHECK-LABEL: func.func @slice
func.func @slice(%x: tensor<8x6xf32>) -> tensor<8x2xf32> {
  // CHECK: %[[X:.*]] = graph.shard_slice %arg0 axes ["tp"] size 2 dim 0 : tensor<8x6xf32> -> tensor<4x6xf32>
  // CHECK: graph.slice %[[X]] starts [0, 2] limits [4, 4] strides [1, 1] : tensor<4x6xf32>
  %y = graph.slice %x starts [0, 2] limits [8, 4] strides [1, 1] {graph.sharding = #graph.op_sharding<"split0", operands = [<[{0}, {}]>], results = [<[{0}, {}]>]>} : tensor<8x6xf32>
  return %y : tensor<8x2xf32>
}
