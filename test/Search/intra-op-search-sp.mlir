// RUN: cleave-opt %s --pass-pipeline='builtin.module(func.func(cleave-intra-op-search{mesh=4 cluster=dgx-a100-80g sequence-parallel=true}))' | FileCheck %s

// With sequence parallelism asked for, a norm may only run on sequence
// blocks [B, S/4, H] (not replicated, not on batch blocks).
// CHECK-LABEL: func.func @norm
// CHECK: graph.layer_norm {{.*}}cleave.sharding = [array<i64: -1, 0, -1>], cleave.strategy = "split1"
func.func @norm(%x: tensor<2x64x32xf32>) -> tensor<2x64x32xf32> {
  %w = graph.param "ln.weight" : tensor<32xf32>
  %y = graph.layer_norm %x scale(%w : tensor<32xf32>) axis = 2 epsilon = 1.0e-5 : tensor<2x64x32xf32>
  return %y : tensor<2x64x32xf32>
}
