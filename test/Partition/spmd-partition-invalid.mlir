// RUN: cleave-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(func.func(cleave-spmd-partition{axis=tp size=2}))'

func.func @fallback_remark(%x: tensor<8x16xf32>, %i: tensor<8x1xi64>) -> tensor<4x2x16xf32> {
  // expected-remark @+1 {{strategy 'dispatch.experts' has no local kernel yet; the op runs replicated}}
  %d = graph.moe_dispatch %x, %i experts = 4 capacity = 2 {cleave.operand_sharding = [array<i64: -1, -1>, array<i64: -1, -1>], cleave.sharding = [array<i64: 0, -1, -1>], cleave.strategy = "dispatch.experts"} : tensor<8x16xf32>, tensor<8x1xi64>
  return %d : tensor<4x2x16xf32>
}

// -----

func.func @bad_partial(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{unknown partial reduction 'prod'}}
  %e = graph.exp %x {cleave.operand_sharding = [array<i64: -1, -1>], cleave.partial = "prod", cleave.sharding = [array<i64: -1, -1>], cleave.strategy = "split1"} : tensor<4x8xf32>
  return %e : tensor<4x8xf32>
}

// -----

// The intra-op search's annotations for a mesh of several axes (per
// dimension, the list of axes splitting it) are not partitioned as one.
func.func @two_axes(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{cleave.sharding is annotated for a mesh of several axes; cleave-spmd-partition partitions one axis (search with mesh=N)}}
  %e = graph.exp %x {cleave.operand_sharding = [[array<i64: 0>, array<i64: 1>]], cleave.sharding = [[array<i64: 0>, array<i64: 1>]], cleave.strategy = "split0|split1"} : tensor<4x8xf32>
  return %e : tensor<4x8xf32>
}
