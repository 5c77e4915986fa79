// RUN: cleave-opt %s --cleave-intra-op-search="mesh=8 param-memory=1000" -split-input-file -verify-diagnostics
// RUN: not cleave-opt %s --cleave-intra-op-search="cluster=no-such-cluster" 2>&1 | FileCheck %s --check-prefix=CLUSTER
// RUN: not cleave-opt %s --cleave-intra-op-search="mesh=16" 2>&1 | FileCheck %s --check-prefix=MESH
// RUN: not cleave-opt %s --cleave-intra-op-search="mesh=0" 2>&1 | FileCheck %s --check-prefix=MESH0
// RUN: not cleave-opt %s --cleave-intra-op-search="mesh-shape=2x" 2>&1 | FileCheck %s --check-prefix=SHAPE
// RUN: not cleave-opt %s --cleave-intra-op-search="mesh-shape=2x0" 2>&1 | FileCheck %s --check-prefix=SHAPE0
// RUN: not cleave-opt %s --cleave-intra-op-search="mesh-shape=2x2x1x2" 2>&1 | FileCheck %s --check-prefix=AXES
// RUN: not cleave-opt %s --cleave-intra-op-search="mesh-shape=4x4" 2>&1 | FileCheck %s --check-prefix=SHAPE16
// RUN: not cleave-opt %s --cleave-intra-op-search="mesh-shape=2x4 sequence-parallel=true" 2>&1 | FileCheck %s --check-prefix=SP2D
// RUN: not cleave-opt %s --cleave-intra-op-search="mesh=4 sequence-parallel=true no-sequence-parallel=true" 2>&1 | FileCheck %s --check-prefix=SPBOTH
// RUN: not cleave-opt %s --cleave-intra-op-search="mesh-shape=2x4 no-batch-split=true" 2>&1 | FileCheck %s --check-prefix=NB2D
// RUN: not cleave-opt %s --cleave-intra-op-search="mesh=4 profile=%t.no-such.profile" 2>&1 | FileCheck %s --check-prefix=NOPROFILE
// RUN: printf '[gemm fp32]\n64x64 = 1 ms\n' > %t.bad.profile
// RUN: not cleave-opt %s --cleave-intra-op-search="mesh=4 profile=%t.bad.profile" 2>&1 | FileCheck %s --check-prefix=BADPROFILE

// CLUSTER: bad cluster 'no-such-cluster': cluster spec 'no-such-cluster': unknown cluster preset
// NOPROFILE: error: 'func.func' op bad profile: {{.*}}no-such.profile
// BADPROFILE: error: 'func.func' op bad profile: {{.*}}bad.profile:2
// MESH: mesh of 16 ranks does not fit cluster 'dgx-a100-80g' of 8 devices
// MESH0: mesh size must be positive, got 0
// SHAPE: bad mesh-shape '2x': expected sizes joined by 'x', e.g. 2x4
// SHAPE0: bad mesh-shape '2x0': expected sizes joined by 'x', e.g. 2x4
// AXES: a mesh has 1 to 3 axes, got 4
// SHAPE16: mesh of 16 ranks does not fit cluster 'dgx-a100-80g' of 8 devices
// SP2D: sequence and context parallelism are searched on a 1-D mesh
// SPBOTH: sequence-parallel and no-sequence-parallel both set
// NB2D: no-batch-split (a transformer plan's tensor parallelism) is searched on a 1-D mesh

// expected-error @+1 {{no sharding fits the parameter memory limit of 1000 bytes per device}}
func.func @too_big() -> tensor<4x1024xf32> {
  %x = graph.input "x" : tensor<4x1024xf32>
  %w = graph.param "w" : tensor<1024x1024xf32>
  %y = graph.matmul %x, %w : tensor<4x1024xf32>, tensor<1024x1024xf32>
  return %y : tensor<4x1024xf32>
}
