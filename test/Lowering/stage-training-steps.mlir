// RUN: cleave-opt %s --cleave-pipeline-split=stages=2 --cleave-stage-training-steps="stages=2 pp=2 recompute=none,full optimizer=sgd loss-scale=0.25" | FileCheck %s
// RUN: not cleave-opt %s --cleave-stage-training-steps="stages=3 pp=2" 2>&1 | FileCheck %s --check-prefix=STAGES
// RUN: not cleave-opt %s --cleave-stage-training-steps="stages=1" 2>&1 | FileCheck %s --check-prefix=NOSTAGE

// One training step per pipeline stage, the loss's gradient seeded with
// loss-scale; the second stage recomputes its layer in the backward pass.
// CHECK-LABEL: func.func @stage0_step()
// CHECK-NOT: cleave.recomputed
// CHECK: graph.sgd_update
// CHECK-LABEL: func.func @stage1_step()
// CHECK: graph.constant {cleave.phase = "backward"} dense<2.500000e-01>
// CHECK: cleave.recomputed
// CHECK: graph.sgd_update

// STAGES: error: stages (3) must be a positive multiple of pp (2)
// NOSTAGE: error: pipeline split made no @stage0
func.func @forward() -> tensor<f32> {
  %x = graph.input "x" : tensor<4x16xf32>
  %labels = graph.input "labels" : tensor<4xi64>
  %w0 = graph.param "layers.0.w" : tensor<16x16xf32>
  %w1 = graph.param "layers.1.w" : tensor<16x16xf32>
  %h0 = graph.matmul %x, %w0 : tensor<4x16xf32>, tensor<16x16xf32>
  %r0 = graph.relu %h0 : tensor<4x16xf32>
  %h1 = graph.matmul %r0, %w1 : tensor<4x16xf32>, tensor<16x16xf32>
  %r1 = graph.relu %h1 : tensor<4x16xf32>
  %l = graph.cross_entropy %r1, %labels : tensor<4x16xf32>, tensor<4xi64>
  return %l : tensor<f32>
}
