// RUN: cleave-opt %s --cleave-append-loss --split-input-file | FileCheck %s
// RUN: cleave-opt %s --cleave-append-loss --cleave-training-step="optimizer=none" --split-input-file | FileCheck %s --check-prefix=TRAIN

// An inference graph (logits out) gets labels and a cross-entropy loss.
func.func @forward() -> tensor<2x7x10xf32> {
  %x = graph.input "x" : tensor<2x7x4xf32>
  %w = graph.param "w" : tensor<4x10xf32>
  %y = graph.matmul %x, %w : tensor<2x7x4xf32>, tensor<4x10xf32>
  return %y : tensor<2x7x10xf32>
}
// CHECK-LABEL: func.func @forward() -> tensor<f32>
// CHECK: %[[LABELS:.*]] = graph.input "labels" : tensor<2x7xi64>
// CHECK: %[[Y:.*]] = graph.matmul
// CHECK: %[[LOSS:.*]] = graph.cross_entropy %[[Y]], %[[LABELS]] : tensor<2x7x10xf32>, tensor<2x7xi64>
// CHECK: return %[[LOSS]] : tensor<f32>

// TRAIN: func.func @train_step() -> (tensor<f32>, tensor<4x10xf32> {cleave.grad = "w"})

// -----

// A channel-first map (segmentation logits [N, C, H, W]): the classes are
// dimension 1, moved last for the loss; the labels are [N, H, W].
func.func @forward() -> tensor<2x4x8x6xf32> {
  %x = graph.input "x" : tensor<2x4x8x6xf32>
  %w = graph.param "w" : tensor<2x4x8x6xf32>
  %y = graph.add %x, %w : tensor<2x4x8x6xf32>, tensor<2x4x8x6xf32>
  return %y : tensor<2x4x8x6xf32>
}
// CHECK-LABEL: func.func @forward() -> tensor<f32>
// CHECK: %[[LABELS:.*]] = graph.input "labels" : tensor<2x8x6xi64>
// CHECK: %[[Y:.*]] = graph.add
// CHECK: %[[T:.*]] = graph.transpose %[[Y]] [0, 2, 3, 1] : tensor<2x4x8x6xf32>
// CHECK: %[[LOSS:.*]] = graph.cross_entropy %[[T]], %[[LABELS]] : tensor<2x8x6x4xf32>, tensor<2x8x6xi64>
// CHECK: return %[[LOSS]] : tensor<f32>
