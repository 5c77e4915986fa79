// RUN: cleave-opt %s --cleave-pipeline-split="stages=2 layers-per-stage=3,1" | FileCheck %s
// RUN: cleave-opt %s --cleave-pipeline-split=stages=2 | FileCheck %s --check-prefix=EVEN
// RUN: not cleave-opt %s --cleave-pipeline-split="stages=2 layers-per-stage=2,1" 2>&1 | FileCheck %s --check-prefix=SUM
// RUN: not cleave-opt %s --cleave-pipeline-split="stages=2 layers-per-stage=4" 2>&1 | FileCheck %s --check-prefix=COUNT
// RUN: not cleave-opt %s --cleave-pipeline-split="stages=2 layers-per-stage=4,0" 2>&1 | FileCheck %s --check-prefix=ZERO

// Layers per stage as the cost model balanced them against the head (a
// large vocabulary makes the last stage's head cost layers' worth): three
// layers on the first stage, one with the head on the second.

// CHECK-LABEL: func.func @stage0()
// CHECK-SAME: cleave.first_layer = 0 : i64, cleave.num_layers = 3 : i64
// CHECK: graph.param "layers.2.w"
// CHECK-LABEL: func.func @stage1()
// CHECK-SAME: cleave.first_layer = 3 : i64, cleave.num_layers = 1 : i64
// CHECK-NOT: graph.param "layers.2.w"
// CHECK: graph.param "layers.3.w"

// EVEN: func.func @stage0() {{.*}}cleave.first_layer = 0 : i64, cleave.num_layers = 2 : i64
// EVEN: func.func @stage1() {{.*}}cleave.first_layer = 2 : i64, cleave.num_layers = 2 : i64

// SUM: error: layers-per-stage needs 2 positive counts summing to the model's 4 layer(s), got 2 summing to 3
// COUNT: error: layers-per-stage needs 2 positive counts summing to the model's 4 layer(s), got 1 summing to 4
// ZERO: error: layers-per-stage needs 2 positive counts summing to the model's 4 layer(s), got 2 summing to 4
func.func @forward() -> tensor<2x2xf32> {
  %x = graph.input "x" : tensor<2x2xf32>
  %w0 = graph.param "layers.0.w" : tensor<2x2xf32>
  %w1 = graph.param "layers.1.w" : tensor<2x2xf32>
  %w2 = graph.param "layers.2.w" : tensor<2x2xf32>
  %w3 = graph.param "layers.3.w" : tensor<2x2xf32>
  %h0 = graph.matmul %x, %w0 : tensor<2x2xf32>, tensor<2x2xf32>
  %h1 = graph.matmul %h0, %w1 : tensor<2x2xf32>, tensor<2x2xf32>
  %h2 = graph.matmul %h1, %w2 : tensor<2x2xf32>, tensor<2x2xf32>
  %h3 = graph.matmul %h2, %w3 : tensor<2x2xf32>, tensor<2x2xf32>
  return %h3 : tensor<2x2xf32>
}
