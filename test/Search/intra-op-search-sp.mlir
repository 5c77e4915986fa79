// RUN: cleave-opt %s --pass-pipeline='builtin.module(func.func(cleave-intra-op-search{mesh=4 cluster=dgx-a100-80g sequence-parallel=true}))' | FileCheck %s

// RUN: cleave-opt %s --pass-pipeline='builtin.module(func.func(cleave-intra-op-search{mesh=4 cluster=dgx-a100-80g}))' | FileCheck %s --check-prefix=FREE
// RUN: cleave-opt %s --pass-pipeline='builtin.module(func.func(cleave-intra-op-search{mesh=4 cluster=dgx-a100-80g no-sequence-parallel=true}))' | FileCheck %s --check-prefix=NOSP

// With sequence parallelism asked for, a norm may only run on sequence
// blocks [B, S/4, H] (not replicated, not on batch blocks).
// CHECK-LABEL: func.func @norm
// CHECK: graph.layer_norm {{.*}}cleave.sharding = [array<i64: -1, 0, -1>], cleave.strategy = "split1"
// Left free, the search splits it on the sequence too (the batch of 2
// does not divide by 4); with sequence parallelism ruled out (a plan with
// sp=off) the norm runs whole.
// FREE-LABEL: func.func @norm
// FREE: graph.layer_norm {{.*}}cleave.strategy = "split1"
// NOSP-LABEL: func.func @norm
// NOSP: graph.layer_norm {{.*}}cleave.strategy = "replicated"
func.func @norm(%x: tensor<2x64x32xf32>) -> tensor<2x64x32xf32> {
  %w = graph.param "ln.weight" : tensor<32xf32>
  %y = graph.layer_norm %x scale(%w : tensor<32xf32>) axis = 2 epsilon = 1.0e-5 : tensor<2x64x32xf32>
  return %y : tensor<2x64x32xf32>
}
