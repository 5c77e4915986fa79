// RUN: cleave-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(func.func(cleave-spmd-partition{axis=tp size=2}))'

func.func @fallback_remark(%logits: tensor<4x10xf32>, %labels: tensor<4xi64>) -> tensor<f32> {
  // expected-remark @+1 {{strategy 'ce.classes' has no local kernel yet; the op runs replicated}}
  %l = graph.cross_entropy %logits, %labels {cleave.operand_sharding = [array<i64: -1, 0>, array<i64: -1>], cleave.partial = "all_reduce", cleave.sharding = [array<i64>], cleave.strategy = "ce.classes"} : tensor<4x10xf32>, tensor<4xi64>
  return %l : tensor<f32>
}

// -----

func.func @bad_partial(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{unknown partial reduction 'prod'}}
  %e = graph.exp %x {cleave.operand_sharding = [array<i64: -1, -1>], cleave.partial = "prod", cleave.sharding = [array<i64: -1, -1>], cleave.strategy = "split1"} : tensor<4x8xf32>
  return %e : tensor<4x8xf32>
}
