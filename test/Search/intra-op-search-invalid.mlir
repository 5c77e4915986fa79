// RUN: cleave-opt %s --cleave-intra-op-search="mesh=8 param-memory=1000" -split-input-file -verify-diagnostics
// RUN: not cleave-opt %s --cleave-intra-op-search="cluster=no-such-cluster" 2>&1 | FileCheck %s --check-prefix=CLUSTER
// RUN: not cleave-opt %s --cleave-intra-op-search="mesh=16" 2>&1 | FileCheck %s --check-prefix=MESH
// RUN: not cleave-opt %s --cleave-intra-op-search="mesh=0" 2>&1 | FileCheck %s --check-prefix=MESH0

// CLUSTER: bad cluster 'no-such-cluster'
// MESH: mesh of 16 ranks does not fit cluster 'dgx-a100-80g' of 8 devices
// MESH0: mesh size must be positive, got 0

// expected-error @+1 {{no sharding fits the parameter memory limit of 1000 bytes per device}}
func.func @too_big() -> tensor<4x1024xf32> {
  %x = graph.input "x" : tensor<4x1024xf32>
  %w = graph.param "w" : tensor<1024x1024xf32>
  %y = graph.matmul %x, %w : tensor<4x1024xf32>, tensor<1024x1024xf32>
  return %y : tensor<4x1024xf32>
}
