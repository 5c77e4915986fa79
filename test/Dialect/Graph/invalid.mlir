// RUN: cleave-opt %s -split-input-file -verify-diagnostics
// Every verifier and shape-inference error of the graph dialect.

func.func @input_name() {
  // expected-error @+1 {{needs a non-empty name}}
  %0 = graph.input "" : tensor<2xf32>
  return
}

// -----

func.func @param_name() {
  // expected-error @+1 {{needs a non-empty name}}
  %0 = graph.param "" : tensor<2xf32>
  return
}

// -----

func.func @param_alias_repeats_name() {
  // expected-error @+1 {{alias 'w' repeats a name}}
  %0 = graph.param "w" aliases ["w"] : tensor<2xf32>
  return
}

// -----

func.func @param_alias_twice() {
  // expected-error @+1 {{alias 'v' repeats a name}}
  %0 = graph.param "w" aliases ["v", "v"] : tensor<2xf32>
  return
}

// -----

func.func @param_alias_empty() {
  // expected-error @+1 {{has an empty alias}}
  %0 = graph.param "w" aliases [""] : tensor<2xf32>
  return
}

// -----

func.func @param_value() {
  // expected-error @+1 {{value of type 'tensor<3xf32>' does not match the result type 'tensor<2xf32>'}}
  %0 = graph.param "w" = dense<1.0> : tensor<3xf32> : tensor<2xf32>
  return
}

// -----

func.func @dynamic_shape(%a: tensor<?x3xf32>) {
  // expected-error @+1 {{must be statically shaped tensor}}
  %0 = graph.relu %a : tensor<?x3xf32>
  return
}

// -----

func.func @dropout_ratio(%a: tensor<2xf32>) {
  // expected-error @+1 {{ratio must be in [0, 1), got 1}}
  %0 = graph.dropout %a ratio = 1.0 : tensor<2xf32>
  return
}

// -----

func.func @cast_shape(%a: tensor<2xf32>) {
  // expected-error @+1 {{cannot change the shape}}
  %0 = graph.cast %a : tensor<2xf32> to tensor<3xbf16>
  return
}

// -----

func.func @broadcast(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>) {
  // expected-error @+1 {{shapes [2, 3], [4, 3] do not broadcast}}
  %0 = graph.add %a, %b : tensor<2x3xf32>, tensor<4x3xf32>
  return
}

// -----

func.func @bool_arithmetic(%a: tensor<3xi1>) {
  // expected-error @+1 {{computes on numbers, not bool: got 'tensor<3xi1>'}}
  %0 = graph.add %a, %a : tensor<3xi1>, tensor<3xi1>
  return
}

// -----

func.func @integer_pow(%a: tensor<3xi32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of floating-point values}}
  %0 = graph.pow %a, %a : tensor<3xi32>, tensor<3xi32>
  return
}

// -----

func.func @float_mod(%a: tensor<3xf32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of signless integer or unsigned integer values}}
  %0 = graph.mod %a, %a : tensor<3xf32>, tensor<3xf32>
  return
}

// -----

func.func @signed_shift(%a: tensor<3xi8>) {
  // expected-error @+1 {{shifts unsigned integers, got 'tensor<3xi8>'}}
  %0 = graph.bit_shift %a, %a : tensor<3xi8>, tensor<3xi8>
  return
}

// -----

func.func @signedness(%a: tensor<3xi8>, %b: tensor<3xui8>) {
  // expected-error @+1 {{operand element types differ: 'i8' vs 'ui8'}}
  %0 = graph.min %a, %b : tensor<3xi8>, tensor<3xui8>
  return
}

// -----

func.func @element_types(%a: tensor<3xf32>, %b: tensor<3xbf16>) {
  // expected-error @+1 {{operand element types differ: 'f32' vs 'bf16'}}
  %0 = graph.mul %a, %b : tensor<3xf32>, tensor<3xbf16>
  return
}

// -----

func.func @where_broadcast(%c: tensor<5xi1>, %a: tensor<3xf32>) {
  // expected-error @+1 {{do not broadcast}}
  %0 = graph.where %c, %a, %a : tensor<5xi1>, tensor<3xf32>, tensor<3xf32>
  return
}

// -----

func.func @matmul_rank(%a: tensor<3xf32>, %b: tensor<3x4xf32>) {
  // expected-error @+1 {{matmul operands must have rank >= 2, got 1 and 2}}
  %0 = graph.matmul %a, %b : tensor<3xf32>, tensor<3x4xf32>
  return
}

// -----

func.func @matmul_types(%a: tensor<2x3xf32>, %b: tensor<3x4xf16>) {
  // expected-error @+1 {{matmul element types differ}}
  %0 = graph.matmul %a, %b : tensor<2x3xf32>, tensor<3x4xf16>
  return
}

// -----

func.func @matmul_contraction(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+1 {{matmul contraction sizes differ: 3 vs 4}}
  %0 = graph.matmul %a, %b : tensor<2x3xf32>, tensor<4x5xf32>
  return
}

// -----

func.func @matmul_batch(%a: tensor<2x2x3xf32>, %b: tensor<3x3x4xf32>) {
  // expected-error @+1 {{shapes [2], [3] do not broadcast}}
  %0 = graph.matmul %a, %b : tensor<2x2x3xf32>, tensor<3x3x4xf32>
  return
}

// -----

func.func @softmax_axis(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{softmax axis 2 is out of range for rank 2}}
  %0 = graph.softmax %a axis = 2 : tensor<2x3xf32>
  return
}

// -----

func.func @softmax_causal(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{causal softmax must run along the last axis}}
  %0 = graph.softmax %a axis = 0 causal : tensor<2x3xf32>
  return
}

// -----

func.func @softmax_query_blocks_not_causal(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{query_blocks places queries for the causal mask; it needs `causal`}}
  %0 = graph.softmax %a axis = 1 query_blocks ["cp"] : tensor<2x3xf32>
  return
}

// -----

func.func @softmax_query_blocks_empty(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{query_blocks must name at least one mesh axis}}
  %0 = graph.softmax %a axis = 1 causal query_blocks [] : tensor<2x3xf32>
  return
}

// -----

func.func @layer_norm_axis(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{layer_norm axis 2 is out of range for rank 2}}
  %0 = graph.layer_norm %a axis = 2 epsilon = 1.0e-5 : tensor<2x3xf32>
  return
}

// -----

func.func @layer_norm_scale(%a: tensor<2x3xf32>, %s: tensor<2xf32>) {
  // expected-error @+1 {{scale must be 'tensor<3xf32>', got 'tensor<2xf32>'}}
  %0 = graph.layer_norm %a scale(%s : tensor<2xf32>) axis = 1 epsilon = 1.0e-5 : tensor<2x3xf32>
  return
}

// -----

func.func @layer_norm_bias(%a: tensor<2x3xf32>, %s: tensor<3xf32>, %b: tensor<2x3xf32>) {
  // expected-error @+1 {{bias must be 'tensor<3xf32>', got 'tensor<2x3xf32>'}}
  %0 = graph.layer_norm %a scale(%s : tensor<3xf32>) bias(%b : tensor<2x3xf32>) axis = 1 epsilon = 1.0e-5 : tensor<2x3xf32>
  return
}

// -----

func.func @layer_norm_eps(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{epsilon must not be negative}}
  %0 = graph.layer_norm %a axis = 1 epsilon = -1.0 : tensor<2x3xf32>
  return
}

// -----

func.func @rms_norm_axis(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{rms_norm axis -1 is out of range for rank 2}}
  %0 = graph.rms_norm %a axis = -1 epsilon = 1.0e-5 : tensor<2x3xf32>
  return
}

// -----

func.func @rms_norm_scale(%a: tensor<2x3xf32>, %s: tensor<3xf16>) {
  // expected-error @+1 {{scale must be 'tensor<3xf32>', got 'tensor<3xf16>'}}
  %0 = graph.rms_norm %a scale(%s : tensor<3xf16>) axis = 1 epsilon = 1.0e-5 : tensor<2x3xf32>
  return
}

// -----

func.func @rms_norm_eps(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{epsilon must not be negative}}
  %0 = graph.rms_norm %a axis = 1 epsilon = -1.0 : tensor<2x3xf32>
  return
}

// -----

func.func @batch_norm_rank(%a: tensor<4xf32>, %c: tensor<4xf32>) {
  // expected-error @+1 {{expects an [N, C, ...] input}}
  %0 = graph.batch_norm %a, %c, %c, %c, %c epsilon = 1.0e-5 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @batch_norm_channels(%a: tensor<2x8x4x4xf32>, %c: tensor<8xf32>, %d: tensor<4xf32>) {
  // expected-error @+1 {{per-channel operands must be [8] of 'f32', got 'tensor<4xf32>'}}
  %0 = graph.batch_norm %a, %c, %c, %d, %c epsilon = 1.0e-5 : tensor<2x8x4x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<4xf32>, tensor<8xf32>
  return
}

// -----

func.func @rope_rank(%a: tensor<2x16x64xf32>) {
  // expected-error @+1 {{expects [batch, seq, heads, head_dim]}}
  %0 = graph.rope %a theta = 10000.0 : tensor<2x16x64xf32>
  return
}

// -----

func.func @rope_odd(%a: tensor<2x16x4x15xf32>) {
  // expected-error @+1 {{head_dim must be even, got 15}}
  %0 = graph.rope %a theta = 10000.0 : tensor<2x16x4x15xf32>
  return
}

// -----

func.func @rope_theta(%a: tensor<2x16x4x16xf32>) {
  // expected-error @+1 {{theta must be positive}}
  %0 = graph.rope %a theta = 0.0 : tensor<2x16x4x16xf32>
  return
}

// -----

func.func @gather_axis(%t: tensor<10x4xf32>, %i: tensor<3xi64>) {
  // expected-error @+1 {{gather axis 2 is out of range for rank 2}}
  %0 = graph.gather %t[%i] axis = 2 : tensor<10x4xf32>, tensor<3xi64>
  return
}

// -----

func.func @reshape_size(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{cannot reshape 'tensor<2x3xf32>' (6 elements) to 'tensor<7xf32>' (7 elements)}}
  %0 = graph.reshape %a : tensor<2x3xf32> -> tensor<7xf32>
  return
}

// -----

func.func @reshape_type(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{cannot change the element type}}
  %0 = graph.reshape %a : tensor<2x3xf32> -> tensor<6xf16>
  return
}

// -----

func.func @transpose_size(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{permutation has 3 entries for rank 2}}
  %0 = graph.transpose %a [0, 1, 2] : tensor<2x3xf32>
  return
}

// -----

func.func @transpose_perm(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{invalid permutation [1, 1]}}
  %0 = graph.transpose %a [1, 1] : tensor<2x3xf32>
  return
}

// -----

func.func @slice_rank(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{slice needs one start, limit and stride per dimension (rank 2)}}
  %0 = graph.slice %a starts [0] limits [1] strides [1] : tensor<2x3xf32>
  return
}

// -----

func.func @slice_stride(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{slice stride must be positive in dimension 1}}
  %0 = graph.slice %a starts [0, 0] limits [2, 3] strides [1, 0] : tensor<2x3xf32>
  return
}

// -----

func.func @slice_bounds(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{slice [1, 4) is out of bounds for dimension 1 of size 3}}
  %0 = graph.slice %a starts [0, 1] limits [2, 4] strides [1, 1] : tensor<2x3xf32>
  return
}

// -----

func.func @concat_axis(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{concat axis 2 is out of range for rank 2}}
  %0 = graph.concat %a, %a axis = 2 : tensor<2x3xf32>, tensor<2x3xf32>
  return
}

// -----

func.func @concat_rank(%a: tensor<2x3xf32>, %b: tensor<2x3x1xf32>) {
  // expected-error @+1 {{concat inputs differ in rank or element type}}
  %0 = graph.concat %a, %b axis = 0 : tensor<2x3xf32>, tensor<2x3x1xf32>
  return
}

// -----

func.func @concat_dims(%a: tensor<2x3xf32>, %b: tensor<2x4xf32>) {
  // expected-error @+1 {{concat inputs differ in dimension 1}}
  %0 = graph.concat %a, %b axis = 0 : tensor<2x3xf32>, tensor<2x4xf32>
  return
}

// -----

func.func @split_axis(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{split axis 3 is out of range for rank 2}}
  %0:2 = graph.split %a axis = 3 sizes [1, 1] : tensor<2x3xf32>
  return
}

// -----

func.func @split_negative(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{split sizes must not be negative}}
  %0:2 = graph.split %a axis = 1 sizes [4, -1] : tensor<2x3xf32>
  return
}

// -----

func.func @split_sum(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{split sizes [1, 1] do not add up to dimension 1 of size 3}}
  %0:2 = graph.split %a axis = 1 sizes [1, 1] : tensor<2x3xf32>
  return
}

// -----

func.func @reduce_axis(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{reduction axis 5 is out of range for rank 2}}
  %0 = graph.reduce_sum %a [5] : tensor<2x3xf32>
  return
}

// -----

func.func @reduce_repeated(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{reduction axis 1 is repeated}}
  %0 = graph.reduce_mean %a [1, 1] : tensor<2x3xf32>
  return
}

// -----

func.func @conv_rank(%x: tensor<3x32x32xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error @+1 {{conv2d expects NCHW input and OIHW filter, got ranks 3 and 4}}
  %0 = graph.conv2d %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups = 1 : tensor<3x32x32xf32>, tensor<16x3x3x3xf32>
  return
}

// -----

func.func @conv_attrs(%x: tensor<1x3x32x32xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error @+1 {{expected 2 strides, 2 dilations and 4 paddings, got 1, 2 and 4}}
  %0 = graph.conv2d %x, %w strides [1] padding [0, 0, 0, 0] dilations [1, 1] groups = 1 : tensor<1x3x32x32xf32>, tensor<16x3x3x3xf32>
  return
}

// -----

func.func @conv_stride(%x: tensor<1x3x32x32xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error @+1 {{strides and dilations must be positive}}
  %0 = graph.conv2d %x, %w strides [0, 1] padding [0, 0, 0, 0] dilations [1, 1] groups = 1 : tensor<1x3x32x32xf32>, tensor<16x3x3x3xf32>
  return
}

// -----

func.func @conv_padding(%x: tensor<1x3x32x32xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error @+1 {{padding must not be negative}}
  %0 = graph.conv2d %x, %w strides [1, 1] padding [0, -1, 0, 0] dilations [1, 1] groups = 1 : tensor<1x3x32x32xf32>, tensor<16x3x3x3xf32>
  return
}

// -----

func.func @conv_groups(%x: tensor<1x6x32x32xf32>, %w: tensor<16x2x3x3xf32>) {
  // expected-error @+1 {{groups = 4 must divide input channels 6 and output channels 16}}
  %0 = graph.conv2d %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups = 4 : tensor<1x6x32x32xf32>, tensor<16x2x3x3xf32>
  return
}

// -----

func.func @conv_channels(%x: tensor<1x4x32x32xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error @+1 {{filter expects 3 input channels per group, input has 4}}
  %0 = graph.conv2d %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups = 1 : tensor<1x4x32x32xf32>, tensor<16x3x3x3xf32>
  return
}

// -----

func.func @conv_bias(%x: tensor<1x3x32x32xf32>, %w: tensor<16x3x3x3xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{bias must be [16], got 'tensor<8xf32>'}}
  %0 = graph.conv2d %x, %w bias(%b : tensor<8xf32>) strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups = 1 : tensor<1x3x32x32xf32>, tensor<16x3x3x3xf32>
  return
}

// -----

func.func @conv_window(%x: tensor<1x3x2x2xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error @+1 {{conv2d window is larger than the input}}
  %0 = graph.conv2d %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups = 1 : tensor<1x3x2x2xf32>, tensor<16x3x3x3xf32>
  return
}

// -----

func.func @pool_rank(%x: tensor<3x8x8xf32>) {
  // expected-error @+1 {{pooling expects an NCHW input, got rank 3}}
  %0 = graph.max_pool2d %x kernel [2, 2] strides [2, 2] padding [0, 0, 0, 0] : tensor<3x8x8xf32>
  return
}

// -----

func.func @pool_kernel(%x: tensor<1x3x8x8xf32>) {
  // expected-error @+1 {{pooling expects 2 positive kernel sizes}}
  %0 = graph.avg_pool2d %x kernel [0, 2] strides [2, 2] padding [0, 0, 0, 0] : tensor<1x3x8x8xf32>
  return
}

// -----

func.func @pool_window(%x: tensor<1x3x2x2xf32>) {
  // expected-error @+1 {{pooling window is larger than the input}}
  %0 = graph.max_pool2d %x kernel [3, 3] strides [1, 1] padding [0, 0, 0, 0] : tensor<1x3x2x2xf32>
  return
}

// -----

func.func @global_pool_rank(%x: tensor<3x8x8xf32>) {
  // expected-error @+1 {{global_avg_pool expects an NCHW input, got rank 3}}
  %0 = graph.global_avg_pool %x : tensor<3x8x8xf32>
  return
}

// -----

func.func @cross_entropy_labels(%l: tensor<4x10xf32>, %y: tensor<5xi64>) {
  // expected-error @+1 {{labels 'tensor<5xi64>' must have the shape of logits 'tensor<4x10xf32>' without its class dimension}}
  %0 = graph.cross_entropy %l, %y : tensor<4x10xf32>, tensor<5xi64>
  return
}

// -----

func.func @moe_gate_rank(%l: tensor<2x4x8xf32>) {
  // expected-error @+1 {{router logits must be [tokens, experts]}}
  %w, %i = graph.moe_gate %l top_k = 2 : tensor<2x4x8xf32>
  return
}

// -----

func.func @moe_gate_k(%l: tensor<16x8xf32>) {
  // expected-error @+1 {{top_k = 9 must be in [1, 8]}}
  %w, %i = graph.moe_gate %l top_k = 9 : tensor<16x8xf32>
  return
}

// -----

func.func @moe_dispatch_routing(%x: tensor<16x32xf32>, %i: tensor<8x2xi64>) {
  // expected-error @+1 {{expected tokens [T, H] and routing [T, k]}}
  %0 = graph.moe_dispatch %x, %i experts = 4 capacity = 8 : tensor<16x32xf32>, tensor<8x2xi64>
  return
}

// -----

func.func @moe_dispatch_capacity(%x: tensor<16x32xf32>, %i: tensor<16x2xi64>) {
  // expected-error @+1 {{experts and capacity must be positive}}
  %0 = graph.moe_dispatch %x, %i experts = 4 capacity = 0 : tensor<16x32xf32>, tensor<16x2xi64>
  return
}

// -----

func.func @moe_combine_rank(%y: tensor<4x32xf32>, %w: tensor<16x2xf32>, %i: tensor<16x2xi64>) {
  // expected-error @+1 {{expert outputs must be [experts, capacity, H]}}
  %0 = graph.moe_combine %y, %w, %i : tensor<4x32xf32>, tensor<16x2xf32>, tensor<16x2xi64>
  return
}

// -----

func.func @moe_combine_routing(%y: tensor<4x8x32xf32>, %w: tensor<16x2xf32>, %i: tensor<16x1xi64>) {
  // expected-error @+1 {{must both be [T, k]}}
  %0 = graph.moe_combine %y, %w, %i : tensor<4x8x32xf32>, tensor<16x2xf32>, tensor<16x1xi64>
  return
}

// -----

// The generic form spells result types; a wrong one is caught by inference.
func.func @wrong_result_type(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) {
  // expected-error @+2 {{'graph.matmul' op inferred type(s) 'tensor<2x4xf32>' are incompatible with return type(s) of operation 'tensor<2x5xf32>'}}
  // expected-error @+1 {{'graph.matmul' op failed to infer returned types}}
  %0 = "graph.matmul"(%a, %b) : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x5xf32>
  return
}
