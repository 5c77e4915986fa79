// RUN: cleave-opt %s --cleave-intra-op-search="mesh=8 cluster=dgx-a100-80g param-memory=8e6" -split-input-file | FileCheck %s
// RUN: cleave-opt %s --cleave-intra-op-search="mesh=8 cluster=dgx-a100-80g param-memory=8e6 training=false" -split-input-file | FileCheck %s --check-prefix=FWD
// RUN: cleave-opt %s --cleave-intra-op-search="mesh-shape=2x4 cluster=dgx-a100-80g param-memory=8e6" -split-input-file | FileCheck %s --check-prefix=MESH2
// RUN: cleave-opt %s --cleave-intra-op-search="mesh-shape=2x2x2 cluster=dgx-a100-80g param-memory=8e6" -split-input-file | FileCheck %s --check-prefix=MESH3
// RUN: cleave-opt %s --cleave-intra-op-search="mesh=1" -split-input-file | FileCheck %s --check-prefix=ONE
// RUN: cleave-opt %s --cleave-intra-op-search="mesh=8 param-memory=8e6 report=true" -split-input-file -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT
// RUN: cleave-opt %s --cleave-intra-op-search="mesh=8 param-memory=8e6 report=true lp-rounding=false" -split-input-file -o /dev/null 2>&1 | FileCheck %s --check-prefix=BRANCH

// The rounded relaxation is within the gap of its bound: no branch and
// bound; CBC alone proves the same.
// REPORT: remark: intra-op search: 9 ops, {{[0-9]+}} variables ({{[0-9]+}} binary), {{[0-9]+}} constraints; rounded, objective {{.*}} ms, gap {{.*}}%, solved in {{.*}} s
// BRANCH: remark: intra-op search: 9 ops, {{[0-9]+}} variables ({{[0-9]+}} binary), {{[0-9]+}} constraints; solved, objective {{.*}} ms, gap {{.*}}%, solved in {{.*}} s
// REPORT: remark: intra-op search: 7 ops
// REPORT: remark: intra-op search: 12 ops

// A transformer MLP whose 32 MB of weights must fit 8 MB per device: the
// search finds Megatron's split, fc by columns and proj by rows, whose
// partial sums are reduce-scattered (cheaper than an all-reduce, since the
// residual add and the returned value may stay split).

// CHECK-LABEL: func.func @mlp
// CHECK: %[[X:.*]] = graph.input "x" {graph.sharding = #graph.op_sharding<"replicated"{{.*}}results = [<[{}, {}, {}]>]>}
// CHECK: %[[W1:.*]] = graph.param "fc.weight" {graph.sharding = #graph.op_sharding<"split1"{{.*}}results = [<[{}, {0}]>]>}
// CHECK: %[[W2:.*]] = graph.param "proj.weight" {graph.sharding = #graph.op_sharding<"split0"{{.*}}results = [<[{0}, {}]>]>}
// CHECK: %[[H:.*]] = graph.matmul %[[X]], %[[W1]] {graph.sharding = #graph.op_sharding<"matmul.n", operands = [<[{}, {}, {}]>, <[{}, {0}]>], results = [<[{}, {}, {0}]>]>}
// CHECK: %[[HB:.*]] = graph.add %[[H]], %{{.*}} {graph.sharding = #graph.op_sharding<"split2", operands = [<[{}, {}, {0}]>, <[{0}]>], results = [<[{}, {}, {0}]>]>}
// CHECK: %[[G:.*]] = graph.gelu %[[HB]] tanh {{{.*}}results = [<[{}, {}, {0}]>]
// Reduce-scattering onto the sequence or the hidden dimension costs the
// same; the residual add then runs on whichever was chosen.
// CHECK: %[[Y:.*]] = graph.matmul %[[G]], %[[W2]] {graph.sharding = #graph.op_sharding<"matmul.k+rs{{[12]}}", operands = [<[{}, {}, {0}]>, <[{0}, {}]>], results = [[[YS:<\[\{\}, [^>]*>]]], partial = reduce_scatter>}
// CHECK: graph.add %[[Y]], %[[X]] {graph.sharding = #graph.op_sharding<"{{[^"]*}}", operands = [[[YS]], [[YS]]], results = [[[YS]]]>}

// On a 2 x 4 mesh every strategy names one rule per axis and layouts list,
// per dimension, the axes that split it (outermost first). Inside one node
// the MLP splits over all 8 devices: fc by columns over both axes, proj by
// rows, its partial sums all-reduced over axis 0 and reduce-scattered over
// axis 1.
// MESH2-LABEL: func.func @mlp
// MESH2: graph.matmul {{.*}}graph.sharding = #graph.op_sharding<"matmul.n|matmul.n"{{.*}}results = [<[{}, {}, {0, 1}]>]>
// MESH2: graph.matmul {{.*}}graph.sharding = #graph.op_sharding<"matmul.k+ar|matmul.k+rs{{[0-2]}}", operands = [<[{}, {}, {0, 1}]>, <[{0, 1}, {}]>]

// On three axes (2 x 2 x 2, the most a mesh has) the same split over all
// 8 devices: fc by columns over every axis, proj by rows, each axis's
// partial sums all-reduced or reduce-scattered.
// MESH3-LABEL: func.func @mlp
// MESH3: graph.matmul {{.*}}graph.sharding = #graph.op_sharding<"matmul.n|matmul.n|matmul.n"{{.*}}results = [<[{}, {}, {0, 1, 2}]>]>
// MESH3: graph.matmul {{.*}}graph.sharding = #graph.op_sharding<"matmul.k+{{ar|rs[0-2]}}|matmul.k+{{ar|rs[0-2]}}|matmul.k+{{ar|rs[0-2]}}", operands = [<[{}, {}, {0, 1, 2}]>, <[{0, 1, 2}, {}]>]

// ONE-LABEL: func.func @mlp
// ONE-NOT: #graph.op_sharding<"{{[^r]}}
// ONE-NOT: partial =
func.func @mlp() -> tensor<4x512x1024xf32> {
  %x = graph.input "x" : tensor<4x512x1024xf32>
  %w1 = graph.param "fc.weight" : tensor<1024x4096xf32>
  %b1 = graph.param "fc.bias" : tensor<4096xf32>
  %w2 = graph.param "proj.weight" : tensor<4096x1024xf32>
  %h = graph.matmul %x, %w1 : tensor<4x512x1024xf32>, tensor<1024x4096xf32>
  %hb = graph.add %h, %b1 : tensor<4x512x4096xf32>, tensor<4096xf32>
  %g = graph.gelu %hb tanh : tensor<4x512x4096xf32>
  %y = graph.matmul %g, %w2 : tensor<4x512x4096xf32>, tensor<4096x1024xf32>
  %r = graph.add %y, %x : tensor<4x512x1024xf32>, tensor<4x512x1024xf32>
  return %r : tensor<4x512x1024xf32>
}

// -----

// Attention heads: the q projection is split by columns, and the split
// follows the reshape (hidden -> heads x head_dim, leading factor) and the
// transpose onto the heads dimension.

// CHECK-LABEL: func.func @heads
// CHECK: graph.matmul {{.*}}graph.sharding = #graph.op_sharding<"matmul.n"{{.*}}results = [<[{}, {}, {0}]>]
// CHECK: graph.reshape {{.*}}operands = [<[{}, {}, {0}]>], results = [<[{}, {}, {0}, {}]>]
// CHECK: graph.transpose {{.*}}operands = [<[{}, {}, {0}, {}]>], results = [<[{}, {0}, {}, {}]>]
// CHECK: graph.softmax {{.*}}results = [<[{}, {0}, {}, {}]>]
func.func @heads() -> tensor<4x16x512x512xf32> {
  %x = graph.input "x" : tensor<4x512x1024xf32>
  %wq = graph.param "q.weight" : tensor<1024x1024xf32>
  %q = graph.matmul %x, %wq : tensor<4x512x1024xf32>, tensor<1024x1024xf32>
  %r = graph.reshape %q : tensor<4x512x1024xf32> -> tensor<4x512x16x64xf32>
  %t = graph.transpose %r [0, 2, 1, 3] : tensor<4x512x16x64xf32>
  %s = graph.matmul %t, %t transpose_rhs : tensor<4x16x512x64xf32>, tensor<4x16x512x64xf32>
  %p = graph.softmax %s axis = 3 causal : tensor<4x16x512x512xf32>
  return %p : tensor<4x16x512x512xf32>
}

// -----

// A top-2 MoE layer whose 32 MB of expert weights must fit 8 MB per
// device: expert parallelism. The weights are split on the expert
// dimension and each device runs its expert's matmuls; the tokens, an
// input and so free to replicate, are dispatched locally into the slots
// of the device's experts.
//
// Priced for the forward pass alone (FWD), an all-to-all brings the expert
// outputs back to the devices owning the tokens, which stay split to the
// end. Priced for training, that all-to-all has a twin in the backward
// pass, while gathering the expert outputs has none (the gradient of a
// gathered value is sliced back): this lone layer, whose result nothing
// else reads, gathers them and combines on every device.

// CHECK-LABEL: func.func @moe
// CHECK: graph.param "experts.fc.weight" {graph.sharding = #graph.op_sharding<"split0"{{.*}}results = [<[{0}, {}, {}]>]>}
// CHECK: graph.param "experts.proj.weight" {graph.sharding = #graph.op_sharding<"split0"{{.*}}results = [<[{0}, {}, {}]>]>}
// CHECK: graph.moe_dispatch {{.*}}graph.sharding = #graph.op_sharding<"dispatch.experts"{{.*}}results = [<[{0}, {}, {}]>]
// CHECK: graph.matmul {{.*}}graph.sharding = #graph.op_sharding<"matmul.b0"
// CHECK: graph.matmul {{.*}}graph.sharding = #graph.op_sharding<"matmul.b0"
// CHECK: graph.moe_combine {{.*}}graph.sharding = #graph.op_sharding<"replicated", operands = [<[{}, {}, {}]>, <[{}, {}]>, <[{}, {}]>], results = [<[{}, {}]>]

// FWD-LABEL: func.func @moe
// FWD: graph.moe_dispatch {{.*}}graph.sharding = #graph.op_sharding<"dispatch.experts"
// FWD: graph.moe_combine {{.*}}graph.sharding = #graph.op_sharding<"combine.a2a", operands = [<[{0}, {}, {}]>, <[{0}, {}]>, <[{0}, {}]>], results = [<[{0}, {}]>]
func.func @moe() -> tensor<1024x512xf32> {
  %x = graph.input "x" : tensor<1024x512xf32>
  %wr = graph.param "router.weight" : tensor<512x8xf32>
  %w1 = graph.param "experts.fc.weight" : tensor<8x512x1024xf32>
  %w2 = graph.param "experts.proj.weight" : tensor<8x1024x512xf32>
  %l = graph.matmul %x, %wr : tensor<1024x512xf32>, tensor<512x8xf32>
  %w, %i = graph.moe_gate %l top_k = 2 renormalize : tensor<1024x8xf32>
  %d = graph.moe_dispatch %x, %i experts = 8 capacity = 320 : tensor<1024x512xf32>, tensor<1024x2xi64>
  %h = graph.matmul %d, %w1 : tensor<8x320x512xf32>, tensor<8x512x1024xf32>
  %g = graph.gelu %h tanh : tensor<8x320x1024xf32>
  %y = graph.matmul %g, %w2 : tensor<8x320x1024xf32>, tensor<8x1024x512xf32>
  %c = graph.moe_combine %y, %w, %i : tensor<8x320x512xf32>, tensor<1024x2xf32>, tensor<1024x2xi64>
  %r = graph.add %c, %x : tensor<1024x512xf32>, tensor<1024x512xf32>
  return %r : tensor<1024x512xf32>
}
