// RUN: cleave-opt %s -split-input-file --cleave-kv-cache="max-length=64 block-size=16" | FileCheck %s
// cleave-kv-cache on a decoder as PyTorch's exporters write it (imported
// at one token a sequence): its attention's additive mask is computed
// from its `attention_mask` input and a causal triangle, its rotary
// angles from its `position_ids` input, its token ids are `input_ids`.
// The padding input is all ones in a generation step, so the mask
// evaluates to the causal one and goes with every op only it read; the
// positions input is the step's, and the token ids take the name the
// runtime feeds.

// CHECK-LABEL: func.func @forward() -> tensor<2x1x8xf32>
// CHECK-NOT: "attention_mask"
// CHECK-NOT: graph.where
// CHECK-DAG: %[[TOK:.*]] = graph.input "tokens" : tensor<2x1xi64>
// CHECK-DAG: %[[POS:.*]] = graph.input "positions" : tensor<2x1xi64>
// CHECK: graph.gather %{{.*}}[%[[TOK]]]
// CHECK: graph.cast %[[POS]]
// CHECK: graph.paged_attention
// CHECK-NOT: graph.attention
func.func @forward() -> tensor<2x1x8xf32> {
  %ids = graph.input "input_ids" : tensor<2x1xi64>
  %pad = graph.input "attention_mask" : tensor<2x1xi64>
  %pos = graph.input "position_ids" : tensor<2x1xi64>
  %emb = graph.param "model.embed_tokens.weight" : tensor<16x8xf32>
  %wq = graph.param "model.layers.0.self_attn.q_proj.weight" : tensor<8x8xf32>
  %x = graph.gather %emb[%ids] axis = 0 : tensor<16x8xf32>, tensor<2x1xi64>
  %q = graph.matmul %x, %wq : tensor<2x1x8xf32>, tensor<8x8xf32>
  // The rotary angle of each token: its position times a frequency.
  %pf = graph.cast %pos : tensor<2x1xi64> to tensor<2x1xf32>
  %p3 = graph.reshape %pf : tensor<2x1xf32> -> tensor<2x1x1xf32>
  %c = graph.cos %p3 : tensor<2x1x1xf32>
  %qr = graph.mul %q, %c : tensor<2x1x8xf32>, tensor<2x1x1xf32>
  %q4 = graph.reshape %qr : tensor<2x1x8xf32> -> tensor<2x1x2x4xf32>
  %qt = graph.transpose %q4 [0, 2, 1, 3] : tensor<2x1x2x4xf32>
  // The exporter's mask: 0 where the padding row and the triangle allow a
  // key, the float minimum elsewhere.
  %b = graph.cast %pad : tensor<2x1xi64> to tensor<2x1xi1>
  %b4 = graph.reshape %b : tensor<2x1xi1> -> tensor<2x1x1x1xi1>
  %tri = graph.constant dense<true> : tensor<1x1x1x1xi1>
  %zero = graph.constant dense<0.0> : tensor<f32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %min = graph.constant dense<-3.40282347E+38> : tensor<f32>
  %t = graph.where %tri, %one, %zero : tensor<1x1x1x1xi1>, tensor<f32>, tensor<f32>
  %pp = graph.where %b4, %one, %zero : tensor<2x1x1x1xi1>, tensor<f32>, tensor<f32>
  %both = graph.mul %t, %pp : tensor<1x1x1x1xf32>, tensor<2x1x1x1xf32>
  %half = graph.constant dense<0.5> : tensor<f32>
  %seen = graph.compare "gt", %both, %half : tensor<2x1x1x1xf32>, tensor<f32>
  %mask = graph.where %seen, %zero, %min : tensor<2x1x1x1xi1>, tensor<f32>, tensor<f32>
  %o, %lse = graph.attention %qt, %qt, %qt mask %mask : tensor<2x1x1x1xf32> scale = 0.5 : tensor<2x2x1x4xf32>, tensor<2x2x1x4xf32>, tensor<2x2x1x4xf32>
  %ot = graph.transpose %o [0, 2, 1, 3] : tensor<2x2x1x4xf32>
  %y = graph.reshape %ot : tensor<2x1x2x4xf32> -> tensor<2x1x8xf32>
  return %y : tensor<2x1x8xf32>
}

// -----

// Two tokens a sequence: a constant mask that is the causal triangle (0 on
// and below the diagonal, the float minimum above) is causal attention.
// CHECK-LABEL: func.func @forward() -> tensor<1x2x2x4xf32>
// CHECK-NOT: graph.constant
// CHECK: graph.paged_attention
func.func @forward() -> tensor<1x2x2x4xf32> {
  %ids = graph.input "tokens" : tensor<1x2xi64>
  %emb = graph.param "model.embed_tokens.weight" : tensor<16x8xf32>
  %x = graph.gather %emb[%ids] axis = 0 : tensor<16x8xf32>, tensor<1x2xi64>
  %x4 = graph.reshape %x : tensor<1x2x8xf32> -> tensor<1x2x2x4xf32>
  %qs = graph.transpose %x4 [0, 2, 1, 3] : tensor<1x2x2x4xf32>
  %mask = graph.constant dense<[[[[0.0, -3.40282347E+38], [0.0, 0.0]]]]> : tensor<1x1x2x2xf32>
  %o, %lse = graph.attention %qs, %qs, %qs mask %mask : tensor<1x1x2x2xf32> scale = 0.5 : tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>
  return %o : tensor<1x2x2x4xf32>
}

// -----

// GPT-2 exported without position_ids: the exporter folded the positions
// it computes (0..T-1) into a constant, and the position table is
// gathered at it; the step gathers it at each token's position instead.
// CHECK-LABEL: func.func @forward() -> tensor<2x1x2x4xf32>
// CHECK-DAG: %[[POS:.*]] = graph.input "positions" : tensor<2x1xi64>
// CHECK-DAG: %[[WPE:.*]] = graph.param "transformer.wpe.weight" : tensor<64x8xf32>
// CHECK: %[[P:.*]] = graph.gather %[[WPE]][%[[POS]]] axis = 0 : tensor<64x8xf32>, tensor<2x1xi64>
// CHECK: graph.add %{{.*}}, %[[P]] : tensor<2x1x8xf32>, tensor<2x1x8xf32>
func.func @forward() -> tensor<2x1x2x4xf32> {
  %ids = graph.input "input_ids" : tensor<2x1xi64>
  %wte = graph.param "transformer.wte.weight" : tensor<16x8xf32>
  %wpe = graph.param "transformer.wpe.weight" : tensor<64x8xf32>
  %tok = graph.gather %wte[%ids] axis = 0 : tensor<16x8xf32>, tensor<2x1xi64>
  %zero = graph.constant dense<0> : tensor<1x1xi64>
  %pos = graph.gather %wpe[%zero] axis = 0 : tensor<64x8xf32>, tensor<1x1xi64>
  %x = graph.add %tok, %pos : tensor<2x1x8xf32>, tensor<1x1x8xf32>
  %x4 = graph.reshape %x : tensor<2x1x8xf32> -> tensor<2x1x2x4xf32>
  %q = graph.transpose %x4 [0, 2, 1, 3] : tensor<2x1x2x4xf32>
  %o, %lse = graph.attention %q, %q, %q scale = 0.5 causal : tensor<2x2x1x4xf32>, tensor<2x2x1x4xf32>, tensor<2x2x1x4xf32>
  %ot = graph.transpose %o [0, 2, 1, 3] : tensor<2x2x1x4xf32>
  return %ot : tensor<2x1x2x4xf32>
}
