// RUN: cleave-opt %s -split-input-file -verify-diagnostics
// Every verifier error of the communication ops.

func.func @reduction(%x: tensor<8xf32>) {
  // expected-error @+1 {{unknown reduction 'prod' (expected sum, mean or max)}}
  %0 = graph.all_reduce %x axes ["tp"] size 2 reduction "prod" : tensor<8xf32>
  return
}

// -----

func.func @no_axes(%x: tensor<8xf32>) {
  // expected-error @+1 {{needs at least one mesh axis}}
  %0 = graph.all_reduce %x axes [] size 2 reduction "sum" : tensor<8xf32>
  return
}

// -----

func.func @group_size(%x: tensor<8xf32>) {
  // expected-error @+1 {{group size must be positive, got 0}}
  %0 = graph.copy_to_group %x axes ["tp"] size 0 : tensor<8xf32>
  return
}

// -----

func.func @gather_shape(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{result dimension 1 is 4, expected 8}}
  %0 = graph.all_gather %x axes ["tp"] size 2 dim 1 : tensor<8x4xf32> -> tensor<8x4xf32>
  return
}

// -----

func.func @gather_dim(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{dim 2 is out of range for rank 2}}
  %0 = graph.all_gather %x axes ["tp"] size 2 dim 2 : tensor<8x4xf32> -> tensor<8x8xf32>
  return
}

// -----

func.func @scatter_divisible(%x: tensor<6x4xf32>) {
  // expected-error @+1 {{dimension 0 of size 6 is not divisible by the group size 4}}
  %0 = graph.reduce_scatter %x axes ["dp"] size 4 dim 0 : tensor<6x4xf32> -> tensor<1x4xf32>
  return
}

// -----

func.func @slice_rank(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{must have the input's rank and element type}}
  %0 = graph.shard_slice %x axes ["tp"] size 2 dim 0 : tensor<8x4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @all_to_all_dims(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{split and concat dims must differ}}
  %0 = graph.all_to_all %x axes ["ep"] size 2 split 0 concat 0 : tensor<8x4xf32> -> tensor<8x4xf32>
  return
}

// -----

func.func @all_to_all_shape(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{does not match the input re-split, expected 'tensor<4x8xf32>'}}
  %0 = graph.all_to_all %x axes ["ep"] size 2 split 0 concat 1 : tensor<8x4xf32> -> tensor<8x4xf32>
  return
}

// -----

func.func @all_to_all_divisible(%x: tensor<3x4xf32>) {
  // expected-error @+1 {{split dimension 0 of size 3 is not divisible by the group size 2}}
  %0 = graph.all_to_all %x axes ["ep"] size 2 split 0 concat 1 : tensor<3x4xf32> -> tensor<1x8xf32>
  return
}

// -----

func.func @send_self(%x: tensor<8xf32>) {
  // expected-error @+1 {{offset must not be zero (a device cannot send to itself)}}
  graph.send %x axis "pp" offset 0 tag 0 : tensor<8xf32>
  return
}

// -----

func.func @recv_axis() {
  // expected-error @+1 {{needs a mesh axis}}
  %0 = graph.recv axis "" offset 1 tag 0 : tensor<8xf32>
  return
}
