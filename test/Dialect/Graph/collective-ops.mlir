// RUN: cleave-opt %s | cleave-opt | FileCheck %s
// RUN: cleave-opt %s --mlir-print-op-generic | cleave-opt | FileCheck %s
// Communication ops print and parse back identically.

// CHECK-LABEL: func.func @collectives
func.func @collectives(%x: tensor<8x16x64xf32>) -> tensor<8x16x64xf32> {
  // CHECK: graph.all_reduce %{{.*}} axes ["tp"] size 4 reduction "sum" : tensor<8x16x64xf32>
  %0 = graph.all_reduce %x axes ["tp"] size 4 reduction "sum" : tensor<8x16x64xf32>
  // CHECK: graph.all_gather %{{.*}} axes ["dp", "tp"] size 8 dim 0 varying_grad : tensor<8x16x64xf32> -> tensor<64x16x64xf32>
  %1 = graph.all_gather %0 axes ["dp", "tp"] size 8 dim 0 varying_grad : tensor<8x16x64xf32> -> tensor<64x16x64xf32>
  // CHECK: graph.reduce_scatter %{{.*}} axes ["dp", "tp"] size 8 dim 0 : tensor<64x16x64xf32> -> tensor<8x16x64xf32>
  %2 = graph.reduce_scatter %1 axes ["dp", "tp"] size 8 dim 0 : tensor<64x16x64xf32> -> tensor<8x16x64xf32>
  // CHECK: graph.all_to_all %{{.*}} axes ["ep"] size 4 split 0 concat 1 : tensor<8x16x64xf32> -> tensor<2x64x64xf32>
  %3 = graph.all_to_all %2 axes ["ep"] size 4 split 0 concat 1 : tensor<8x16x64xf32> -> tensor<2x64x64xf32>
  // CHECK: graph.shard_slice %{{.*}} axes ["tp"] size 4 dim 2 : tensor<8x16x64xf32> -> tensor<8x16x16xf32>
  %4 = graph.shard_slice %2 axes ["tp"] size 4 dim 2 : tensor<8x16x64xf32> -> tensor<8x16x16xf32>
  // CHECK: graph.copy_to_group %{{.*}} axes ["tp"] size 4 : tensor<8x16x64xf32>
  %5 = graph.copy_to_group %2 axes ["tp"] size 4 : tensor<8x16x64xf32>
  // CHECK: graph.send %{{.*}} axis "pp" offset 1 tag 0 : tensor<8x16x64xf32>
  graph.send %5 axis "pp" offset 1 tag 0 : tensor<8x16x64xf32>
  // CHECK: graph.recv axis "pp" offset -1 tag 0 : tensor<8x16x64xf32>
  %6 = graph.recv axis "pp" offset -1 tag 0 : tensor<8x16x64xf32>
  return %6 : tensor<8x16x64xf32>
}
