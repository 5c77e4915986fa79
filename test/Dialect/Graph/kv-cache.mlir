// RUN: cleave-opt %s | cleave-opt | FileCheck %s
// graph.cache_write and graph.paged_attention print and parse back: one
// decode step of a grouped-query layer, 4 sequences, 8 query heads over 2
// key/value heads, a pool of 64 blocks of 16 positions.

// CHECK-LABEL: func.func @decode_step
func.func @decode_step(%q: tensor<4x8x1x64xf32>, %k: tensor<4x2x64xf32>,
                       %v: tensor<4x2x64xf32>, %kc: tensor<64x16x2x64xf32>,
                       %vc: tensor<64x16x2x64xf32>, %slots: tensor<4xi64>,
                       %table: tensor<4x8xi64>, %len: tensor<4xi64>)
    -> tensor<4x8x1x64xf32> {
  // CHECK: graph.cache_write %{{.*}} into %{{.*}} at %{{.*}} : tensor<4x2x64xf32>, tensor<64x16x2x64xf32>, tensor<4xi64>
  %kc2 = graph.cache_write %k into %kc at %slots : tensor<4x2x64xf32>, tensor<64x16x2x64xf32>, tensor<4xi64>
  %vc2 = graph.cache_write %v into %vc at %slots : tensor<4x2x64xf32>, tensor<64x16x2x64xf32>, tensor<4xi64>
  // CHECK: graph.paged_attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} scale = 1.250000e-01 : tensor<4x8x1x64xf32>, tensor<64x16x2x64xf32>, tensor<64x16x2x64xf32>, tensor<4x8xi64>, tensor<4xi64> -> tensor<4x8x1x64xf32>
  %o = graph.paged_attention %q, %kc2, %vc2, %table, %len scale = 0.125 : tensor<4x8x1x64xf32>, tensor<64x16x2x64xf32>, tensor<64x16x2x64xf32>, tensor<4x8xi64>, tensor<4xi64> -> tensor<4x8x1x64xf32>
  return %o : tensor<4x8x1x64xf32>
}
