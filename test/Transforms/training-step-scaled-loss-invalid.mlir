// RUN: cleave-opt %s --cleave-training-step="scaled-loss=true" -verify-diagnostics

// The scale multiplies an f32 seed: a 16-bit loss is refused (the mixed
// precision pass keeps the loss in fp32).
// expected-error @+1 {{scales a loss of type 'tensor<bf16>' (loss scaling needs an f32 loss)}}
func.func @forward() -> tensor<bf16> {
  %w = graph.param "w" : tensor<4xbf16>
  %l = graph.reduce_sum %w [0] : tensor<4xbf16>
  return %l : tensor<bf16>
}
