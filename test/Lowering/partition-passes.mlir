// RUN: cleave-opt %s --cleave-partition-context-parallel="cp=2" | FileCheck %s --check-prefix=CP
// RUN: cleave-opt %s --cleave-partition-tensor-parallel="tp=2" | FileCheck %s --check-prefix=TP
// RUN: cleave-opt %s --cleave-partition-tensor-parallel="tp=2 sequence-parallel=true" | FileCheck %s --check-prefix=SP
// RUN: cleave-opt %s --cleave-partition-context-parallel="cp=1" --cleave-partition-tensor-parallel="tp=1" | FileCheck %s --check-prefix=NONE

// Context parallelism: every sample's sequence split over "cp", the
// weight whole on every rank (its gradient all-reduced where it enters
// per-device work), the per-rank losses averaged.
// CP: graph.shard_slice %{{.*}} axes ["cp"] size 2 dim 1 : tensor<4x1024x512xf32> -> tensor<4x512x512xf32>
// CP: graph.copy_to_group %{{.*}} axes ["cp"] size 2 : tensor<512x512xf32>
// CP: graph.all_reduce %{{.*}} axes ["cp"] size 2 reduction "mean" : tensor<f32>

// Tensor parallelism: the weight split (never the batch: dp splits it),
// held to each device's share of the parameters.
// TP: graph.param "layers.0.fc.weight" {cleave.global_shape = array<i64: 512, 512>, cleave.shard_axes = ["", "tp"]} : tensor<512x256xf32>
// TP-NOT: graph.shard_slice {{.*}} dim 0

// With sequence parallelism the search may also split the sequence.
// SP: graph.param "layers.0.fc.weight" {{.*}}cleave.shard_axes = ["", "tp"]

// Degree 1: nothing to do.
// NONE: graph.param "layers.0.fc.weight" : tensor<512x512xf32>
// NONE-NOT: axes [
func.func @forward() -> tensor<f32> {
  %x = graph.input "x" : tensor<4x1024x512xf32>
  %labels = graph.input "labels" : tensor<4x1024xi64>
  %w0 = graph.param "layers.0.fc.weight" : tensor<512x512xf32>
  %h = graph.matmul %x, %w0 : tensor<4x1024x512xf32>, tensor<512x512xf32>
  %l = graph.cross_entropy %h, %labels : tensor<4x1024x512xf32>, tensor<4x1024xi64>
  return %l : tensor<f32>
}
