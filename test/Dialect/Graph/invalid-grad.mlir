// RUN: cleave-opt %s -split-input-file -verify-diagnostics
// Every verifier error of the backward, optimizer and helper ops.

func.func @compare_predicate(%a: tensor<3xf32>) {
  // expected-error @+1 {{unknown predicate 'gte' (expected eq, ne, lt, le, gt or ge)}}
  %0 = graph.compare "gte", %a, %a : tensor<3xf32>, tensor<3xf32>
  return
}

// -----

func.func @broadcast_to_shape(%a: tensor<3xf32>) {
  // expected-error @+1 {{cannot broadcast 'tensor<3xf32>' to 'tensor<3x1xf32>'}}
  %0 = graph.broadcast_to %a : tensor<3xf32> -> tensor<3x1xf32>
  return
}

// -----

func.func @broadcast_to_incompatible(%a: tensor<3xf32>) {
  // expected-error @+1 {{shapes [3], [4] do not broadcast}}
  %0 = graph.broadcast_to %a : tensor<3xf32> -> tensor<4xf32>
  return
}

// -----

func.func @activation_kind(%a: tensor<3xf32>) {
  // expected-error @+1 {{unknown activation 'swish'}}
  %0 = graph.activation_grad "swish", %a, %a : tensor<3xf32>
  return
}

// -----

func.func @softmax_grad_axis(%a: tensor<3xf32>) {
  // expected-error @+1 {{softmax axis 1 is out of range for rank 1}}
  %0 = graph.softmax_grad %a, %a axis = 1 : tensor<3xf32>
  return
}

// -----

func.func @layer_norm_grad_axis(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{normalisation axis 2 is out of range for rank 2}}
  %0:3 = graph.layer_norm_grad %a, %a axis = 2 epsilon = 1.0e-5 : tensor<2x3xf32>
  return
}

// -----

func.func @rms_norm_grad_scale(%a: tensor<2x3xf32>, %s: tensor<2xf32>) {
  // expected-error @+1 {{scale must be 'tensor<3xf32>', got 'tensor<2xf32>'}}
  %0:2 = graph.rms_norm_grad %a, %a scale(%s : tensor<2xf32>) axis = 1 epsilon = 1.0e-5 : tensor<2x3xf32>
  return
}

// -----

func.func @batch_norm_grad_rank(%a: tensor<3xf32>, %c: tensor<3xf32>) {
  // expected-error @+1 {{batch_norm_grad expects input and gradient of one [N, C, ...] type}}
  %0:3 = graph.batch_norm_grad %a, %a, %c, %c, %c epsilon = 1.0e-5 : tensor<3xf32>, tensor<3xf32>
  return
}

// -----

func.func @batch_norm_grad_channels(%a: tensor<2x4x3x3xf32>, %c: tensor<3xf32>) {
  // expected-error @+1 {{per-channel operands must be 'tensor<4xf32>', got 'tensor<3xf32>'}}
  %0:3 = graph.batch_norm_grad %a, %a, %c, %c, %c epsilon = 1.0e-5 : tensor<2x4x3x3xf32>, tensor<3xf32>
  return
}

// -----

func.func @gather_grad_type(%g: tensor<2x5xf32>, %i: tensor<2xi64>) {
  // expected-error @+1 {{gradient has type 'tensor<2x5xf32>' but the forward op gives 'tensor<2x4xf32>'}}
  %0 = graph.gather_grad %g[%i] axis = 0 : tensor<2x5xf32>, tensor<2xi64> -> tensor<10x4xf32>
  return
}

// -----

func.func @slice_grad_rank(%g: tensor<2x2xf32>) {
  // expected-error @+1 {{needs one start and stride per dimension}}
  %0 = graph.slice_grad %g starts [0] strides [1, 1] : tensor<2x2xf32> -> tensor<4x4xf32>
  return
}

// -----

func.func @slice_grad_bounds(%g: tensor<2x2xf32>) {
  // expected-error @+1 {{slice [3, 5) is out of bounds for dimension 0 of size 4}}
  %0 = graph.slice_grad %g starts [3, 0] strides [1, 1] : tensor<2x2xf32> -> tensor<4x4xf32>
  return
}

// -----

func.func @reduce_max_grad_type(%x: tensor<2x3xf32>, %g: tensor<3xf32>) {
  // expected-error @+1 {{gradient has type 'tensor<3xf32>' but the forward op gives 'tensor<2xf32>'}}
  %0 = graph.reduce_max_grad %x, %g [1] : tensor<2x3xf32>, tensor<3xf32>
  return
}

// -----

func.func @conv_input_grad(%g: tensor<1x8x4x4xf32>, %w: tensor<8x3x3x3xf32>) {
  // expected-error @+1 {{gradient has type 'tensor<1x8x4x4xf32>' but the forward op gives 'tensor<1x8x6x6xf32>'}}
  %0 = graph.conv2d_input_grad %g, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups = 1 : tensor<1x8x4x4xf32>, tensor<8x3x3x3xf32> -> tensor<1x3x8x8xf32>
  return
}

// -----

func.func @conv_filter_grad(%x: tensor<1x3x8x8xf32>, %g: tensor<1x8x6x6xf32>) {
  // expected-error @+1 {{filter expects 4 input channels per group, input has 3}}
  %0 = graph.conv2d_filter_grad %x, %g strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups = 1 : tensor<1x3x8x8xf32>, tensor<1x8x6x6xf32> -> tensor<8x4x3x3xf32>
  return
}

// -----

func.func @pool_grad_kind(%x: tensor<1x1x4x4xf32>, %g: tensor<1x1x2x2xf32>) {
  // expected-error @+1 {{kind must be max or avg, got 'min'}}
  %0 = graph.pool2d_grad "min", %x, %g kernel [2, 2] strides [2, 2] padding [0, 0, 0, 0] : tensor<1x1x4x4xf32>, tensor<1x1x2x2xf32>
  return
}

// -----

func.func @pool_grad_type(%x: tensor<1x1x4x4xf32>, %g: tensor<1x1x3x3xf32>) {
  // expected-error @+1 {{gradient has type 'tensor<1x1x3x3xf32>' but the forward op gives 'tensor<1x1x2x2xf32>'}}
  %0 = graph.pool2d_grad "max", %x, %g kernel [2, 2] strides [2, 2] padding [0, 0, 0, 0] : tensor<1x1x4x4xf32>, tensor<1x1x3x3xf32>
  return
}

// -----

func.func @moe_combine_grad(%y: tensor<4x8x16xf32>, %w: tensor<32x2xf32>, %i: tensor<32x2xi64>, %g: tensor<32x8xf32>) {
  // expected-error @+1 {{gradient 'tensor<32x8xf32>' must have the combined type 'tensor<32x16xf32>'}}
  %0:2 = graph.moe_combine_grad %y, %w, %i, %g : tensor<4x8x16xf32>, tensor<32x2xf32>, tensor<32x2xi64>, tensor<32x8xf32>
  return
}
