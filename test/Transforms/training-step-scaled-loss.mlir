// RUN: cleave-opt %s --cleave-training-step="optimizer=sgd lr=0.1 scaled-loss=true" --split-input-file | FileCheck %s

// Loss scaling: the loss's gradient seed (1) is multiplied by the scalar
// input "loss_scale" that the runtime fills every step; the lowering
// unscales the gradients before the updates.
// CHECK-LABEL: func.func @train_step
// CHECK-DAG: %[[S:.*]] = graph.input "loss_scale" : tensor<f32>
// CHECK-DAG: %[[ONE:.*]] = graph.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[SEED:.*]] = graph.mul %[[ONE]], %[[S]] : tensor<f32>, tensor<f32>
// CHECK: graph.cross_entropy_grad %{{.*}}, %{{.*}}, %[[SEED]]
func.func @forward() -> tensor<f32> {
  %x = graph.input "x" : tensor<4x8xf32>
  %y = graph.input "y" : tensor<4xi64>
  %w = graph.param "w" : tensor<8x5xf32>
  %o = graph.matmul %x, %w : tensor<4x8xf32>, tensor<8x5xf32>
  %l = graph.cross_entropy %o, %y : tensor<4x5xf32>, tensor<4xi64>
  return %l : tensor<f32>
}
