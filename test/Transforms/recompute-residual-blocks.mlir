// RUN: cleave-opt %s --cleave-training-step="optimizer=sgd tag-phases=1" --cleave-recompute="mode=full residual-blocks=1" | FileCheck %s
// RUN: cleave-opt %s --cleave-training-step="optimizer=sgd tag-phases=1" --cleave-recompute="mode=full" | FileCheck %s --check-prefix=NAMES

// Two residual blocks between a stem and a head, their parameters named
// without layer numbers (as a ResNet's "layer2.3.conv1" or an export's
// "onnx::Conv_497"): with residual-blocks the layers are read off the
// graph's structure (numberResidualBlocks over the forward ops; the
// optimizer states the training step declares at its top pass nothing on).
// Each block keeps its input and output and recomputes what lies between;
// the stem, the head and the relu after the last block (the head's: a
// single op after the last block) are never recomputed.
func.func @forward() -> tensor<f32> {
  %x = graph.input "x" : tensor<4x8xf32>
  %y = graph.input "y" : tensor<4xi64>
  %ws = graph.param "stem.w" : tensor<8x8xf32>
  %wa1 = graph.param "a.w1" : tensor<8x8xf32>
  %wa2 = graph.param "a.w2" : tensor<8x8xf32>
  %wb1 = graph.param "b.w1" : tensor<8x8xf32>
  %wb2 = graph.param "b.w2" : tensor<8x8xf32>
  %wh = graph.param "head.w" : tensor<8x5xf32>
  %s = graph.matmul %x, %ws : tensor<4x8xf32>, tensor<8x8xf32>
  %r = graph.relu %s : tensor<4x8xf32>
  %a1 = graph.matmul %r, %wa1 : tensor<4x8xf32>, tensor<8x8xf32>
  %a2 = graph.tanh %a1 : tensor<4x8xf32>
  %a3 = graph.matmul %a2, %wa2 : tensor<4x8xf32>, tensor<8x8xf32>
  %a4 = graph.add %a3, %r : tensor<4x8xf32>, tensor<4x8xf32>
  %a5 = graph.relu %a4 : tensor<4x8xf32>
  %b1 = graph.matmul %a5, %wb1 : tensor<4x8xf32>, tensor<8x8xf32>
  %b2 = graph.tanh %b1 : tensor<4x8xf32>
  %b3 = graph.matmul %b2, %wb2 : tensor<4x8xf32>, tensor<8x8xf32>
  %b4 = graph.add %b3, %a5 : tensor<4x8xf32>, tensor<4x8xf32>
  %b5 = graph.relu %b4 : tensor<4x8xf32>
  %h = graph.matmul %b5, %wh : tensor<4x8xf32>, tensor<8x5xf32>
  %l = graph.cross_entropy %h, %y : tensor<4x5xf32>, tensor<4xi64>
  return %l : tensor<f32>
}

// CHECK-LABEL: func.func @train_step
// CHECK: %[[R:.*]] = graph.relu
// CHECK: %[[A5:.*]] = graph.relu
// CHECK: graph.cross_entropy_grad
// Block b, first in the backward pass: its sum is read by the head's relu.
// CHECK-NOT: cleave.recomputed
// CHECK: graph.matmul %[[A5]], %{{.*}} {cleave.phase = "backward", cleave.recomputed}
// CHECK-NEXT: graph.tanh {{.*}}cleave.recomputed
// CHECK-NOT: cleave.recomputed
// CHECK: graph.activation_grad "tanh"
// Block a: all but its output, which block b reads.
// CHECK-NOT: cleave.recomputed
// CHECK: graph.matmul %[[R]], %{{.*}} {cleave.phase = "backward", cleave.recomputed}
// CHECK-NEXT: graph.tanh {{.*}}cleave.recomputed
// CHECK-NEXT: graph.matmul {{.*}}cleave.recomputed
// CHECK-NEXT: graph.add %{{.*}}, %[[R]] {cleave.phase = "backward", cleave.recomputed}
// The stem is not recomputed.
// CHECK-NOT: cleave.recomputed
// CHECK: return

// Without residual-blocks, layers come from numbered parameter names, of
// which this graph has none: nothing is recomputed.
// NAMES-LABEL: func.func @train_step
// NAMES-NOT: cleave.recomputed
