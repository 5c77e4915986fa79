// RUN: cleave-opt %s -split-input-file -verify-diagnostics
// Every error of the sharding attribute, in its parser, its own verifier
// and the dialect's check against the op it is on.

func.func @unknown_partial(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{unknown partial reduction 'prod' (expected none, all_reduce, reduce_scatter or all_reduce_mean)}}
  %e = graph.exp %x {graph.sharding = #graph.op_sharding<"split1", operands = [<[{}, {0}]>], results = [<[{}, {0}]>], partial = prod>} : tensor<4x8xf32>
  return %e : tensor<4x8xf32>
}

// -----

func.func @unknown_key(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{unknown key 'inputs' in an op sharding (expected operands, results or partial)}}
  %e = graph.exp %x {graph.sharding = #graph.op_sharding<"split1", inputs = [<[{}, {0}]>]>} : tensor<4x8xf32>
  return %e : tensor<4x8xf32>
}

// -----

func.func @no_strategy(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{an op sharding names its strategy}}
  %e = graph.exp %x {graph.sharding = #graph.op_sharding<"", operands = [<[{}, {}]>], results = [<[{}, {}]>]>} : tensor<4x8xf32>
  return %e : tensor<4x8xf32>
}

// -----

func.func @negative_axis(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{mesh axis -1 is negative}}
  %e = graph.exp %x {graph.sharding = #graph.op_sharding<"split1", operands = [<[{}, {-1}]>], results = [<[{}, {0}]>]>} : tensor<4x8xf32>
  return %e : tensor<4x8xf32>
}

// -----

func.func @axis_twice(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{mesh axis 0 splits two dimensions of one tensor}}
  %e = graph.exp %x {graph.sharding = #graph.op_sharding<"split1", operands = [<[{0}, {0}]>], results = [<[{}, {0}]>]>} : tensor<4x8xf32>
  return %e : tensor<4x8xf32>
}

// -----

func.func @missing_operand(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{graph.sharding has 0 operand sharding(s) for 1 operand(s)}}
  %e = graph.exp %x {graph.sharding = #graph.op_sharding<"split1", results = [<[{}, {0}]>]>} : tensor<4x8xf32>
  return %e : tensor<4x8xf32>
}

// -----

func.func @too_many_results(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{graph.sharding has 2 result sharding(s) for 1 result(s)}}
  %e = graph.exp %x {graph.sharding = #graph.op_sharding<"split1", operands = [<[{}, {0}]>], results = [<[{}, {0}]>, <[{}, {0}]>]>} : tensor<4x8xf32>
  return %e : tensor<4x8xf32>
}

// -----

func.func @wrong_rank(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{graph.sharding: result 0 has rank 2 but its sharding lists 3 dimension(s)}}
  %e = graph.exp %x {graph.sharding = #graph.op_sharding<"split1", operands = [<[{}, {0}]>], results = [<[{}, {0}, {}]>]>} : tensor<4x8xf32>
  return %e : tensor<4x8xf32>
}

// -----

func.func @not_an_op_sharding(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{graph.sharding must be a #graph.op_sharding}}
  %e = graph.exp %x {graph.sharding = "split1"} : tensor<4x8xf32>
  return %e : tensor<4x8xf32>
}

// -----

func.func @unknown_attribute(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{unknown graph dialect attribute 'graph.strategy'}}
  %e = graph.exp %x {graph.strategy = "split1"} : tensor<4x8xf32>
  return %e : tensor<4x8xf32>
}

// -----

func.func @tensor_sharding_alone() attributes {s = #graph.tensor_sharding<[{}, {0}]>} {
  return
}

// -----

// expected-error @+1 {{mesh axis 2 splits two dimensions of one tensor}}
func.func @tensor_sharding_axis_twice() attributes {s = #graph.tensor_sharding<[{2}, {0, 2}]>} {
  return
}
