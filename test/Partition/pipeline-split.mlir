// RUN: cleave-opt %s --cleave-pipeline-split=stages=2 | FileCheck %s

// Two layers on two stages: the embedding goes with layer 0, the head and
// the loss with layer 1; the tied table is a parameter of both stages.
module {
  func.func @forward() -> tensor<f32> {
    %tokens = graph.input "tokens" : tensor<2x4xi64>
    %labels = graph.input "labels" : tensor<2x4xi64>
    %wte = graph.param "wte.weight" : tensor<16x8xf32>
    %e = graph.gather %wte[%tokens] axis = 0 : tensor<16x8xf32>, tensor<2x4xi64>
    %w0 = graph.param "h.0.w" : tensor<8x8xf32>
    %h0 = graph.matmul %e, %w0 : tensor<2x4x8xf32>, tensor<8x8xf32>
    %r0 = graph.add %e, %h0 : tensor<2x4x8xf32>, tensor<2x4x8xf32>
    %w1 = graph.param "h.1.w" : tensor<8x8xf32>
    %h1 = graph.matmul %r0, %w1 : tensor<2x4x8xf32>, tensor<8x8xf32>
    %r1 = graph.add %r0, %h1 : tensor<2x4x8xf32>, tensor<2x4x8xf32>
    %logits = graph.matmul %r1, %wte transpose_rhs : tensor<2x4x8xf32>, tensor<16x8xf32>
    %loss = graph.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi64>
    return %loss : tensor<f32>
  }
}

// CHECK-LABEL: func.func @stage0()
// CHECK-SAME: cleave.first_layer = 0 : i64, cleave.num_layers = 1 : i64, cleave.stage = 0 : i64
// CHECK: graph.param "wte.weight"
// CHECK: graph.param "h.0.w"
// CHECK-NOT: graph.param "h.1.w"
// CHECK: %[[R0:.*]] = graph.add
// CHECK: graph.send %[[R0]] axis "pp" offset 1 tag 0 : tensor<2x4x8xf32>
// CHECK-NEXT: return

// CHECK-LABEL: func.func @stage1() -> tensor<f32>
// CHECK-SAME: cleave.first_layer = 1 : i64, cleave.num_layers = 1 : i64, cleave.stage = 1 : i64
// CHECK: %[[IN:.*]] = graph.recv axis "pp" offset -1 tag 0 : tensor<2x4x8xf32>
// CHECK: graph.param "h.1.w"
// CHECK: graph.matmul %[[IN]]
// CHECK: graph.param "wte.weight"
// CHECK: graph.input "labels"
// CHECK: %[[L:.*]] = graph.cross_entropy
// CHECK: return %[[L]]
