// RUN: cleave-opt %s --pass-pipeline='builtin.module(func.func(cleave-intra-op-search{mesh=4 cluster=cpu-local,devices=4 no-sequence-parallel=true no-batch-split=true}))' | FileCheck %s
// RUN: cleave-opt %s --pass-pipeline='builtin.module(func.func(cleave-intra-op-search{mesh=4 cluster=cpu-local,devices=4 no-sequence-parallel=true no-batch-split=true}))' | FileCheck %s --check-prefix=TOKENS

// One GPT layer whose sequence (1024 tokens) is four times its hidden size
// (256), tensor-parallel without sequence parallelism (a plan with sp=off),
// `cleave import zoo:gpt,layers=1,hidden=256,heads=4,seq=1024,vocab=512`.
// Here a block of the tokens times the whole weight, gathered from the
// quarters the devices store, moves fewer bytes than the all-reduces of
// the activations, so the search takes it wherever the rules let it. The
// norms run whole (no sequence parallelism); the sequence must be followed
// through them all the same, or the attention projections behind them
// split the tokens with gathered weights, as they did before the rules read
// the sequence off a norm's strategies before keeping only its replicated
// one. Megatron's layer: q, k and v by columns, the attention by heads,
// the output projection by rows with an all-reduce, the MLP column then
// row, and no split of the tokens anywhere.
// CHECK: graph.layer_norm {{.*}}graph.sharding = #graph.op_sharding<"replicated"
// CHECK: %[[WQ:.*]] = graph.param "h.0.attn.q_proj.weight"
// CHECK: graph.matmul %{{.*}}, %[[WQ]] {{.*}}graph.sharding = #graph.op_sharding<"matmul.n"
// CHECK: graph.matmul {{.*}}graph.sharding = #graph.op_sharding<"matmul.n"
// CHECK: graph.matmul {{.*}}graph.sharding = #graph.op_sharding<"matmul.n"
// CHECK: graph.matmul {{.*}} transpose_rhs {{.*}}graph.sharding = #graph.op_sharding<"matmul.b1"
// CHECK: graph.matmul {{.*}}graph.sharding = #graph.op_sharding<"matmul.b1"
// CHECK: %[[WO:.*]] = graph.param "h.0.attn.o_proj.weight"
// CHECK: graph.matmul %{{.*}}, %[[WO]] {{.*}}graph.sharding = #graph.op_sharding<"matmul.k+ar"{{.*}}partial = all_reduce
// CHECK: graph.layer_norm {{.*}}graph.sharding = #graph.op_sharding<"replicated"
// CHECK: graph.matmul {{.*}}graph.sharding = #graph.op_sharding<"matmul.n"
// CHECK: graph.matmul {{.*}}graph.sharding = #graph.op_sharding<"matmul.k+ar"{{.*}}partial = all_reduce
// TOKENS-NOT: graph.sharding = #graph.op_sharding<"matmul.m"
module attributes {cleave.model = "gpt", cleave.source = "zoo", cleave.zoo_family = "gpt", cleave.zoo_settings = "layers=1,hidden=256,heads=4,ffn=0,vocab=512,pad_vocab=1,seq=1024,positions=0,batch=1,dropout=0.0,tied=true,eps=1e-5,experts=0,top_k=1,moe_every=2,capacity_factor=1.25"} {
  func.func @forward() -> tensor<f32> {
    %0 = graph.input "tokens" : tensor<1x1024xi64>
    %1 = graph.input "labels" : tensor<1x1024xi64>
    %2 = graph.param "wte.weight" : tensor<512x256xf32>
    %3 = graph.param "wpe.weight" : tensor<1024x256xf32>
    %4 = graph.gather %2[%0] axis = 0 : tensor<512x256xf32>, tensor<1x1024xi64>
    %5 = graph.add %4, %3 : tensor<1x1024x256xf32>, tensor<1024x256xf32>
    %6 = graph.param "h.0.ln_1.weight" : tensor<256xf32>
    %7 = graph.param "h.0.ln_1.bias" : tensor<256xf32>
    %8 = graph.layer_norm %5 scale(%6 : tensor<256xf32>) bias(%7 : tensor<256xf32>) axis = 2 epsilon = 1.000000e-05 : tensor<1x1024x256xf32>
    %9 = graph.param "h.0.attn.q_proj.weight" : tensor<256x256xf32>
    %10 = graph.matmul %8, %9 : tensor<1x1024x256xf32>, tensor<256x256xf32>
    %11 = graph.param "h.0.attn.q_proj.bias" : tensor<256xf32>
    %12 = graph.add %10, %11 : tensor<1x1024x256xf32>, tensor<256xf32>
    %13 = graph.param "h.0.attn.k_proj.weight" : tensor<256x256xf32>
    %14 = graph.matmul %8, %13 : tensor<1x1024x256xf32>, tensor<256x256xf32>
    %15 = graph.param "h.0.attn.k_proj.bias" : tensor<256xf32>
    %16 = graph.add %14, %15 : tensor<1x1024x256xf32>, tensor<256xf32>
    %17 = graph.param "h.0.attn.v_proj.weight" : tensor<256x256xf32>
    %18 = graph.matmul %8, %17 : tensor<1x1024x256xf32>, tensor<256x256xf32>
    %19 = graph.param "h.0.attn.v_proj.bias" : tensor<256xf32>
    %20 = graph.add %18, %19 : tensor<1x1024x256xf32>, tensor<256xf32>
    %21 = graph.reshape %12 : tensor<1x1024x256xf32> -> tensor<1x1024x4x64xf32>
    %22 = graph.transpose %21 [0, 2, 1, 3] : tensor<1x1024x4x64xf32>
    %23 = graph.reshape %16 : tensor<1x1024x256xf32> -> tensor<1x1024x4x64xf32>
    %24 = graph.transpose %23 [0, 2, 1, 3] : tensor<1x1024x4x64xf32>
    %25 = graph.reshape %20 : tensor<1x1024x256xf32> -> tensor<1x1024x4x64xf32>
    %26 = graph.transpose %25 [0, 2, 1, 3] : tensor<1x1024x4x64xf32>
    %27 = graph.matmul %22, %24 transpose_rhs : tensor<1x4x1024x64xf32>, tensor<1x4x1024x64xf32>
    %28 = graph.constant dense<1.250000e-01> : tensor<f32>
    %29 = graph.mul %27, %28 : tensor<1x4x1024x1024xf32>, tensor<f32>
    %30 = graph.softmax %29 axis = 3 causal : tensor<1x4x1024x1024xf32>
    %31 = graph.matmul %30, %26 : tensor<1x4x1024x1024xf32>, tensor<1x4x1024x64xf32>
    %32 = graph.transpose %31 [0, 2, 1, 3] : tensor<1x4x1024x64xf32>
    %33 = graph.reshape %32 : tensor<1x1024x4x64xf32> -> tensor<1x1024x256xf32>
    %34 = graph.param "h.0.attn.o_proj.weight" : tensor<256x256xf32>
    %35 = graph.matmul %33, %34 : tensor<1x1024x256xf32>, tensor<256x256xf32>
    %36 = graph.param "h.0.attn.o_proj.bias" : tensor<256xf32>
    %37 = graph.add %35, %36 : tensor<1x1024x256xf32>, tensor<256xf32>
    %38 = graph.add %5, %37 : tensor<1x1024x256xf32>, tensor<1x1024x256xf32>
    %39 = graph.param "h.0.ln_2.weight" : tensor<256xf32>
    %40 = graph.param "h.0.ln_2.bias" : tensor<256xf32>
    %41 = graph.layer_norm %38 scale(%39 : tensor<256xf32>) bias(%40 : tensor<256xf32>) axis = 2 epsilon = 1.000000e-05 : tensor<1x1024x256xf32>
    %42 = graph.param "h.0.mlp.fc.weight" : tensor<256x1024xf32>
    %43 = graph.matmul %41, %42 : tensor<1x1024x256xf32>, tensor<256x1024xf32>
    %44 = graph.param "h.0.mlp.fc.bias" : tensor<1024xf32>
    %45 = graph.add %43, %44 : tensor<1x1024x1024xf32>, tensor<1024xf32>
    %46 = graph.gelu %45 tanh : tensor<1x1024x1024xf32>
    %47 = graph.param "h.0.mlp.proj.weight" : tensor<1024x256xf32>
    %48 = graph.matmul %46, %47 : tensor<1x1024x1024xf32>, tensor<1024x256xf32>
    %49 = graph.param "h.0.mlp.proj.bias" : tensor<256xf32>
    %50 = graph.add %48, %49 : tensor<1x1024x256xf32>, tensor<256xf32>
    %51 = graph.add %38, %50 : tensor<1x1024x256xf32>, tensor<1x1024x256xf32>
    %52 = graph.param "ln_f.weight" : tensor<256xf32>
    %53 = graph.param "ln_f.bias" : tensor<256xf32>
    %54 = graph.layer_norm %51 scale(%52 : tensor<256xf32>) bias(%53 : tensor<256xf32>) axis = 2 epsilon = 1.000000e-05 : tensor<1x1024x256xf32>
    %55 = graph.matmul %54, %2 transpose_rhs : tensor<1x1024x256xf32>, tensor<512x256xf32>
    %56 = graph.cross_entropy %55, %1 : tensor<1x1024x512xf32>, tensor<1x1024xi64>
    return %56 : tensor<f32>
  }
}

