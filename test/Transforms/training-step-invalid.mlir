// RUN: cleave-opt %s --cleave-training-step -split-input-file -verify-diagnostics
// RUN: not cleave-opt %s --cleave-training-step="optimizer=lion" -split-input-file 2>&1 | FileCheck %s --check-prefix=OPT

// OPT: unknown optimizer 'lion' (expected sgd, adamw or none)

// expected-error @+1 {{expected a func.func @forward holding the model}}
module {
  func.func @main() {
    return
  }
}

// -----

module {
  // expected-error @+1 {{@forward must return a scalar float loss as its first result; --cleave-append-loss adds one to an inference graph}}
  func.func @forward() -> tensor<2xf32> {
    %w = graph.param "w" : tensor<2xf32>
    return %w : tensor<2xf32>
  }
}

// -----

// expected-error @+1 {{the module already has a @train_step}}
module {
  func.func @forward() -> tensor<f32> {
    %w = graph.param "w" : tensor<f32>
    return %w : tensor<f32>
  }
  func.func @train_step() {
    return
  }
}

// -----

module {
  func.func @forward() -> tensor<f32> {
    %w = graph.param "w" : tensor<4xf32>
    // Backward ops have no derivative rules of their own.
    // expected-error @+1 {{'graph.softmax_grad' op has no derivative rule, but a trainable parameter reaches it}}
    %g = graph.softmax_grad %w, %w axis = 0 : tensor<4xf32>
    %s = graph.reduce_sum %g [0] : tensor<4xf32>
    return %s : tensor<f32>
  }
}
