// RUN: cleave-opt %s --pass-pipeline='builtin.module(func.func(cleave-intra-op-search{mesh=4 cluster=cpu-local,devices=4 sequence-parallel=true param-memory=5e6}))' | FileCheck %s --check-prefix=FREE
// RUN: cleave-opt %s --pass-pipeline='builtin.module(func.func(cleave-intra-op-search{mesh=4 cluster=cpu-local,devices=4 sequence-parallel=true param-memory=5e6 no-batch-split=true}))' | FileCheck %s

// One GPT layer at hidden 512 (8 heads, a microbatch of 8 x 128 tokens,
// `cleave import zoo:gpt,layers=1,hidden=512,heads=8,seq=128,vocab=1024,
// batch=8`), its weights held to a quarter per device, with sequence
// parallelism.
//
// Left free, the search runs the attention as data parallelism within the
// tensor-parallel group: each device projects a quarter of the batch with
// the whole weight, gathered from the quarters the devices store (what
// ZeRO-3 over the group does; cheaper in its prices than the activations'
// collectives at this size).
// FREE: %[[WQ:.*]] = graph.param "h.0.attn.q_proj.weight"
// FREE: graph.matmul %{{.*}}, %[[WQ]] {{.*}}graph.sharding = #graph.op_sharding<"matmul.b0"
//
// With the batch kept whole (a transformer plan's tp; its dp and zero
// knobs split the batch, priced as such) it finds Megatron's layer with
// sequence parallelism by itself: q, k and v by columns, the attention by
// heads, the output projection by rows with its partial sums
// reduce-scattered along the sequence, the MLP column then row, the norms
// on sequence blocks, the LM head by vocabulary and the loss over it.
// CHECK: graph.layer_norm {{.*}}graph.sharding = #graph.op_sharding<"split1"
// CHECK: %[[WQ:.*]] = graph.param "h.0.attn.q_proj.weight"
// CHECK: graph.matmul %{{.*}}, %[[WQ]] {{.*}}graph.sharding = #graph.op_sharding<"matmul.n"
// CHECK: graph.matmul {{.*}}graph.sharding = #graph.op_sharding<"matmul.n"
// CHECK: graph.matmul {{.*}}graph.sharding = #graph.op_sharding<"matmul.n"
// CHECK: graph.matmul {{.*}} transpose_rhs {{.*}}graph.sharding = #graph.op_sharding<"matmul.b1"
// CHECK: graph.softmax {{.*}}graph.sharding = #graph.op_sharding<"split1"
// CHECK: graph.matmul {{.*}}graph.sharding = #graph.op_sharding<"matmul.b1"
// CHECK: %[[WO:.*]] = graph.param "h.0.attn.o_proj.weight"
// CHECK: graph.matmul %{{.*}}, %[[WO]] {{.*}}graph.sharding = #graph.op_sharding<"matmul.k+rs1"{{.*}}partial = reduce_scatter
// CHECK: graph.layer_norm {{.*}}graph.sharding = #graph.op_sharding<"split1"
// CHECK: graph.matmul {{.*}}graph.sharding = #graph.op_sharding<"matmul.n"
// CHECK: graph.matmul {{.*}}graph.sharding = #graph.op_sharding<"matmul.k+rs1"{{.*}}partial = reduce_scatter
// CHECK: graph.matmul {{.*}} transpose_rhs {{.*}}graph.sharding = #graph.op_sharding<"matmul.n"
// CHECK: graph.cross_entropy {{.*}}graph.sharding = #graph.op_sharding<"ce.classes"
// CHECK-NOT: matmul.b0
module attributes {cleave.model = "gpt", cleave.source = "zoo", cleave.zoo_family = "gpt", cleave.zoo_settings = "layers=1,hidden=512,heads=8,ffn=0,vocab=1024,pad_vocab=1,seq=128,positions=0,batch=8,dropout=0.0,tied=true,eps=1e-5,experts=0,top_k=1,moe_every=2,capacity_factor=1.25"} {
  func.func @forward() -> tensor<f32> {
    %0 = graph.input "tokens" : tensor<8x128xi64>
    %1 = graph.input "labels" : tensor<8x128xi64>
    %2 = graph.param "wte.weight" : tensor<1024x512xf32>
    %3 = graph.param "wpe.weight" : tensor<128x512xf32>
    %4 = graph.gather %2[%0] axis = 0 : tensor<1024x512xf32>, tensor<8x128xi64>
    %5 = graph.add %4, %3 : tensor<8x128x512xf32>, tensor<128x512xf32>
    %6 = graph.param "h.0.ln_1.weight" : tensor<512xf32>
    %7 = graph.param "h.0.ln_1.bias" : tensor<512xf32>
    %8 = graph.layer_norm %5 scale(%6 : tensor<512xf32>) bias(%7 : tensor<512xf32>) axis = 2 epsilon = 1.000000e-05 : tensor<8x128x512xf32>
    %9 = graph.param "h.0.attn.q_proj.weight" : tensor<512x512xf32>
    %10 = graph.matmul %8, %9 : tensor<8x128x512xf32>, tensor<512x512xf32>
    %11 = graph.param "h.0.attn.q_proj.bias" : tensor<512xf32>
    %12 = graph.add %10, %11 : tensor<8x128x512xf32>, tensor<512xf32>
    %13 = graph.param "h.0.attn.k_proj.weight" : tensor<512x512xf32>
    %14 = graph.matmul %8, %13 : tensor<8x128x512xf32>, tensor<512x512xf32>
    %15 = graph.param "h.0.attn.k_proj.bias" : tensor<512xf32>
    %16 = graph.add %14, %15 : tensor<8x128x512xf32>, tensor<512xf32>
    %17 = graph.param "h.0.attn.v_proj.weight" : tensor<512x512xf32>
    %18 = graph.matmul %8, %17 : tensor<8x128x512xf32>, tensor<512x512xf32>
    %19 = graph.param "h.0.attn.v_proj.bias" : tensor<512xf32>
    %20 = graph.add %18, %19 : tensor<8x128x512xf32>, tensor<512xf32>
    %21 = graph.reshape %12 : tensor<8x128x512xf32> -> tensor<8x128x8x64xf32>
    %22 = graph.transpose %21 [0, 2, 1, 3] : tensor<8x128x8x64xf32>
    %23 = graph.reshape %16 : tensor<8x128x512xf32> -> tensor<8x128x8x64xf32>
    %24 = graph.transpose %23 [0, 2, 1, 3] : tensor<8x128x8x64xf32>
    %25 = graph.reshape %20 : tensor<8x128x512xf32> -> tensor<8x128x8x64xf32>
    %26 = graph.transpose %25 [0, 2, 1, 3] : tensor<8x128x8x64xf32>
    %27 = graph.matmul %22, %24 transpose_rhs : tensor<8x8x128x64xf32>, tensor<8x8x128x64xf32>
    %28 = graph.constant dense<1.250000e-01> : tensor<f32>
    %29 = graph.mul %27, %28 : tensor<8x8x128x128xf32>, tensor<f32>
    %30 = graph.softmax %29 axis = 3 causal : tensor<8x8x128x128xf32>
    %31 = graph.matmul %30, %26 : tensor<8x8x128x128xf32>, tensor<8x8x128x64xf32>
    %32 = graph.transpose %31 [0, 2, 1, 3] : tensor<8x8x128x64xf32>
    %33 = graph.reshape %32 : tensor<8x128x8x64xf32> -> tensor<8x128x512xf32>
    %34 = graph.param "h.0.attn.o_proj.weight" : tensor<512x512xf32>
    %35 = graph.matmul %33, %34 : tensor<8x128x512xf32>, tensor<512x512xf32>
    %36 = graph.param "h.0.attn.o_proj.bias" : tensor<512xf32>
    %37 = graph.add %35, %36 : tensor<8x128x512xf32>, tensor<512xf32>
    %38 = graph.add %5, %37 : tensor<8x128x512xf32>, tensor<8x128x512xf32>
    %39 = graph.param "h.0.ln_2.weight" : tensor<512xf32>
    %40 = graph.param "h.0.ln_2.bias" : tensor<512xf32>
    %41 = graph.layer_norm %38 scale(%39 : tensor<512xf32>) bias(%40 : tensor<512xf32>) axis = 2 epsilon = 1.000000e-05 : tensor<8x128x512xf32>
    %42 = graph.param "h.0.mlp.fc.weight" : tensor<512x2048xf32>
    %43 = graph.matmul %41, %42 : tensor<8x128x512xf32>, tensor<512x2048xf32>
    %44 = graph.param "h.0.mlp.fc.bias" : tensor<2048xf32>
    %45 = graph.add %43, %44 : tensor<8x128x2048xf32>, tensor<2048xf32>
    %46 = graph.gelu %45 tanh : tensor<8x128x2048xf32>
    %47 = graph.param "h.0.mlp.proj.weight" : tensor<2048x512xf32>
    %48 = graph.matmul %46, %47 : tensor<8x128x2048xf32>, tensor<2048x512xf32>
    %49 = graph.param "h.0.mlp.proj.bias" : tensor<512xf32>
    %50 = graph.add %48, %49 : tensor<8x128x512xf32>, tensor<512xf32>
    %51 = graph.add %38, %50 : tensor<8x128x512xf32>, tensor<8x128x512xf32>
    %52 = graph.param "ln_f.weight" : tensor<512xf32>
    %53 = graph.param "ln_f.bias" : tensor<512xf32>
    %54 = graph.layer_norm %51 scale(%52 : tensor<512xf32>) bias(%53 : tensor<512xf32>) axis = 2 epsilon = 1.000000e-05 : tensor<8x128x512xf32>
    %55 = graph.matmul %54, %2 transpose_rhs : tensor<8x128x512xf32>, tensor<1024x512xf32>
    %56 = graph.cross_entropy %55, %1 : tensor<8x128x1024xf32>, tensor<8x128xi64>
    return %56 : tensor<f32>
  }
}

