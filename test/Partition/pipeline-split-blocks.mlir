// RUN: cleave-opt %s --cleave-pipeline-split="stages=2 residual-blocks=true" | FileCheck %s
// RUN: cleave-opt %s --cleave-pipeline-split="stages=3 residual-blocks=true layers-per-stage=1,1,1" | FileCheck %s --check-prefix=THREE
// RUN: not cleave-opt %s --cleave-pipeline-split="stages=4 residual-blocks=true" 2>&1 | FileCheck %s --check-prefix=TOOMANY
// RUN: not cleave-opt %s --cleave-pipeline-split="stages=2" 2>&1 | FileCheck %s --check-prefix=NAMES

// A residual network whose weights carry no layer numbers (as an exported
// ResNet's "onnx::Conv_497"): the blocks are read off the structure. A
// stem (two ops in a chain), three residual blocks (the shortcut keeps a
// second value alive, so no single value is all that flows on inside
// them), one op between the second and third (it joins the second), and a
// head (two ops in a chain).

// Stage 0: the stem and block 0; block 0's output is sent.
// CHECK-LABEL: func.func @stage0()
// CHECK-SAME: cleave.first_layer = 0 : i64, cleave.num_layers = 1 : i64
// CHECK: graph.matmul
// CHECK: graph.relu
// CHECK: %[[B0:.*]] = graph.add
// CHECK-NOT: graph.add
// CHECK: graph.send %[[B0]] axis "pp" offset 1
// Stage 1: blocks 1 and 2 (with the op between them) and the head.
// CHECK-LABEL: func.func @stage1()
// CHECK-SAME: cleave.first_layer = 1 : i64, cleave.num_layers = 2 : i64
// CHECK: graph.recv
// CHECK-COUNT-2: graph.add
// CHECK: graph.reduce_sum
// CHECK: return

// THREE: func.func @stage0() {{.*}}cleave.num_layers = 1 : i64
// THREE: func.func @stage1() {{.*}}cleave.first_layer = 1 : i64, cleave.num_layers = 1 : i64
// THREE: graph.add
// THREE: graph.relu
// THREE: graph.send
// THREE: func.func @stage2() {{.*}}cleave.first_layer = 2 : i64, cleave.num_layers = 1 : i64

// TOOMANY: error: cannot cut 3 residual block(s) into 4 pipeline stages
// By names there are no layers to cut.
// NAMES: error: cannot cut 0 layer(s) into 2 pipeline stages
func.func @forward() -> tensor<f32> {
  %x = graph.input "x" : tensor<2x8xf32>
  %ws = graph.param "onnx::Stem_1" : tensor<8x8xf32>
  %w0 = graph.param "onnx::Block_2" : tensor<8x8xf32>
  %w1 = graph.param "onnx::Block_3" : tensor<8x8xf32>
  %w2 = graph.param "onnx::Block_4" : tensor<8x8xf32>
  %s = graph.matmul %x, %ws : tensor<2x8xf32>, tensor<8x8xf32>
  %s1 = graph.relu %s : tensor<2x8xf32>
  %h0 = graph.matmul %s1, %w0 : tensor<2x8xf32>, tensor<8x8xf32>
  %b0 = graph.add %s1, %h0 : tensor<2x8xf32>, tensor<2x8xf32>
  %h1 = graph.matmul %b0, %w1 : tensor<2x8xf32>, tensor<8x8xf32>
  %b1 = graph.add %b0, %h1 : tensor<2x8xf32>, tensor<2x8xf32>
  %d = graph.relu %b1 : tensor<2x8xf32>
  %h2 = graph.matmul %d, %w2 : tensor<2x8xf32>, tensor<8x8xf32>
  %b2 = graph.add %d, %h2 : tensor<2x8xf32>, tensor<2x8xf32>
  %y = graph.relu %b2 : tensor<2x8xf32>
  %loss = graph.reduce_sum %y [0, 1] : tensor<2x8xf32>
  return %loss : tensor<f32>
}
