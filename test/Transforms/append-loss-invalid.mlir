// RUN: cleave-opt %s --cleave-append-loss="output=1" -split-input-file -verify-diagnostics

// expected-error @+1 {{output 1 does not exist; @forward has 1 results}}
func.func @forward() -> tensor<2x10xf32> {
  %w = graph.param "w" : tensor<2x10xf32>
  return %w : tensor<2x10xf32>
}

// -----

// expected-error @+1 {{output 1 of type 'tensor<2xi64>' cannot be logits: expected a float tensor [..., classes]}}
func.func @forward() -> (tensor<2x10xf32>, tensor<2xi64>) {
  %w = graph.param "w" : tensor<2x10xf32>
  %i = graph.input "i" : tensor<2xi64>
  return %w, %i : tensor<2x10xf32>, tensor<2xi64>
}

// -----

// expected-error @+1 {{expected a single-block func.func @forward}}
module {
}
