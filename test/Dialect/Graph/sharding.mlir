// RUN: cleave-opt %s | cleave-opt | FileCheck %s
// The sharding attribute round-trips: a strategy, a tensor sharding per
// operand and result (per dimension, the mesh axes that split it), and the
// partial reduction where there is one.

// CHECK-LABEL: func.func @row_parallel
// CHECK: graph.param "w" {graph.sharding = #graph.op_sharding<"split0", results = [<[{0}, {}]>]>}
// CHECK: graph.matmul {{.*}} {graph.sharding = #graph.op_sharding<"matmul.k+ar", operands = [<[{}, {0}]>, <[{0}, {}]>], results = [<[{}, {}]>], partial = all_reduce>}
// CHECK: graph.exp {{.*}} {graph.sharding = #graph.op_sharding<"split0|split1", operands = [<[{0, 1}, {}]>], results = [<[{0, 1}, {}]>]>}
// CHECK: graph.cross_entropy {{.*}} {graph.sharding = #graph.op_sharding<"ce.batch0", operands = [<[{0}, {}]>, <[{0}]>], results = [<[]>], partial = all_reduce_mean>}
func.func @row_parallel(%x: tensor<4x16xf32>, %labels: tensor<4xi64>) -> tensor<f32> {
  %w = graph.param "w" {graph.sharding = #graph.op_sharding<"split0", results = [<[{0}, {}]>]>} : tensor<16x8xf32>
  %y = graph.matmul %x, %w {graph.sharding = #graph.op_sharding<"matmul.k+ar", operands = [<[{}, {0}]>, <[{0}, {}]>], results = [<[{}, {}]>], partial = all_reduce>} : tensor<4x16xf32>, tensor<16x8xf32>
  %e = graph.exp %y {graph.sharding = #graph.op_sharding<"split0|split1", operands = [<[{0, 1}, {}]>], results = [<[{0, 1}, {}]>], partial = none>} : tensor<4x8xf32>
  %l = graph.cross_entropy %e, %labels {graph.sharding = #graph.op_sharding<"ce.batch0", operands = [<[{0}, {}]>, <[{0}]>], results = [<[]>], partial = all_reduce_mean>} : tensor<4x8xf32>, tensor<4xi64>
  return %l : tensor<f32>
}
