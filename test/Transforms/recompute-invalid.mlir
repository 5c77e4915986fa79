// RUN: cleave-opt %s --cleave-recompute="mode=everything" -verify-diagnostics

// expected-error @+1 {{unknown recomputation mode 'everything' (expected full or selective)}}
func.func @forward() -> tensor<4xf32> {
  %w = graph.param "h.0.w" : tensor<4xf32>
  return %w : tensor<4xf32>
}
