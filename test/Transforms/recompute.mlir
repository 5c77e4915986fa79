// RUN: cleave-opt %s --cleave-training-step="optimizer=sgd tag-phases=1" --cleave-recompute="mode=full" | FileCheck %s --check-prefix=FULL
// RUN: cleave-opt %s --cleave-training-step="optimizer=sgd tag-phases=1" --cleave-recompute="mode=selective" | FileCheck %s --check-prefix=SEL
// RUN: cleave-opt %s --cleave-training-step="optimizer=sgd tag-phases=1" | FileCheck %s --check-prefix=NONE

// Two attention-like layers (parameters "h.0." and "h.1.") between an
// embedding and a head whose parameters carry no layer number.
func.func @forward() -> tensor<f32> {
  %x = graph.input "x" : tensor<4x8xf32>
  %y = graph.input "y" : tensor<4xi64>
  %e = graph.param "emb" : tensor<8xf32>
  %w0 = graph.param "h.0.w" : tensor<8x8xf32>
  %w1 = graph.param "h.1.w" : tensor<8x8xf32>
  %head = graph.param "head" : tensor<8x5xf32>
  %x0 = graph.mul %x, %e : tensor<4x8xf32>, tensor<8xf32>
  %q0 = graph.matmul %x0, %w0 : tensor<4x8xf32>, tensor<8x8xf32>
  %s0 = graph.matmul %q0, %q0 transpose_rhs : tensor<4x8xf32>, tensor<4x8xf32>
  %p0 = graph.softmax %s0 axis = 1 causal : tensor<4x4xf32>
  %o0 = graph.matmul %p0, %q0 : tensor<4x4xf32>, tensor<4x8xf32>
  %t0 = graph.tanh %o0 : tensor<4x8xf32>
  %x1 = graph.add %x0, %t0 : tensor<4x8xf32>, tensor<4x8xf32>
  %q1 = graph.matmul %x1, %w1 : tensor<4x8xf32>, tensor<8x8xf32>
  %s1 = graph.matmul %q1, %q1 transpose_rhs : tensor<4x8xf32>, tensor<4x8xf32>
  %p1 = graph.softmax %s1 axis = 1 causal : tensor<4x4xf32>
  %o1 = graph.matmul %p1, %q1 : tensor<4x4xf32>, tensor<4x8xf32>
  %t1 = graph.tanh %o1 : tensor<4x8xf32>
  %x2 = graph.add %x1, %t1 : tensor<4x8xf32>, tensor<4x8xf32>
  %logits = graph.matmul %x2, %head : tensor<4x8xf32>, tensor<8x5xf32>
  %l = graph.cross_entropy %logits, %y : tensor<4x5xf32>, tensor<4xi64>
  return %l : tensor<f32>
}

// Without recomputation the backward pass reads the forward values.
// NONE-LABEL: func.func @train_step
// NONE-NOT: cleave.recomputed
// NONE: graph.softmax_grad

// Full: each layer is recomputed from its input (the residual stream),
// just before its backward ops, layer 1 first; the head is not.
// FULL-LABEL: func.func @train_step
// FULL: %[[X1:.*]] = graph.add %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<4x8xf32>
// FULL: %[[X2:.*]] = graph.add %[[X1]], %{{.*}} : tensor<4x8xf32>, tensor<4x8xf32>
// FULL: %[[LOGITS:.*]] = graph.matmul %[[X2]], %{{.*}} : tensor<4x8xf32>, tensor<8x5xf32>
// FULL: graph.cross_entropy_grad %[[LOGITS]]
// FULL: %[[RQ1:.*]] = graph.matmul %[[X1]], %{{.*}} {cleave.phase = "backward", cleave.recomputed}
// FULL-NEXT: %[[RS1:.*]] = graph.matmul %[[RQ1]], %[[RQ1]] transpose_rhs {cleave.phase = "backward", cleave.recomputed}
// FULL-NEXT: %[[RP1:.*]] = graph.softmax %[[RS1]] axis = 1 causal {cleave.phase = "backward", cleave.recomputed}
// FULL-NEXT: %[[RO1:.*]] = graph.matmul %[[RP1]], %[[RQ1]] {cleave.phase = "backward", cleave.recomputed}
// The tanh's output is not read backwards (its gradient reads its input):
// nothing asks for it to be recomputed.
// FULL-NEXT: graph.activation_grad "tanh", %[[RO1]], %{{.*}}
// FULL: graph.softmax_grad %[[RP1]]
// The second layer's recomputation comes after the first's backward ops
// started, and reads the embedding output (its input).
// FULL: %[[RQ0:.*]] = graph.matmul %{{.*}}, %{{.*}} {cleave.phase = "backward", cleave.recomputed}
// FULL: %[[RP0:.*]] = graph.softmax %{{.*}} axis = 1 causal {cleave.phase = "backward", cleave.recomputed}
// FULL: graph.softmax_grad %[[RP0]]
// FULL: graph.sgd_update

// Selective: only the attention cores (scores and softmax) are recomputed.
// SEL-LABEL: func.func @train_step
// SEL: %[[Q1:.*]] = graph.matmul %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<8x8xf32>
// SEL: graph.cross_entropy_grad
// SEL-NOT: graph.tanh {{.*}}cleave.recomputed
// SEL: %[[RS1:.*]] = graph.matmul %[[Q1]], %[[Q1]] transpose_rhs {cleave.phase = "backward", cleave.recomputed}
// SEL-NEXT: %[[RP1:.*]] = graph.softmax %[[RS1]] axis = 1 causal {cleave.phase = "backward", cleave.recomputed}
// SEL: graph.softmax_grad %[[RP1]]
