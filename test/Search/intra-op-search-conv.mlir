// RUN: cleave-opt %s --cleave-intra-op-search="mesh=2 cluster=dgx-a100-80g param-memory=330000" -split-input-file | FileCheck %s

// Two 3x3 convolutions whose 576 KiB of filters must fit 322 KiB per
// device: the first splits its output channels (with the batch norm's
// channels and parameters), the second its input channels, leaving partial
// sums; one reduction a block, as Megatron's column-then-row MLP. Batch
// norm in training never splits the batch (its statistics are the
// batch's).

// CHECK-LABEL: func.func @block
// CHECK: graph.conv2d {{.*}}graph.sharding = #graph.op_sharding<"conv.out"
// CHECK: graph.batch_norm {{.*}}graph.sharding = #graph.op_sharding<"split1", operands = [<[{}, {0}, {}, {}]>, <[{0}]>, <[{0}]>, <[{0}]>, <[{0}]>], results = [<[{}, {0}, {}, {}]>]
// CHECK: graph.relu {{.*}}graph.sharding = #graph.op_sharding<"split1"
// CHECK: graph.conv2d {{.*}}graph.sharding = #graph.op_sharding<"conv.in+{{ar|rs[01]}}"{{.*}}partial = {{all_reduce|reduce_scatter}}
func.func @block(%x: tensor<8x64x16x16xf32>) -> tensor<8x64x16x16xf32> {
  %w1 = graph.param "conv1.weight" : tensor<128x64x3x3xf32>
  %c1 = graph.conv2d %x, %w1 strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups = 1 : tensor<8x64x16x16xf32>, tensor<128x64x3x3xf32>
  %s = graph.param "bn.weight" : tensor<128xf32>
  %b = graph.param "bn.bias" : tensor<128xf32>
  %m = graph.param "bn.running_mean" frozen : tensor<128xf32>
  %v = graph.param "bn.running_var" frozen : tensor<128xf32>
  %n = graph.batch_norm %c1, %s, %b, %m, %v epsilon = 1.000000e-05 training : tensor<8x128x16x16xf32>, tensor<128xf32>, tensor<128xf32>, tensor<128xf32>, tensor<128xf32>
  %r = graph.relu %n : tensor<8x128x16x16xf32>
  %w2 = graph.param "conv2.weight" : tensor<64x128x3x3xf32>
  %c2 = graph.conv2d %r, %w2 strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups = 1 : tensor<8x128x16x16xf32>, tensor<64x128x3x3xf32>
  return %c2 : tensor<8x64x16x16xf32>
}

// -----

// A depthwise convolution splits its groups (channels with their filters);
// pooling splits channels or images, never pixels.

// CHECK-LABEL: func.func @depthwise
// CHECK: graph.conv2d {{.*}}graph.sharding = #graph.op_sharding<"conv.groups"
// CHECK: graph.max_pool2d {{.*}}results = [<[{}, {0}, {}, {}]>]
// CHECK: graph.global_avg_pool {{.*}}results = [<[{}, {0}, {}, {}]>]
func.func @depthwise(%x: tensor<8x4096x8x8xf32>) -> tensor<8x4096x1x1xf32> {
  %w = graph.param "dw.weight" : tensor<4096x1x3x3xf32>
  %c = graph.conv2d %x, %w strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups = 4096 : tensor<8x4096x8x8xf32>, tensor<4096x1x3x3xf32>
  %p = graph.max_pool2d %c kernel [3, 3] strides [2, 2] padding [1, 1, 1, 1] : tensor<8x4096x8x8xf32>
  %g = graph.global_avg_pool %p : tensor<8x4096x4x4xf32>
  return %g : tensor<8x4096x1x1xf32>
}

// -----

// Many images and a small filter. Batch norm in training computes its
// statistics over all the images, so it never splits them (the rules:
// SearchTest.cpp, BatchNormInTrainingSplitsOnlyChannels): both ops split
// the channels.

// CHECK-LABEL: func.func @training
// CHECK: graph.conv2d {{.*}}graph.sharding = #graph.op_sharding<"conv.out"
// CHECK: graph.batch_norm {{.*}}training {{.*}}graph.sharding = #graph.op_sharding<"split1"
func.func @training(%x: tensor<64x16x8x8xf32>) -> tensor<64x16x8x8xf32> {
  %w = graph.param "conv.weight" : tensor<16x16x1x1xf32>
  %c = graph.conv2d %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups = 1 : tensor<64x16x8x8xf32>, tensor<16x16x1x1xf32>
  %s = graph.param "bn.weight" : tensor<16xf32>
  %b = graph.param "bn.bias" : tensor<16xf32>
  %m = graph.param "bn.running_mean" frozen : tensor<16xf32>
  %v = graph.param "bn.running_var" frozen : tensor<16xf32>
  %n = graph.batch_norm %c, %s, %b, %m, %v epsilon = 1.000000e-05 training : tensor<64x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
  return %n : tensor<64x16x8x8xf32>
}
