// RUN: cleave-opt %s | cleave-opt | FileCheck %s
// RUN: cleave-opt %s --mlir-print-op-generic | cleave-opt | FileCheck %s
// Backward, optimizer and helper ops print and parse back identically.

// CHECK-LABEL: func.func @backward
func.func @backward(%x: tensor<2x3x8xf32>, %g: tensor<8xf32>, %img: tensor<2x4x6x6xf32>, %c: tensor<4xf32>,
                    %ids: tensor<2x3xi64>, %table: tensor<10x8xf32>, %logits: tensor<2x3x10xf32>, %l: tensor<f32>) {
  // CHECK: graph.compare "ge", %{{.*}}, %{{.*}} : tensor<2x3x8xf32>, tensor<8xf32>
  %m = graph.compare "ge", %x, %g : tensor<2x3x8xf32>, tensor<8xf32>
  // CHECK: graph.broadcast_to %{{.*}} : tensor<8xf32> -> tensor<2x3x8xf32>
  %b = graph.broadcast_to %g : tensor<8xf32> -> tensor<2x3x8xf32>
  // CHECK: graph.activation_grad "gelu_tanh", %{{.*}}, %{{.*}} : tensor<2x3x8xf32>
  %0 = graph.activation_grad "gelu_tanh", %x, %b : tensor<2x3x8xf32>
  // CHECK: graph.softmax_grad %{{.*}}, %{{.*}} axis = 2 : tensor<2x3x8xf32>
  %1 = graph.softmax_grad %x, %0 axis = 2 : tensor<2x3x8xf32>
  // CHECK: graph.layer_norm_grad %{{.*}}, %{{.*}} scale(%{{.*}} : tensor<8xf32>) axis = 2 epsilon = 1.000000e-05 : tensor<2x3x8xf32>
  %2:3 = graph.layer_norm_grad %x, %1 scale(%g : tensor<8xf32>) axis = 2 epsilon = 1.0e-5 : tensor<2x3x8xf32>
  // CHECK: graph.rms_norm_grad %{{.*}}, %{{.*}} axis = 2 epsilon = 1.000000e-05 : tensor<2x3x8xf32>
  %3:2 = graph.rms_norm_grad %x, %1 axis = 2 epsilon = 1.0e-5 : tensor<2x3x8xf32>
  // CHECK: graph.batch_norm_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} epsilon = 1.000000e-05 training : tensor<2x4x6x6xf32>, tensor<4xf32>
  %4:3 = graph.batch_norm_grad %img, %img, %c, %c, %c epsilon = 1.0e-5 training : tensor<2x4x6x6xf32>, tensor<4xf32>
  // CHECK: graph.gather_grad %{{.*}}[%{{.*}}] axis = 0 : tensor<2x3x8xf32>, tensor<2x3xi64> -> tensor<10x8xf32>
  %5 = graph.gather_grad %x[%ids] axis = 0 : tensor<2x3x8xf32>, tensor<2x3xi64> -> tensor<10x8xf32>
  // CHECK: graph.slice_grad %{{.*}} starts [0, 0, 1] strides [1, 1, 2] : tensor<2x3x8xf32> -> tensor<2x3x17xf32>
  %6 = graph.slice_grad %x starts [0, 0, 1] strides [1, 1, 2] : tensor<2x3x8xf32> -> tensor<2x3x17xf32>
  // CHECK: graph.reduce_max_grad %{{.*}}, %{{.*}} [2] : tensor<2x3x8xf32>, tensor<2x3xf32>
  %r = graph.reduce_max %x [2] : tensor<2x3x8xf32>
  %7 = graph.reduce_max_grad %x, %r [2] : tensor<2x3x8xf32>, tensor<2x3xf32>
  %w = graph.param "w" : tensor<8x4x3x3xf32>
  %y = graph.conv2d %img, %w strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups = 1 : tensor<2x4x6x6xf32>, tensor<8x4x3x3xf32>
  // CHECK: graph.conv2d_input_grad %{{.*}}, %{{.*}} strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups = 1 : tensor<2x8x6x6xf32>, tensor<8x4x3x3xf32> -> tensor<2x4x6x6xf32>
  %8 = graph.conv2d_input_grad %y, %w strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups = 1 : tensor<2x8x6x6xf32>, tensor<8x4x3x3xf32> -> tensor<2x4x6x6xf32>
  // CHECK: graph.conv2d_filter_grad %{{.*}}, %{{.*}} strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups = 1 : tensor<2x4x6x6xf32>, tensor<2x8x6x6xf32> -> tensor<8x4x3x3xf32>
  %9 = graph.conv2d_filter_grad %img, %y strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups = 1 : tensor<2x4x6x6xf32>, tensor<2x8x6x6xf32> -> tensor<8x4x3x3xf32>
  %p = graph.max_pool2d %img kernel [2, 2] strides [2, 2] padding [0, 0, 0, 0] : tensor<2x4x6x6xf32>
  // CHECK: graph.pool2d_grad "max", %{{.*}}, %{{.*}} kernel [2, 2] strides [2, 2] padding [0, 0, 0, 0] : tensor<2x4x6x6xf32>, tensor<2x4x3x3xf32>
  %10 = graph.pool2d_grad "max", %img, %p kernel [2, 2] strides [2, 2] padding [0, 0, 0, 0] : tensor<2x4x6x6xf32>, tensor<2x4x3x3xf32>
  // CHECK: graph.cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x3x10xf32>, tensor<2x3xi64>, tensor<f32>
  %11 = graph.cross_entropy_grad %logits, %ids, %l : tensor<2x3x10xf32>, tensor<2x3xi64>, tensor<f32>
  %rl = graph.reshape %logits : tensor<2x3x10xf32> -> tensor<6x10xf32>
  %gw, %gi = graph.moe_gate %rl top_k = 2 : tensor<6x10xf32>
  // CHECK: graph.moe_gate_grad %{{.*}}, %{{.*}} top_k = 2 : tensor<6x10xf32>, tensor<6x2xf32>
  %12 = graph.moe_gate_grad %rl, %gw top_k = 2 : tensor<6x10xf32>, tensor<6x2xf32>
  %e = graph.param "e" : tensor<10x2x8xf32>
  %comb = graph.moe_combine %e, %gw, %gi : tensor<10x2x8xf32>, tensor<6x2xf32>, tensor<6x2xi64>
  // CHECK: graph.moe_combine_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<10x2x8xf32>, tensor<6x2xf32>, tensor<6x2xi64>, tensor<6x8xf32>
  %13:2 = graph.moe_combine_grad %e, %gw, %gi, %comb : tensor<10x2x8xf32>, tensor<6x2xf32>, tensor<6x2xi64>, tensor<6x8xf32>
  return
}

// CHECK-LABEL: func.func @optimizers
func.func @optimizers(%p: tensor<4xf32>, %g: tensor<4xf32>, %step: tensor<f32>) {
  // CHECK: graph.optimizer_state "p.momentum" : tensor<4xf32>
  %m = graph.optimizer_state "p.momentum" : tensor<4xf32>
  // CHECK: graph.sgd_update %{{.*}}, %{{.*}}, %{{.*}} lr = 1.000000e-01 momentum = 9.000000e-01 weight_decay = 0.000000e+00 : tensor<4xf32>
  %0:2 = graph.sgd_update %p, %g, %m lr = 0.1 momentum = 0.9 weight_decay = 0.0 : tensor<4xf32>
  // CHECK: graph.adamw_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} lr = 1.000000e-03 betas = (9.000000e-01, 0.94999999999999996) eps = 1.000000e-08 weight_decay = 1.000000e-01 : tensor<4xf32>, tensor<f32>
  %1:3 = graph.adamw_update %p, %g, %m, %m, %step lr = 1.0e-3 betas = (0.9, 0.95) eps = 1.0e-8 weight_decay = 0.1 : tensor<4xf32>, tensor<f32>
  return
}
