// RUN: cleave-opt %s -split-input-file -verify-diagnostics --cleave-pipeline-split=stages=3

// expected-error @+1 {{cannot cut 2 layer(s) into 3 pipeline stages}}
func.func @forward() -> tensor<2x2xf32> {
  %x = graph.input "x" : tensor<2x2xf32>
  %w0 = graph.param "layers.0.w" : tensor<2x2xf32>
  %w1 = graph.param "layers.1.w" : tensor<2x2xf32>
  %h = graph.matmul %x, %w0 : tensor<2x2xf32>, tensor<2x2xf32>
  %y = graph.matmul %h, %w1 : tensor<2x2xf32>, tensor<2x2xf32>
  return %y : tensor<2x2xf32>
}

// -----

// A skip connection over a whole stage cannot be received.
func.func @forward() -> tensor<2x2xf32> {
  %x = graph.input "x" : tensor<2x2xf32>
  %w0 = graph.param "layers.0.w" : tensor<2x2xf32>
  %w1 = graph.param "layers.1.w" : tensor<2x2xf32>
  %w2 = graph.param "layers.2.w" : tensor<2x2xf32>
  %h0 = graph.matmul %x, %w0 : tensor<2x2xf32>, tensor<2x2xf32>
  %h1 = graph.matmul %h0, %w1 : tensor<2x2xf32>, tensor<2x2xf32>
  %h2 = graph.matmul %h1, %w2 : tensor<2x2xf32>, tensor<2x2xf32>
  // expected-error @+1 {{reads a value from pipeline stage 0 in stage 2; only the previous stage's values can be received}}
  %y = graph.add %h2, %h0 : tensor<2x2xf32>, tensor<2x2xf32>
  return %y : tensor<2x2xf32>
}

// -----

// expected-error @+1 {{expected a func.func @forward holding the model}}
module {
}
