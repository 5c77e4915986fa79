// RUN: cleave-opt %s --cleave-intra-op-search="mesh=8 param-memory=3e6 report=true" -o - 2>&1 | FileCheck %s
// RUN: cleave-opt %s --cleave-intra-op-search="mesh=8 param-memory=3e6 report=true tie-repeated-layers=false merge-followers=false" 2>&1 | FileCheck %s --check-prefix=UNTIED

// Three MLP layers of one structure (parameters named by layer, as the zoo
// and the ONNX importer name them): the ops at one place of every layer
// take one strategy, solved once. The first layer reads a graph input,
// which has no gradient, so its fc matmul is priced without dx: that layer
// keeps choices of its own, and layer 2 stands for layer 1.

// CHECK: remark: intra-op search: 16 ops (11 after reduction),
// UNTIED: remark: intra-op search: 16 ops, {{[0-9]+}} variables
// UNTIED-NOT: after reduction

// CHECK-LABEL: func.func @layers
// CHECK: graph.matmul
// CHECK: graph.matmul
// CHECK: graph.matmul {{.*}}graph.sharding = #graph.op_sharding<"[[FC:[^"]+]]"
// CHECK: graph.matmul {{.*}}graph.sharding = #graph.op_sharding<"[[PROJ:[^"]+]]"
// CHECK: graph.matmul {{.*}}graph.sharding = #graph.op_sharding<"[[FC]]"
// CHECK: graph.matmul {{.*}}graph.sharding = #graph.op_sharding<"[[PROJ]]"
func.func @layers() -> tensor<8x128x256xf32> {
  %x = graph.input "x" : tensor<8x128x256xf32>
  %w0 = graph.param "h.0.fc.weight" : tensor<256x1024xf32>
  %p0 = graph.param "h.0.proj.weight" : tensor<1024x256xf32>
  %a0 = graph.matmul %x, %w0 : tensor<8x128x256xf32>, tensor<256x1024xf32>
  %g0 = graph.gelu %a0 tanh : tensor<8x128x1024xf32>
  %y0 = graph.matmul %g0, %p0 : tensor<8x128x1024xf32>, tensor<1024x256xf32>
  %w1 = graph.param "h.1.fc.weight" : tensor<256x1024xf32>
  %p1 = graph.param "h.1.proj.weight" : tensor<1024x256xf32>
  %a1 = graph.matmul %y0, %w1 : tensor<8x128x256xf32>, tensor<256x1024xf32>
  %g1 = graph.gelu %a1 tanh : tensor<8x128x1024xf32>
  %y1 = graph.matmul %g1, %p1 : tensor<8x128x1024xf32>, tensor<1024x256xf32>
  %w2 = graph.param "h.2.fc.weight" : tensor<256x1024xf32>
  %p2 = graph.param "h.2.proj.weight" : tensor<1024x256xf32>
  %a2 = graph.matmul %y1, %w2 : tensor<8x128x256xf32>, tensor<256x1024xf32>
  %g2 = graph.gelu %a2 tanh : tensor<8x128x1024xf32>
  %y2 = graph.matmul %g2, %p2 : tensor<8x128x1024xf32>, tensor<1024x256xf32>
  return %y2 : tensor<8x128x256xf32>
}
