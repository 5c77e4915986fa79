// RUN: cleave-opt %s --pass-pipeline='builtin.module(func.func(cleave-intra-op-search{mesh=4 cluster=cpu-local,devices=4,cores=2 param-memory=1e6 no-sequence-parallel=true no-batch-split=true}))' | FileCheck %s --check-prefix=NOSPCPU

// A pre-LN MLP block with biases (intra-op-search-sp.mlir has it without),
// the weights held to a quarter per device, on 4 CPU ranks sharing 2 cores, where an
// element-wise op is dear against the profiled collectives. Holding only
// what the norm reads whole, the search sliced proj's all-reduced sum to
// add its bias on a quarter of the elements and gathered it again before
// the residual add. The bias add is on the residual stream too: with it
// whole, the all-reduce is the block's only collective forward.
// NOSPCPU-LABEL: func.func @biased_block
// NOSPCPU: graph.matmul {{.*}}graph.sharding = #graph.op_sharding<"matmul.n"
// NOSPCPU: %[[Y:.*]] = graph.matmul {{.*}}graph.sharding = #graph.op_sharding<"matmul.k+ar"{{.*}}partial = all_reduce
// NOSPCPU: %[[B:.*]] = graph.add %[[Y]], %{{.*}}graph.sharding = #graph.op_sharding<"replicated"
// NOSPCPU: %[[R:.*]] = graph.add %[[B]], %{{.*}}graph.sharding = #graph.op_sharding<"replicated"
// NOSPCPU: graph.layer_norm %[[R]]{{.*}}graph.sharding = #graph.op_sharding<"replicated"
func.func @biased_block() -> tensor<2x128x256xf32> {
  %tokens = graph.input "tokens" : tensor<2x128xi64>
  %wte = graph.param "wte.weight" : tensor<64x256xf32>
  %x = graph.gather %wte[%tokens] axis = 0 : tensor<64x256xf32>, tensor<2x128xi64>
  %lw = graph.param "ln_1.weight" : tensor<256xf32>
  %ln = graph.layer_norm %x scale(%lw : tensor<256xf32>) axis = 2 epsilon = 1.0e-5 : tensor<2x128x256xf32>
  %w1 = graph.param "fc.weight" : tensor<256x1024xf32>
  %b1 = graph.param "fc.bias" : tensor<1024xf32>
  %w2 = graph.param "proj.weight" : tensor<1024x256xf32>
  %b2 = graph.param "proj.bias" : tensor<256xf32>
  %h0 = graph.matmul %ln, %w1 : tensor<2x128x256xf32>, tensor<256x1024xf32>
  %h = graph.add %h0, %b1 : tensor<2x128x1024xf32>, tensor<1024xf32>
  %g = graph.gelu %h tanh : tensor<2x128x1024xf32>
  %y = graph.matmul %g, %w2 : tensor<2x128x1024xf32>, tensor<1024x256xf32>
  %yb = graph.add %y, %b2 : tensor<2x128x256xf32>, tensor<256xf32>
  %r = graph.add %yb, %x : tensor<2x128x256xf32>, tensor<2x128x256xf32>
  %lw2 = graph.param "ln_2.weight" : tensor<256xf32>
  %out = graph.layer_norm %r scale(%lw2 : tensor<256xf32>) axis = 2 epsilon = 1.0e-5 : tensor<2x128x256xf32>
  return %out : tensor<2x128x256xf32>
}
