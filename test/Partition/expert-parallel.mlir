// RUN: cleave-opt %s --pass-pipeline='builtin.module(func.func(cleave-expert-parallel{size=2}))' -split-input-file | FileCheck %s

// A top-2 MoE MLP of 4 experts over 2 expert-parallel replicas: each keeps
// 2 experts and computes them over both replicas' slots; the tokens go
// there and back by all-to-all, the router stays whole.
// CHECK-LABEL: func.func @moe
func.func @moe(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // CHECK: graph.param "router" : tensor<16x4xf32>
  %router = graph.param "router" : tensor<16x4xf32>
  %logits = graph.matmul %x, %router : tensor<8x16xf32>, tensor<16x4xf32>
  %w, %i = graph.moe_gate %logits top_k = 2 renormalize : tensor<8x4xf32>
  // CHECK: %[[D:.*]] = graph.moe_dispatch
  // CHECK-NEXT: %[[A:.*]] = graph.all_to_all %[[D]] axes ["ep"] size 2 split 0 concat 1 : tensor<4x5x16xf32> -> tensor<2x10x16xf32>
  %d = graph.moe_dispatch %x, %i experts = 4 capacity = 5 : tensor<8x16xf32>, tensor<8x2xi64>
  // CHECK: graph.param "experts.fc" {cleave.global_shape = array<i64: 4, 16, 32>, cleave.shard_axes = ["ep", "", ""]} : tensor<2x16x32xf32>
  // CHECK: graph.param "experts.proj" {cleave.global_shape = array<i64: 4, 32, 16>, cleave.shard_axes = ["ep", "", ""]} : tensor<2x32x16xf32>
  %fc = graph.param "experts.fc" : tensor<4x16x32xf32>
  %proj = graph.param "experts.proj" : tensor<4x32x16xf32>
  // CHECK: graph.matmul %[[A]], %{{.*}} : tensor<2x10x16xf32>, tensor<2x16x32xf32>
  %h = graph.matmul %d, %fc : tensor<4x5x16xf32>, tensor<4x16x32xf32>
  // CHECK: graph.gelu %{{.*}} : tensor<2x10x32xf32>
  %g = graph.gelu %h : tensor<4x5x32xf32>
  %y = graph.matmul %g, %proj : tensor<4x5x32xf32>, tensor<4x32x16xf32>
  // CHECK: %[[B:.*]] = graph.all_to_all %{{.*}} axes ["ep"] size 2 split 1 concat 0 : tensor<2x10x16xf32> -> tensor<4x5x16xf32>
  // CHECK: graph.moe_combine %[[B]], %{{.*}}, %{{.*}} : tensor<4x5x16xf32>
  %c = graph.moe_combine %y, %w, %i : tensor<4x5x16xf32>, tensor<8x2xf32>, tensor<8x2xi64>
  return %c : tensor<8x16xf32>
}
