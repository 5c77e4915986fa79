// RUN: cleave-opt %s --cleave-lower-to-stages="tp=2 pp=2 microbatches=2 append-loss=true cluster=cpu-local,devices=4" | FileCheck %s
// RUN: cleave-opt %s --cleave-lower-to-stages="dp=2 zero=3 pp=2 microbatches=2 append-loss=true optimizer=sgd recompute=full/none cluster=cpu-local,devices=4" | FileCheck %s --check-prefix=ZERO3
// RUN: cleave-opt %s --cleave-lower-to-stages="storage=bf16 append-loss=true optimizer=none" | FileCheck %s --check-prefix=INFER
// RUN: not cleave-opt %s --cleave-lower-to-stages="storage=fp64 append-loss=true" 2>&1 | FileCheck %s --check-prefix=STORAGE
// RUN: not cleave-opt %s --cleave-lower-to-stages="recompute=most append-loss=true" 2>&1 | FileCheck %s --check-prefix=RECOMPUTE
// RUN: not cleave-opt %s --cleave-lower-to-stages="optimizer=lion append-loss=true" 2>&1 | FileCheck %s --check-prefix=OPTIMIZER

// The IR half of `cleave compile -o` on a two-layer MLP, its knobs as the
// pipeline's options: the loss appended, tensor parallelism as Megatron
// splits an MLP (fc by columns, proj by rows, its partial sums
// all-reduced), two pipeline stages of one layer each, and each stage's
// training step (the activation sent forward, its gradient received back,
// AdamW updates of the local blocks).

// CHECK-LABEL: func.func @stage0()
// CHECK-SAME: cleave.first_layer = 0 : i64, cleave.num_layers = 1 : i64
// CHECK: graph.param "layers.0.fc.weight" {cleave.global_shape = array<i64: 16, 64>, cleave.shard_axes = ["", "tp"]} : tensor<16x32xf32>
// CHECK: graph.param "layers.0.proj.weight" {cleave.global_shape = array<i64: 64, 16>, cleave.shard_axes = ["tp", ""]} : tensor<32x16xf32>
// CHECK: graph.all_reduce {{.*}} axes ["tp"] size 2 reduction "sum"
// CHECK: graph.send {{.*}} axis "pp" offset 1
// CHECK-LABEL: func.func @stage0_step()
// CHECK: graph.recv axis "pp" offset 1 tag 0 {cleave.phase = "backward"}
// CHECK: graph.adamw_update {{.*}} : tensor<16x32xf32>
// CHECK: graph.adamw_update {{.*}} : tensor<32x16xf32>
// CHECK-LABEL: func.func @stage1()
// CHECK: graph.recv axis "pp" offset -1
// CHECK: graph.cross_entropy
// CHECK-LABEL: func.func @stage1_step()
// CHECK-SAME: (tensor<f32>,

// ZeRO-3 over two replicas: each stage stores its block of every
// parameter and gathers it where it is read (the gradient of the gather
// is the reduce-scatter of the replicas' gradients); the first stage
// recomputes its layer in the backward pass (gathering again), the
// second does not.
// ZERO3-LABEL: func.func @stage0_step()
// ZERO3: graph.all_gather %{{.*}} axes ["dp"] size 2 dim 0 varying_grad : tensor<8x64xf32> -> tensor<16x64xf32>
// ZERO3: graph.all_gather {{.*}}cleave.recomputed
// ZERO3: graph.reduce_scatter {{.*}} axes ["dp"] size 2 dim 0 {cleave.phase = "backward"} : tensor<64x16xf32> -> tensor<32x16xf32>
// ZERO3: graph.sgd_update {{.*}} : tensor<8x64xf32>
// ZERO3-LABEL: func.func @stage1_step()
// ZERO3-NOT: cleave.recomputed
// ZERO3: return

// An inference plan in bf16 storage: the fp32 parameters cast once, the
// matmuls in bf16, no training step.
// INFER-LABEL: func.func @stage0()
// INFER: graph.cast {{.*}} : tensor<16x64xf32> to tensor<16x64xbf16>
// INFER: graph.matmul {{.*}} : tensor<4x16xbf16>, tensor<16x64xbf16>
// INFER-NOT: @stage0_step

// STORAGE: error: cleave-mixed-precision: storage 'fp64' (expected bf16 or f16)
// RECOMPUTE: error: recompute 'most': expected none, selective or full
// OPTIMIZER: error: optimizer 'lion' builds no training step (expected adamw or sgd)
func.func @forward() -> tensor<4x16xf32> {
  %x = graph.input "x" : tensor<4x16xf32>
  %a0 = graph.param "layers.0.fc.weight" : tensor<16x64xf32>
  %b0 = graph.param "layers.0.proj.weight" : tensor<64x16xf32>
  %a1 = graph.param "layers.1.fc.weight" : tensor<16x64xf32>
  %b1 = graph.param "layers.1.proj.weight" : tensor<64x16xf32>
  %h0 = graph.matmul %x, %a0 : tensor<4x16xf32>, tensor<16x64xf32>
  %g0 = graph.relu %h0 : tensor<4x64xf32>
  %y0 = graph.matmul %g0, %b0 : tensor<4x64xf32>, tensor<64x16xf32>
  %h1 = graph.matmul %y0, %a1 : tensor<4x16xf32>, tensor<16x64xf32>
  %g1 = graph.relu %h1 : tensor<4x64xf32>
  %y1 = graph.matmul %g1, %b1 : tensor<4x64xf32>, tensor<64x16xf32>
  return %y1 : tensor<4x16xf32>
}
