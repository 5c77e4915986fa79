// RUN: cleave-opt %s --pass-pipeline='builtin.module(func.func(cleave-expert-parallel{size=4}))' -split-input-file -verify-diagnostics

func.func @three_experts(%x: tensor<8x16xf32>, %i: tensor<8x1xi64>) -> tensor<3x6x16xf32> {
  // expected-error @+1 {{cannot split 3 experts over 4 devices of axis 'ep'}}
  %d = graph.moe_dispatch %x, %i experts = 3 capacity = 6 : tensor<8x16xf32>, tensor<8x1xi64>
  return %d : tensor<3x6x16xf32>
}

// -----

// expected-error @+1 {{expert parallelism over 'ep' needs MoE layers (graph.moe_dispatch); this model has none}}
func.func @dense(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  return %x : tensor<8x16xf32>
}

// -----

func.func @no_combine(%x: tensor<8x16xf32>, %i: tensor<8x1xi64>) -> tensor<4x2x16xf32> {
  // expected-error @+1 {{has no moe_combine reading its routing}}
  %d = graph.moe_dispatch %x, %i experts = 4 capacity = 2 : tensor<8x16xf32>, tensor<8x1xi64>
  return %d : tensor<4x2x16xf32>
}
