// The lowering keeps a sharding already written on an op (the graph
// planner's choice, which the artifact writes before lowering, or one by
// hand) and searches only for the ops without one. Left free, the search
// splits this weight's columns (partition-passes.mlir); held to the rows,
// the matmul contracts a split K and all-reduces its partial sums.
// RUN: cleave-opt %s --cleave-partition-tensor-parallel="tp=2" | FileCheck %s
// RUN: cleave-opt %s --cleave-lower-to-stages="tp=2 append-loss=false" | FileCheck %s --check-prefix=PIPE
// RUN: not cleave-opt %s --cleave-partition-tensor-parallel="tp=3" 2>&1 | FileCheck %s --check-prefix=MESH
// RUN: not cleave-opt %s --cleave-partition-context-parallel="cp=2" 2>&1 | FileCheck %s --check-prefix=CP

// CHECK: graph.param "layers.0.fc.weight" {cleave.global_shape = array<i64: 512, 512>, cleave.shard_axes = ["tp", ""]} : tensor<256x512xf32>
// CHECK: graph.matmul {{.*}} : tensor<4x1024x256xf32>, tensor<256x512xf32>
// CHECK: graph.all_reduce {{.*}} axes ["tp"] size 2
// CHECK-NOT: graph.sharding

// PIPE: graph.param "layers.0.fc.weight" {{.*}}cleave.shard_axes = ["tp", ""]

// 512 rows do not split over 3 devices: a sharding the op does not offer
// on the mesh is an error at the op, not a silent re-search.
// MESH: error: 'graph.param' op carries the sharding 'split0', which is not one of its strategies on a mesh of shape [3]

// CP: error: 'func.func' op carries tensor-parallel shardings (graph.sharding), which context parallelism cannot combine with
func.func @forward() -> tensor<f32> {
  %x = graph.input "x" : tensor<4x1024x512xf32>
  %labels = graph.input "labels" : tensor<4x1024xi64>
  %w0 = graph.param "layers.0.fc.weight" {graph.sharding = #graph.op_sharding<"split0", results = [<[{0}, {}]>]>} : tensor<512x512xf32>
  %h = graph.matmul %x, %w0 {graph.sharding = #graph.op_sharding<"matmul.k+ar", operands = [<[{}, {}, {0}]>, <[{0}, {}]>], results = [<[{}, {}, {}]>], partial = all_reduce>} : tensor<4x1024x512xf32>, tensor<512x512xf32>
  %l = graph.cross_entropy %h, %labels : tensor<4x1024x512xf32>, tensor<4x1024xi64>
  return %l : tensor<f32>
}
