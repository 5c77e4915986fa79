// RUN: cleave-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(cleave-spmd-partition{axis=tp size=2}))' | FileCheck %s

// Megatron's MLP: column-parallel then row-parallel, one all-reduce.
// CHECK-LABEL: func.func @mlp
func.func @mlp(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK: %[[W1:.*]] = graph.param "w1" {cleave.global_shape = array<i64: 8, 16>, cleave.shard_axes = ["", "tp"]} : tensor<8x8xf32>
  %w1 = graph.param "w1" {graph.sharding = #graph.op_sharding<"split1", results = [<[{}, {0}]>]>} : tensor<8x16xf32>
  // CHECK: %[[W2:.*]] = graph.param "w2" {cleave.global_shape = array<i64: 16, 8>, cleave.shard_axes = ["tp", ""]} : tensor<8x8xf32>
  %w2 = graph.param "w2" {graph.sharding = #graph.op_sharding<"split0", results = [<[{0}, {}]>]>} : tensor<16x8xf32>
  // CHECK: %[[X:.*]] = graph.copy_to_group %{{.*}} axes ["tp"] size 2 : tensor<4x8xf32>
  // CHECK: %[[H:.*]] = graph.matmul %[[X]], %[[W1]] : tensor<4x8xf32>, tensor<8x8xf32>
  %h = graph.matmul %x, %w1 {graph.sharding = #graph.op_sharding<"matmul.n", operands = [<[{}, {}]>, <[{}, {0}]>], results = [<[{}, {0}]>]>} : tensor<4x8xf32>, tensor<8x16xf32>
  // CHECK: %[[A:.*]] = graph.relu %[[H]] : tensor<4x8xf32>
  %a = graph.relu %h {graph.sharding = #graph.op_sharding<"split1", operands = [<[{}, {0}]>], results = [<[{}, {0}]>]>} : tensor<4x16xf32>
  // CHECK: %[[P:.*]] = graph.matmul %[[A]], %[[W2]] : tensor<4x8xf32>, tensor<8x8xf32>
  // CHECK-NEXT: %[[Y:.*]] = graph.all_reduce %[[P]] axes ["tp"] size 2 reduction "sum" : tensor<4x8xf32>
  %y = graph.matmul %a, %w2 {graph.sharding = #graph.op_sharding<"matmul.k+ar", operands = [<[{}, {0}]>, <[{0}, {}]>], results = [<[{}, {}]>], partial = all_reduce>} : tensor<4x16xf32>, tensor<16x8xf32>
  // CHECK: return %[[Y]]
  return %y : tensor<4x8xf32>
}

// -----

// Sequence parallelism: a reduce-scatter leaves rows split, the norm runs on
// them, an all-gather restores them; the result is returned whole.
// CHECK-LABEL: func.func @sequence
func.func @sequence(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  // CHECK: %[[S:.*]] = graph.shard_slice %arg0 axes ["tp"] size 2 dim 1 : tensor<4x8xf32> -> tensor<4x4xf32>
  // CHECK: %[[T:.*]] = graph.shard_slice %arg1 axes ["tp"] size 2 dim 0 : tensor<8x8xf32> -> tensor<4x8xf32>
  // CHECK: %[[P:.*]] = graph.matmul %[[S]], %[[T]] : tensor<4x4xf32>, tensor<4x8xf32>
  // CHECK-NEXT: %[[R:.*]] = graph.reduce_scatter %[[P]] axes ["tp"] size 2 dim 0 : tensor<4x8xf32> -> tensor<2x8xf32>
  %p = graph.matmul %x, %w {graph.sharding = #graph.op_sharding<"matmul.k+rs0", operands = [<[{}, {0}]>, <[{0}, {}]>], results = [<[{0}, {}]>], partial = reduce_scatter>} : tensor<4x8xf32>, tensor<8x8xf32>
  // CHECK: %[[N:.*]] = graph.rms_norm %[[R]] axis = 1 epsilon = {{.*}} : tensor<2x8xf32>
  %n = graph.rms_norm %p axis = 1 epsilon = 1.0e-5 {graph.sharding = #graph.op_sharding<"split0", operands = [<[{0}, {}]>], results = [<[{0}, {}]>]>} : tensor<4x8xf32>
  // CHECK: %[[C:.*]] = graph.all_to_all %[[N]] axes ["tp"] size 2 split 1 concat 0 : tensor<2x8xf32> -> tensor<4x4xf32>
  %e = graph.exp %n {graph.sharding = #graph.op_sharding<"split1", operands = [<[{}, {0}]>], results = [<[{}, {0}]>]>} : tensor<4x8xf32>
  // CHECK: %[[E:.*]] = graph.exp %[[C]] : tensor<4x4xf32>
  // CHECK: %[[G:.*]] = graph.all_gather %[[E]] axes ["tp"] size 2 dim 1 : tensor<4x4xf32> -> tensor<4x8xf32>
  // CHECK: return %[[G]]
  return %e : tensor<4x8xf32>
}

// -----

// A loss over a batch split across devices is the mean of the devices'
// means; integer labels are sliced, never copied to the group.
// CHECK-LABEL: func.func @loss
func.func @loss(%logits: tensor<4x10xf32>, %labels: tensor<4xi64>) -> tensor<f32> {
  // CHECK: %[[L:.*]] = graph.shard_slice %arg0 axes ["tp"] size 2 dim 0 : tensor<4x10xf32> -> tensor<2x10xf32>
  // CHECK: %[[Y:.*]] = graph.shard_slice %arg1 axes ["tp"] size 2 dim 0 : tensor<4xi64> -> tensor<2xi64>
  // CHECK: %[[CE:.*]] = graph.cross_entropy %[[L]], %[[Y]] : tensor<2x10xf32>, tensor<2xi64>
  // CHECK-NEXT: graph.all_reduce %[[CE]] axes ["tp"] size 2 reduction "mean" : tensor<f32>
  %l = graph.cross_entropy %logits, %labels {graph.sharding = #graph.op_sharding<"ce.batch0", operands = [<[{0}, {}]>, <[{0}]>], results = [<[]>], partial = all_reduce_mean>} : tensor<4x10xf32>, tensor<4xi64>
  return %l : tensor<f32>
}

// -----

// Megatron's vocabulary-parallel embedding: each device looks up the rows
// it holds (ids shifted by its first row, which a sliced id constant gives),
// zeroes the others', and an all-reduce sums the devices' rows.
// CHECK-LABEL: func.func @vocab_embedding
func.func @vocab_embedding(%ids: tensor<2x3xi64>) -> tensor<2x3x4xf32> {
  // CHECK: %[[T:.*]] = graph.param "wte" {cleave.global_shape = array<i64: 10, 4>, cleave.shard_axes = ["tp", ""]} : tensor<5x4xf32>
  %t = graph.param "wte" {graph.sharding = #graph.op_sharding<"split0", results = [<[{0}, {}]>]>} : tensor<10x4xf32>
  // CHECK: graph.shard_slice %{{.*}} axes ["tp"] size 2 dim 0 : tensor<10xf32> -> tensor<5xf32>
  // CHECK: %[[I:.*]] = graph.cast %{{.*}} : tensor<2x3xf32> to tensor<2x3xi64>
  // CHECK: %[[R:.*]] = graph.gather %[[T]][%[[I]]] axis = 0 : tensor<5x4xf32>, tensor<2x3xi64>
  // CHECK: %[[M:.*]] = graph.where %{{.*}}, %[[R]], %{{.*}} : tensor<2x3x1xi1>, tensor<2x3x4xf32>, tensor<f32>
  // CHECK-NEXT: %[[S:.*]] = graph.all_reduce %[[M]] axes ["tp"] size 2 reduction "sum" : tensor<2x3x4xf32>
  // CHECK-NOT: graph.gather
  %e = graph.gather %t[%ids] axis = 0 {graph.sharding = #graph.op_sharding<"gather.rows+ar", operands = [<[{0}, {}]>, <[{}, {}]>], results = [<[{}, {}, {}]>], partial = all_reduce>} : tensor<10x4xf32>, tensor<2x3xi64>
  // CHECK: return %[[S]]
  return %e : tensor<2x3x4xf32>
}

// -----

// Megatron's vocabulary-parallel cross-entropy: the row maximum (no
// gradient through it), the sum of exponentials and the target logit are
// all-reduced; every device gets the whole mean loss.
// CHECK-LABEL: func.func @vocab_cross_entropy
func.func @vocab_cross_entropy(%logits: tensor<4x10xf32>, %labels: tensor<4xi64>) -> tensor<f32> {
  // CHECK: %[[X:.*]] = graph.shard_slice %arg0 axes ["tp"] size 2 dim 1 : tensor<4x10xf32> -> tensor<4x5xf32>
  // CHECK: %[[LM:.*]] = graph.reduce_max %[[X]] [1] keepdims : tensor<4x5xf32>
  // CHECK: %[[GM:.*]] = graph.all_reduce %[[LM]] axes ["tp"] size 2 reduction "max" : tensor<4x1xf32>
  // CHECK: %[[M:.*]] = graph.stop_gradient %[[GM]] : tensor<4x1xf32>
  // CHECK: %[[SH:.*]] = graph.sub %[[X]], %[[M]]
  // CHECK: graph.all_reduce %{{.*}} axes ["tp"] size 2 reduction "sum" : tensor<4xf32>
  // CHECK: graph.compare "eq", %{{.*}}, %{{.*}} : tensor<4x1xf32>, tensor<5xf32>
  // CHECK: graph.all_reduce %{{.*}} axes ["tp"] size 2 reduction "sum" : tensor<4xf32>
  // CHECK: %[[L:.*]] = graph.div %{{.*}}, %{{.*}} : tensor<f32>, tensor<f32>
  // CHECK-NOT: graph.cross_entropy
  // CHECK-NOT: graph.all_reduce
  %l = graph.cross_entropy %logits, %labels {graph.sharding = #graph.op_sharding<"ce.classes", operands = [<[{}, {0}]>, <[{}]>], results = [<[]>]>} : tensor<4x10xf32>, tensor<4xi64>
  // CHECK: return %[[L]]
  return %l : tensor<f32>
}
