// RUN: cleave-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(func.func(cleave-spmd-partition{axis=tp size=2}))'

func.func @fallback_remark(%x: tensor<8x16xf32>, %i: tensor<8x1xi64>) -> tensor<4x2x16xf32> {
  // expected-remark @+1 {{strategy 'dispatch.experts' has no local kernel yet; the op runs replicated}}
  %d = graph.moe_dispatch %x, %i experts = 4 capacity = 2 {graph.sharding = #graph.op_sharding<"dispatch.experts", operands = [<[{}, {}]>, <[{}, {}]>], results = [<[{0}, {}, {}]>]>} : tensor<8x16xf32>, tensor<8x1xi64>
  return %d : tensor<4x2x16xf32>
}

// -----

// The intra-op search's annotations for a mesh of several axes are not
// partitioned as one.
func.func @two_axes(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{graph.sharding splits over mesh axes other than 0; cleave-spmd-partition partitions one axis (search with mesh=N)}}
  %e = graph.exp %x {graph.sharding = #graph.op_sharding<"split0|split1", operands = [<[{0}, {1}]>], results = [<[{0}, {1}]>]>} : tensor<4x8xf32>
  return %e : tensor<4x8xf32>
}
