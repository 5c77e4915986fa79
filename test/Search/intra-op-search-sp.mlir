// RUN: cleave-opt %s --pass-pipeline='builtin.module(func.func(cleave-intra-op-search{mesh=4 cluster=dgx-a100-80g sequence-parallel=true}))' | FileCheck %s

// RUN: cleave-opt %s --pass-pipeline='builtin.module(func.func(cleave-intra-op-search{mesh=4 cluster=dgx-a100-80g param-memory=9e6}))' | FileCheck %s --check-prefix=FREE
// RUN: cleave-opt %s --pass-pipeline='builtin.module(func.func(cleave-intra-op-search{mesh=4 cluster=dgx-a100-80g param-memory=9e6 no-sequence-parallel=true}))' | FileCheck %s --check-prefix=NOSP

// With sequence parallelism asked for, a norm may only run on sequence
// blocks [B, S/4, H] (not replicated, not on batch blocks).
// CHECK-LABEL: func.func @norm
// CHECK: graph.layer_norm {{.*}}graph.sharding = #graph.op_sharding<"split1"{{.*}}results = [<[{}, {0}, {}]>]
// Left free, the search splits it on the sequence too (the batch of 2
// does not divide by 4); with sequence parallelism ruled out (a plan with
// sp=off) the norm runs whole.
// FREE-LABEL: func.func @norm
// FREE: graph.layer_norm {{.*}}graph.sharding = #graph.op_sharding<"split1"
// NOSP-LABEL: func.func @norm
// NOSP: graph.layer_norm {{.*}}graph.sharding = #graph.op_sharding<"replicated"
func.func @norm(%x: tensor<2x64x32xf32>) -> tensor<2x64x32xf32> {
  %w = graph.param "ln.weight" : tensor<32xf32>
  %y = graph.layer_norm %x scale(%w : tensor<32xf32>) axis = 2 epsilon = 1.0e-5 : tensor<2x64x32xf32>
  return %y : tensor<2x64x32xf32>
}

// A pre-LN MLP block between two norms, the weights held to a quarter per
// device. Left free, the search reduce-scatters proj's partial sums (along
// the sequence or the hidden dimension: the same memory, and the
// reduce-scatter and the all-gather before the next norm cost what an
// all-reduce does), so the residual stream runs split. With sequence
// parallelism ruled out (a plan with sp=off, priced as Megatron's tensor
// parallelism without it) it is Megatron's block: fc by columns, proj by
// rows with its partial sums all-reduced, the residual add and both norms
// whole.
// FREE-LABEL: func.func @block
// FREE: graph.matmul {{.*}}graph.sharding = #graph.op_sharding<"matmul.k+rs{{[12]}}"{{.*}}partial = reduce_scatter
// NOSP-LABEL: func.func @block
// NOSP: %[[LN:.*]] = graph.layer_norm {{.*}}graph.sharding = #graph.op_sharding<"replicated"
// NOSP: graph.matmul %[[LN]], {{.*}}graph.sharding = #graph.op_sharding<"matmul.n"
// NOSP: %[[Y:.*]] = graph.matmul {{.*}}graph.sharding = #graph.op_sharding<"matmul.k+ar"{{.*}}partial = all_reduce
// NOSP: %[[R:.*]] = graph.add %[[Y]], %{{.*}}graph.sharding = #graph.op_sharding<"replicated"
// NOSP: graph.layer_norm %[[R]]{{.*}}graph.sharding = #graph.op_sharding<"replicated"
func.func @block() -> tensor<1x512x1024xf32> {
  %tokens = graph.input "tokens" : tensor<1x512xi64>
  %wte = graph.param "wte.weight" : tensor<64x1024xf32>
  %x = graph.gather %wte[%tokens] axis = 0 : tensor<64x1024xf32>, tensor<1x512xi64>
  %lw = graph.param "ln_1.weight" : tensor<1024xf32>
  %ln = graph.layer_norm %x scale(%lw : tensor<1024xf32>) axis = 2 epsilon = 1.0e-5 : tensor<1x512x1024xf32>
  %w1 = graph.param "fc.weight" : tensor<1024x4096xf32>
  %w2 = graph.param "proj.weight" : tensor<4096x1024xf32>
  %h = graph.matmul %ln, %w1 : tensor<1x512x1024xf32>, tensor<1024x4096xf32>
  %g = graph.gelu %h tanh : tensor<1x512x4096xf32>
  %y = graph.matmul %g, %w2 : tensor<1x512x4096xf32>, tensor<4096x1024xf32>
  %r = graph.add %y, %x : tensor<1x512x1024xf32>, tensor<1x512x1024xf32>
  %lw2 = graph.param "ln_2.weight" : tensor<1024xf32>
  %out = graph.layer_norm %r scale(%lw2 : tensor<1024xf32>) axis = 2 epsilon = 1.0e-5 : tensor<1x512x1024xf32>
  return %out : tensor<1x512x1024xf32>
}

