// RUN: cleave-opt %s --cleave-mixed-precision=storage=f16 | FileCheck %s
// RUN: cleave-opt %s --cleave-mixed-precision=storage=fp8 -verify-diagnostics -split-input-file

// storage=f16: the same rule in IEEE half (the training step then scales
// the loss, which the lowering adds); the loss stays fp32.
// CHECK-LABEL: func.func @forward
// CHECK: %[[W:.*]] = graph.param "w" : tensor<8x16xf32>
// CHECK: %[[W16:.*]] = graph.cast %[[W]] : tensor<8x16xf32> to tensor<8x16xf16>
// CHECK: %[[X16:.*]] = graph.cast %{{.*}} : tensor<4x8xf32> to tensor<4x8xf16>
// CHECK: %[[H:.*]] = graph.matmul %[[X16]], %[[W16]] : tensor<4x8xf16>, tensor<8x16xf16>
// CHECK: %[[H32:.*]] = graph.cast %[[H]] : tensor<4x16xf16> to tensor<4x16xf32>
// CHECK: graph.cross_entropy %[[H32]], %{{.*}} : tensor<4x16xf32>, tensor<4xi64>
// expected-error @+1 {{cleave-mixed-precision: storage 'fp8' (expected bf16 or f16)}}
func.func @forward() -> tensor<f32> {
  %w = graph.param "w" : tensor<8x16xf32>
  %x = graph.input "x" : tensor<4x8xf32>
  %y = graph.input "labels" : tensor<4xi64>
  %h = graph.matmul %x, %w : tensor<4x8xf32>, tensor<8x16xf32>
  %l = graph.cross_entropy %h, %y : tensor<4x16xf32>, tensor<4xi64>
  return %l : tensor<f32>
}
