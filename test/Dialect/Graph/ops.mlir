// RUN: cleave-opt %s | FileCheck %s
// Printing and parsing back gives the same text.
// RUN: cleave-opt %s | cleave-opt | FileCheck %s
// RUN: cleave-opt %s --mlir-print-op-generic | cleave-opt | FileCheck %s

// CHECK-LABEL: func.func @sources
func.func @sources() -> (tensor<4x8xi64>, tensor<8x16xf32>, tensor<2xf32>, tensor<f32>) {
  // CHECK: graph.input "tokens" : tensor<4x8xi64>
  %t = graph.input "tokens" : tensor<4x8xi64>
  // CHECK: graph.param "w" : tensor<8x16xf32>
  %w = graph.param "w" : tensor<8x16xf32>
  // CHECK: graph.param "bn.running_mean" frozen = dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32> : tensor<2xf32>
  %m = graph.param "bn.running_mean" frozen = dense<[1.0, 2.0]> : tensor<2xf32> : tensor<2xf32>
  // CHECK: graph.param "lm_head.weight" aliases ["wte.weight", "decoder.embed.weight"] : tensor<8x16xf32>
  %tied = graph.param "lm_head.weight" aliases ["wte.weight", "decoder.embed.weight"] : tensor<8x16xf32>
  // CHECK: graph.constant dense<1.250000e-01> : tensor<f32>
  %c = graph.constant dense<0.125> : tensor<f32>
  return %t, %w, %m, %c : tensor<4x8xi64>, tensor<8x16xf32>, tensor<2xf32>, tensor<f32>
}

// Integers of any signedness compute add ... min, mod, compare and where.
// CHECK-LABEL: func.func @integer_elementwise
func.func @integer_elementwise(%a: tensor<2x3xui8>, %b: tensor<3xui8>, %i: tensor<4xi64>, %c: tensor<4xi1>) -> (tensor<2x3xui8>, tensor<4xi64>, tensor<4xi1>, tensor<4xi1>) {
  // CHECK: graph.add %{{.*}}, %{{.*}} : tensor<2x3xui8>, tensor<3xui8>
  %0 = graph.add %a, %b : tensor<2x3xui8>, tensor<3xui8>
  // CHECK: graph.div %{{.*}}, %{{.*}} : tensor<2x3xui8>, tensor<3xui8>
  %d = graph.div %0, %b : tensor<2x3xui8>, tensor<3xui8>
  // CHECK: graph.bit_shift %{{.*}}, %{{.*}} {right} : tensor<2x3xui8>, tensor<3xui8>
  %1 = graph.bit_shift %d, %b {right} : tensor<2x3xui8>, tensor<3xui8>
  // CHECK: graph.mod %{{.*}}, %{{.*}} : tensor<4xi64>, tensor<4xi64>
  %2 = graph.mod %i, %i : tensor<4xi64>, tensor<4xi64>
  // CHECK: graph.mod %{{.*}}, %{{.*}} {fmod} : tensor<4xi64>, tensor<4xi64>
  %3 = graph.mod %2, %i {fmod} : tensor<4xi64>, tensor<4xi64>
  // CHECK: graph.max
  %4 = graph.max %3, %i : tensor<4xi64>, tensor<4xi64>
  // CHECK: graph.compare "lt", %{{.*}}, %{{.*}} : tensor<4xi64>, tensor<4xi64>
  %5 = graph.compare "lt", %4, %i : tensor<4xi64>, tensor<4xi64>
  // CHECK: graph.where %{{.*}}, %{{.*}}, %{{.*}} : tensor<4xi1>, tensor<4xi64>, tensor<4xi64>
  %6 = graph.where %5, %4, %i : tensor<4xi1>, tensor<4xi64>, tensor<4xi64>
  // A select between bools: the result is bool.
  // CHECK: graph.where %{{.*}}, %{{.*}}, %{{.*}} : tensor<4xi1>, tensor<4xi1>, tensor<4xi1>
  %7 = graph.where %c, %5, %c : tensor<4xi1>, tensor<4xi1>, tensor<4xi1>
  return %1, %6, %5, %7 : tensor<2x3xui8>, tensor<4xi64>, tensor<4xi1>, tensor<4xi1>
}

// CHECK-LABEL: func.func @elementwise
func.func @elementwise(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %c: tensor<2x1xi1>) {
  // CHECK: graph.add %{{.*}}, %{{.*}} : tensor<2x3xf32>, tensor<3xf32>
  %0 = graph.add %a, %b : tensor<2x3xf32>, tensor<3xf32>
  // CHECK: graph.sub
  %1 = graph.sub %0, %b : tensor<2x3xf32>, tensor<3xf32>
  // CHECK: graph.mul
  %2 = graph.mul %1, %a : tensor<2x3xf32>, tensor<2x3xf32>
  // CHECK: graph.div
  %3 = graph.div %2, %b : tensor<2x3xf32>, tensor<3xf32>
  // CHECK: graph.pow
  %4 = graph.pow %3, %b : tensor<2x3xf32>, tensor<3xf32>
  // CHECK: graph.max
  %5 = graph.max %4, %a : tensor<2x3xf32>, tensor<2x3xf32>
  // CHECK: graph.min
  %6 = graph.min %5, %a : tensor<2x3xf32>, tensor<2x3xf32>
  // CHECK: graph.where %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x1xi1>, tensor<2x3xf32>, tensor<3xf32>
  %7 = graph.where %c, %6, %b : tensor<2x1xi1>, tensor<2x3xf32>, tensor<3xf32>
  // CHECK: graph.neg
  %8 = graph.neg %7 : tensor<2x3xf32>
  // CHECK: graph.exp
  %9 = graph.exp %8 : tensor<2x3xf32>
  // CHECK: graph.log
  %10 = graph.log %9 : tensor<2x3xf32>
  // CHECK: graph.sqrt
  %11 = graph.sqrt %10 : tensor<2x3xf32>
  // CHECK: graph.rsqrt
  %12 = graph.rsqrt %11 : tensor<2x3xf32>
  // CHECK: graph.relu
  %13 = graph.relu %12 : tensor<2x3xf32>
  // CHECK: graph.tanh
  %14 = graph.tanh %13 : tensor<2x3xf32>
  // CHECK: graph.erf
  %15 = graph.erf %14 : tensor<2x3xf32>
  // CHECK: graph.sigmoid
  %16 = graph.sigmoid %15 : tensor<2x3xf32>
  // CHECK: graph.silu
  %17 = graph.silu %16 : tensor<2x3xf32>
  // CHECK: graph.gelu %{{.*}} : tensor<2x3xf32>
  %18 = graph.gelu %17 : tensor<2x3xf32>
  // CHECK: graph.gelu %{{.*}} tanh : tensor<2x3xf32>
  %19 = graph.gelu %18 tanh : tensor<2x3xf32>
  // CHECK: graph.dropout %{{.*}} ratio = 1.000000e-01 {seed = 7 : i64} : tensor<2x3xf32>
  %20 = graph.dropout %19 ratio = 0.1 {seed = 7 : i64} : tensor<2x3xf32>
  // CHECK: graph.cast %{{.*}} : tensor<2x3xf32> to tensor<2x3xbf16>
  %21 = graph.cast %20 : tensor<2x3xf32> to tensor<2x3xbf16>
  return
}

// CHECK-LABEL: func.func @linalg
func.func @linalg(%q: tensor<2x4x16x8xf32>, %k: tensor<2x1x16x8xf32>, %w: tensor<8x32xf32>) {
  // Batch dimensions broadcast: 4 query heads share one key head.
  // CHECK: graph.matmul %{{.*}}, %{{.*}} transpose_rhs : tensor<2x4x16x8xf32>, tensor<2x1x16x8xf32>
  %s = graph.matmul %q, %k transpose_rhs : tensor<2x4x16x8xf32>, tensor<2x1x16x8xf32>
  // CHECK: graph.softmax %{{.*}} axis = 3 causal : tensor<2x4x16x16xf32>
  %p = graph.softmax %s axis = 3 causal : tensor<2x4x16x16xf32>
  // CHECK: graph.softmax %{{.*}} axis = 3 causal query_blocks ["cp"] : tensor<2x4x16x16xf32>
  %pb = graph.softmax %s axis = 3 causal query_blocks ["cp"] : tensor<2x4x16x16xf32>
  // CHECK: graph.matmul %{{.*}}, %{{.*}} transpose_lhs : tensor<2x4x16x16xf32>, tensor<2x4x16x8xf32>
  %t = graph.matmul %p, %q transpose_lhs : tensor<2x4x16x16xf32>, tensor<2x4x16x8xf32>
  // CHECK: graph.matmul %{{.*}}, %{{.*}} : tensor<2x4x16x8xf32>, tensor<8x32xf32>
  %y = graph.matmul %t, %w : tensor<2x4x16x8xf32>, tensor<8x32xf32>
  return
}

// CHECK-LABEL: func.func @norms
func.func @norms(%x: tensor<2x16x64xf32>, %g: tensor<64xf32>, %img: tensor<2x8x4x4xf32>, %c: tensor<8xf32>) {
  // CHECK: graph.layer_norm %{{.*}} scale(%{{.*}} : tensor<64xf32>) bias(%{{.*}} : tensor<64xf32>) axis = 2 epsilon = 1.000000e-05 : tensor<2x16x64xf32>
  %0 = graph.layer_norm %x scale(%g : tensor<64xf32>) bias(%g : tensor<64xf32>) axis = 2 epsilon = 1.0e-5 : tensor<2x16x64xf32>
  // CHECK: graph.layer_norm %{{.*}} axis = 2 epsilon = 0.000000e+00 : tensor<2x16x64xf32>
  %1 = graph.layer_norm %0 axis = 2 epsilon = 0.0 : tensor<2x16x64xf32>
  // CHECK: graph.rms_norm %{{.*}} scale(%{{.*}} : tensor<64xf32>) axis = 2 epsilon = 9.9999999999999995E-7 : tensor<2x16x64xf32>
  %2 = graph.rms_norm %1 scale(%g : tensor<64xf32>) axis = 2 epsilon = 1.0e-6 : tensor<2x16x64xf32>
  // CHECK: graph.batch_norm %{{.*}} epsilon = 1.000000e-05 training : tensor<2x8x4x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
  %3 = graph.batch_norm %img, %c, %c, %c, %c epsilon = 1.0e-5 training : tensor<2x8x4x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
  %r = graph.reshape %2 : tensor<2x16x64xf32> -> tensor<2x16x4x16xf32>
  // CHECK: graph.rope %{{.*}} theta = 1.000000e+04 : tensor<2x16x4x16xf32>
  %4 = graph.rope %r theta = 10000.0 : tensor<2x16x4x16xf32>
  // CHECK: graph.rope %{{.*}} theta = 1.000000e+04 inverse position_blocks ["cp"] : tensor<2x16x4x16xf32>
  %rb = graph.rope %r theta = 10000.0 inverse position_blocks ["cp"] : tensor<2x16x4x16xf32>
  return
}

// CHECK-LABEL: func.func @movement
func.func @movement(%table: tensor<100x32xf32>, %ids: tensor<4x8xi64>, %x: tensor<4x8x32xf32>) {
  // CHECK: graph.gather %{{.*}}[%{{.*}}] axis = 0 : tensor<100x32xf32>, tensor<4x8xi64>
  %e = graph.gather %table[%ids] axis = 0 : tensor<100x32xf32>, tensor<4x8xi64>
  // CHECK: graph.reshape %{{.*}} : tensor<4x8x32xf32> -> tensor<32x32xf32>
  %r = graph.reshape %e : tensor<4x8x32xf32> -> tensor<32x32xf32>
  // CHECK: graph.transpose %{{.*}} [1, 0] : tensor<32x32xf32>
  %t = graph.transpose %r [1, 0] : tensor<32x32xf32>
  // CHECK: graph.slice %{{.*}} starts [0, 1, 0] limits [4, 8, 32] strides [1, 2, 1] : tensor<4x8x32xf32>
  %s = graph.slice %x starts [0, 1, 0] limits [4, 8, 32] strides [1, 2, 1] : tensor<4x8x32xf32>
  // CHECK: graph.concat %{{.*}}, %{{.*}} axis = 1 : tensor<4x8x32xf32>, tensor<4x4x32xf32>
  %c = graph.concat %x, %s axis = 1 : tensor<4x8x32xf32>, tensor<4x4x32xf32>
  // CHECK: graph.split %{{.*}} axis = 2 sizes [8, 24] : tensor<4x12x32xf32>
  %p:2 = graph.split %c axis = 2 sizes [8, 24] : tensor<4x12x32xf32>
  // CHECK: graph.reduce_sum %{{.*}} [1] keepdims : tensor<4x12x8xf32>
  %0 = graph.reduce_sum %p#0 [1] keepdims : tensor<4x12x8xf32>
  // CHECK: graph.reduce_mean %{{.*}} [0, 2] : tensor<4x12x24xf32>
  %1 = graph.reduce_mean %p#1 [0, 2] : tensor<4x12x24xf32>
  // CHECK: graph.reduce_max %{{.*}} [2] : tensor<4x12x24xf32>
  %2 = graph.reduce_max %p#1 [2] : tensor<4x12x24xf32>
  return
}

// CHECK-LABEL: func.func @vision
func.func @vision(%x: tensor<2x3x32x32xf32>, %w: tensor<16x3x3x3xf32>, %b: tensor<16xf32>, %dw: tensor<16x1x3x3xf32>) {
  // CHECK: graph.conv2d %{{.*}}, %{{.*}} bias(%{{.*}} : tensor<16xf32>) strides [2, 2] padding [1, 1, 1, 1] dilations [1, 1] groups = 1 : tensor<2x3x32x32xf32>, tensor<16x3x3x3xf32>
  %0 = graph.conv2d %x, %w bias(%b : tensor<16xf32>) strides [2, 2] padding [1, 1, 1, 1] dilations [1, 1] groups = 1 : tensor<2x3x32x32xf32>, tensor<16x3x3x3xf32>
  // Depthwise.
  // CHECK: graph.conv2d %{{.*}}, %{{.*}} strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups = 16
  %1 = graph.conv2d %0, %dw strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups = 16 : tensor<2x16x16x16xf32>, tensor<16x1x3x3xf32>
  // CHECK: graph.max_pool2d %{{.*}} kernel [3, 3] strides [2, 2] padding [1, 1, 1, 1] : tensor<2x16x16x16xf32>
  %2 = graph.max_pool2d %1 kernel [3, 3] strides [2, 2] padding [1, 1, 1, 1] : tensor<2x16x16x16xf32>
  // CHECK: graph.avg_pool2d %{{.*}} kernel [2, 2] strides [2, 2] padding [0, 0, 0, 0] : tensor<2x16x8x8xf32>
  %3 = graph.avg_pool2d %2 kernel [2, 2] strides [2, 2] padding [0, 0, 0, 0] : tensor<2x16x8x8xf32>
  // CHECK: graph.global_avg_pool %{{.*}} : tensor<2x16x4x4xf32>
  %4 = graph.global_avg_pool %3 : tensor<2x16x4x4xf32>
  return
}

// CHECK-LABEL: func.func @losses_and_moe
func.func @losses_and_moe(%logits: tensor<4x8x50xf32>, %labels: tensor<4x8xi64>, %x: tensor<32x16xf32>, %r: tensor<32x4xf32>, %w1: tensor<4x16x64xf32>) -> tensor<f32> {
  // CHECK: graph.cross_entropy %{{.*}}, %{{.*}} : tensor<4x8x50xf32>, tensor<4x8xi64>
  %loss = graph.cross_entropy %logits, %labels : tensor<4x8x50xf32>, tensor<4x8xi64>
  // CHECK: %{{.*}}, %{{.*}} = graph.moe_gate %{{.*}} top_k = 2 renormalize : tensor<32x4xf32>
  %gw, %gi = graph.moe_gate %r top_k = 2 renormalize : tensor<32x4xf32>
  // CHECK: graph.moe_dispatch %{{.*}}, %{{.*}} experts = 4 capacity = 20 : tensor<32x16xf32>, tensor<32x2xi64>
  %d = graph.moe_dispatch %x, %gi experts = 4 capacity = 20 : tensor<32x16xf32>, tensor<32x2xi64>
  %h = graph.matmul %d, %w1 : tensor<4x20x16xf32>, tensor<4x16x64xf32>
  // CHECK: graph.moe_combine %{{.*}}, %{{.*}}, %{{.*}} : tensor<4x20x64xf32>, tensor<32x2xf32>, tensor<32x2xi64>
  %y = graph.moe_combine %h, %gw, %gi : tensor<4x20x64xf32>, tensor<32x2xf32>, tensor<32x2xi64>
  return %loss : tensor<f32>
}
