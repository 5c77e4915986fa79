// RUN: cleave-opt %s --cleave-training-step="optimizer=sgd lr=0.1 momentum=0.9" --split-input-file | FileCheck %s --check-prefix=SGD
// RUN: cleave-opt %s --cleave-training-step --split-input-file | FileCheck %s --check-prefix=ADAMW
// RUN: cleave-opt %s --cleave-training-step="optimizer=none" --split-input-file | FileCheck %s --check-prefix=GRAD

// A two-layer MLP with a cross-entropy loss.
func.func @forward() -> tensor<f32> {
  %x = graph.input "x" : tensor<4x8xf32>
  %y = graph.input "y" : tensor<4xi64>
  %w = graph.param "w" : tensor<8x16xf32>
  %b = graph.param "b" : tensor<16xf32>
  %w2 = graph.param "w2" : tensor<16x5xf32>
  %h = graph.matmul %x, %w : tensor<4x8xf32>, tensor<8x16xf32>
  %hb = graph.add %h, %b : tensor<4x16xf32>, tensor<16xf32>
  %a = graph.gelu %hb : tensor<4x16xf32>
  %o = graph.matmul %a, %w2 : tensor<4x16xf32>, tensor<16x5xf32>
  %l = graph.cross_entropy %o, %y : tensor<4x5xf32>, tensor<4xi64>
  return %l : tensor<f32>
}

// The forward function is kept for inference.
// SGD-LABEL: func.func @forward() -> tensor<f32>
// SGD-LABEL: func.func @train_step()
// SGD-SAME: tensor<8x16xf32> {cleave.update = "w"}, tensor<8x16xf32> {cleave.update = "w.momentum"}
// SGD-SAME: {cleave.update = "b"}
// SGD-SAME: {cleave.update = "w2.momentum"}
// SGD-DAG: %[[MW:.*]] = graph.optimizer_state "w.momentum" : tensor<8x16xf32>
// SGD-DAG: %[[X:.*]] = graph.input "x"
// SGD-DAG: %[[W:.*]] = graph.param "w"
// SGD-DAG: %[[W2:.*]] = graph.param "w2"
// SGD: graph.gelu
// SGD: %[[LOGITS:.*]] = graph.matmul
// SGD: %[[LOSS:.*]] = graph.cross_entropy %[[LOGITS]]
// SGD: %[[DLOGITS:.*]] = graph.cross_entropy_grad %[[LOGITS]], %{{.*}}, %{{.*}} :
// The matmul's gradients are matmuls with folded transposes.
// SGD-DAG: %[[DA:.*]] = graph.matmul %[[DLOGITS]], %[[W2]] transpose_rhs
// SGD-DAG: graph.matmul %{{.*}}, %[[DLOGITS]] transpose_lhs
// SGD: %[[DH:.*]] = graph.activation_grad "gelu", %{{.*}}, %[[DA]]
// The bias was broadcast over the batch: its gradient is summed back.
// SGD: graph.reduce_sum %[[DH]] [0] keepdims : tensor<4x16xf32>
// SGD: %[[DW:.*]] = graph.matmul %[[X]], %[[DH]] transpose_lhs
// SGD: graph.sgd_update %[[W]], %[[DW]], %[[MW]] lr = 1.000000e-01 momentum = 9.000000e-01 weight_decay = 0.000000e+00
// SGD: return %[[LOSS]],

// AdamW reads the step number as an input and keeps two moments.
// ADAMW-LABEL: func.func @train_step()
// ADAMW-DAG: graph.optimizer_state "w.exp_avg"
// ADAMW-DAG: graph.optimizer_state "w.exp_avg_sq"
// ADAMW-DAG: %[[STEP:.*]] = graph.input "step" : tensor<f32>
// ADAMW: graph.adamw_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[STEP]] lr = 1.000000e-03 betas = (9.000000e-01, 0.99899999999999999) eps = 1.000000e-08

// Without an optimizer the step returns the gradients.
// GRAD-LABEL: func.func @train_step() -> (tensor<f32>, tensor<8x16xf32> {cleave.grad = "w"}, tensor<16xf32> {cleave.grad = "b"}, tensor<16x5xf32> {cleave.grad = "w2"})
// GRAD-NOT: graph.optimizer_state

// -----

// A parameter used twice accumulates both gradients; frozen state and
// integer inputs get none.
func.func @forward() -> tensor<f32> {
  %w = graph.param "w" : tensor<4xf32>
  %m = graph.param "running_mean" frozen : tensor<4xf32>
  %a = graph.mul %w, %w : tensor<4xf32>, tensor<4xf32>
  %b = graph.add %a, %m : tensor<4xf32>, tensor<4xf32>
  %s = graph.reduce_sum %b [0] : tensor<4xf32>
  return %s : tensor<f32>
}
// GRAD-LABEL: func.func @train_step() -> (tensor<f32>, tensor<4xf32> {cleave.grad = "w"})
// GRAD: %[[W:.*]] = graph.param "w"
// GRAD: graph.broadcast_to
// GRAD: %[[G1:.*]] = graph.mul %{{.*}}, %[[W]]
// GRAD: %[[G2:.*]] = graph.mul %{{.*}}, %[[W]]
// GRAD: %[[SUM:.*]] = graph.add %[[G1]], %[[G2]]
// GRAD: return %{{.*}}, %[[SUM]]
