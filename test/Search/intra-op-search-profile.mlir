// RUN: cleave-opt %s --cleave-intra-op-search="mesh=4 cluster=cpu-local,devices=4" | FileCheck %s
// RUN: rm -f %t.profile
// RUN: for k in all-reduce all-gather reduce-scatter all-to-all; do printf '[collective %%s ranks=4 ranks_per_node=4 concurrent=1]\n1 KiB = 1 s\n1 GiB = 1 s\n\n' $k >> %t.profile; done
// RUN: cleave-opt %s --cleave-intra-op-search="mesh=4 cluster=cpu-local,devices=4 profile=%t.profile" | FileCheck %s --check-prefix=PROFILE

// A measured profile replaces the cluster's formulas in the search, as in
// the plan's prediction (`cleave compile --profile` hands it to the
// lowering's searches). With the formulas' collectives the MLP runs
// Megatron's way: fc by columns, proj by rows with an all-reduce. With a
// profile whose tensor-parallel collectives take a second each, no
// activation is split by the weights: the search splits the batch instead.
// CHECK: graph.matmul {{.*}}graph.sharding = #graph.op_sharding<"matmul.n"
// CHECK: graph.matmul {{.*}}graph.sharding = #graph.op_sharding<"matmul.k+ar"
// PROFILE: graph.matmul {{.*}}graph.sharding = #graph.op_sharding<"matmul.b0"
// PROFILE: graph.matmul {{.*}}graph.sharding = #graph.op_sharding<"matmul.b0"
func.func @mlp(%x: tensor<8x256x512xf32>) -> tensor<8x256x512xf32> {
  %w1 = graph.param "fc.weight" : tensor<512x2048xf32>
  %w2 = graph.param "proj.weight" : tensor<2048x512xf32>
  %h = graph.matmul %x, %w1 : tensor<8x256x512xf32>, tensor<512x2048xf32>
  %g = graph.gelu %h tanh : tensor<8x256x2048xf32>
  %y = graph.matmul %g, %w2 : tensor<8x256x2048xf32>, tensor<2048x512xf32>
  return %y : tensor<8x256x512xf32>
}
