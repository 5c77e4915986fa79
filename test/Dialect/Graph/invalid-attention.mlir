// RUN: cleave-opt %s -split-input-file -verify-diagnostics
// Every verifier error of graph.attention and graph.attention_grad.

func.func @rank(%q: tensor<16x8xf32>) {
  // expected-error @+1 {{attention expects query, key and value of one rank >= 3}}
  %o, %l = graph.attention %q, %q, %q scale = 1.0 : tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>
  return
}

// -----

func.func @head_size(%q: tensor<2x16x8xf32>, %k: tensor<2x16x4xf32>) {
  // expected-error @+1 {{attention query and key head sizes differ: [2, 16, 8] vs [2, 16, 4]}}
  %o, %l = graph.attention %q, %k, %k scale = 1.0 : tensor<2x16x8xf32>, tensor<2x16x4xf32>, tensor<2x16x4xf32>
  return
}

// -----

func.func @value_shape(%q: tensor<2x16x8xf32>, %v: tensor<2x12x8xf32>) {
  // expected-error @+1 {{attention key and value shapes differ: [2, 16, 8] vs [2, 12, 8]}}
  %o, %l = graph.attention %q, %q, %v scale = 1.0 : tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x12x8xf32>
  return
}

// -----

// A broadcast key head must be a trailing run of the batch dimensions.
func.func @leading_broadcast(%q: tensor<2x3x16x8xf32>, %k: tensor<1x3x16x8xf32>) {
  // expected-error @+1 {{attention key batch dimensions must equal the query's or be a trailing run of 1s (grouped-query heads), got query [2, 3, 16, 8] and key [1, 3, 16, 8]}}
  %o, %l = graph.attention %q, %k, %k scale = 1.0 : tensor<2x3x16x8xf32>, tensor<1x3x16x8xf32>, tensor<1x3x16x8xf32>
  return
}

// -----

func.func @scale(%q: tensor<2x16x8xf32>) {
  // expected-error @+1 {{scale must be positive, got 0}}
  %o, %l = graph.attention %q, %q, %q scale = 0.0 : tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>
  return
}

// -----

func.func @blocks_need_causal(%q: tensor<2x16x8xf32>) {
  // expected-error @+1 {{query_blocks places queries for the causal mask; it needs `causal`}}
  %o, %l = graph.attention %q, %q, %q scale = 1.0 query_blocks ["cp"] : tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>
  return
}

// -----

func.func @blocks_named(%q: tensor<2x16x8xf32>) {
  // expected-error @+1 {{query_blocks must name at least one mesh axis}}
  %o, %l = graph.attention %q, %q, %q scale = 1.0 causal query_blocks [] : tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>
  return
}

// -----

func.func @grad_lse(%q: tensor<2x16x8xf32>, %l: tensor<2x8xf32>) {
  // expected-error @+1 {{attention_grad: lse must be 'tensor<2x16xf32>', got 'tensor<2x8xf32>'}}
  %dq, %dk, %dv = graph.attention_grad %q, %q, %q, %q, %l, %q scale = 1.0 : tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x8xf32>
  return
}

// -----

func.func @grad_scale(%q: tensor<2x16x8xf32>, %l: tensor<2x16xf32>) {
  // expected-error @+1 {{scale must be positive, got -1}}
  %dq, %dk, %dv = graph.attention_grad %q, %q, %q, %q, %l, %q scale = -1.0 : tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16xf32>
  return
}

// -----

func.func @zigzag_needs_blocks(%q: tensor<2x16x8xf32>) {
  // expected-error @+1 {{zigzag places the two chunks of a block of queries; it needs query_blocks}}
  %o, %l = graph.attention %q, %q, %q scale = 1.0 causal zigzag : tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>
  return
}

// -----

func.func @zigzag_even_queries(%q: tensor<2x15x8xf32>, %k: tensor<2x30x8xf32>) {
  // expected-error @+1 {{zigzag splits the queries into two chunks, but there are 15}}
  %o, %l = graph.attention %q, %k, %k scale = 1.0 causal query_blocks ["cp"] zigzag : tensor<2x15x8xf32>, tensor<2x30x8xf32>, tensor<2x30x8xf32>
  return
}

// -----

func.func @zigzag_softmax_needs_blocks(%s: tensor<2x16x16xf32>) {
  // expected-error @+1 {{zigzag places the two chunks of a block of queries; it needs query_blocks}}
  %p = graph.softmax %s axis = 2 causal zigzag : tensor<2x16x16xf32>
  return
}

// -----

func.func @zigzag_rope_needs_blocks(%x: tensor<1x8x2x4xf32>) {
  // expected-error @+1 {{zigzag places the two chunks of a sequence block; it needs position_blocks}}
  %y = graph.rope %x theta = 10000.0 zigzag : tensor<1x8x2x4xf32>
  return
}

// -----

func.func @zigzag_chunks_divide(%x: tensor<4x6xf32>) {
  // expected-error @+1 {{zigzag cuts dimension 1 into 4 chunks, but its size 6 does not divide by that}}
  %y = graph.shard_slice %x axes ["cp"] size 2 dim 1 zigzag : tensor<4x6xf32> -> tensor<4x3xf32>
  return
}

// -----

func.func @mask_columns(%q: tensor<2x3x6x4xf32>, %m: tensor<2x1x6x5xf32>) {
  // expected-error @+1 {{attention mask [2, 1, 6, 5] must have one column per key (query [2, 3, 6, 4], keys 6)}}
  %o, %l = graph.attention %q, %q, %q mask %m : tensor<2x1x6x5xf32> scale = 1.0 : tensor<2x3x6x4xf32>, tensor<2x3x6x4xf32>, tensor<2x3x6x4xf32>
  return
}

// -----

func.func @mask_rows(%q: tensor<2x3x6x4xf32>, %m: tensor<2x1x2x6xf32>) {
  // expected-error @+1 {{attention mask [2, 1, 2, 6] must have one row per query, or one row for all}}
  %o, %l = graph.attention %q, %q, %q mask %m : tensor<2x1x2x6xf32> scale = 1.0 : tensor<2x3x6x4xf32>, tensor<2x3x6x4xf32>, tensor<2x3x6x4xf32>
  return
}

// -----

// The kernels index a mask's planes as ((head / div) % mod): the batch
// dimensions it keeps must be one run.
func.func @mask_run(%q: tensor<2x3x4x6x8xf32>, %m: tensor<2x1x4x6x6xf32>) {
  // expected-error @+1 {{attention mask [2, 1, 4, 6, 6] must keep one contiguous run of the query's batch dimensions}}
  %o, %l = graph.attention %q, %q, %q mask %m : tensor<2x1x4x6x6xf32> scale = 1.0 : tensor<2x3x4x6x8xf32>, tensor<2x3x4x6x8xf32>, tensor<2x3x4x6x8xf32>
  return
}

// -----

func.func @mask_rank(%q: tensor<2x3x6x4xf32>, %m: tensor<6x6xf32>) {
  // expected-error @+1 {{attention mask [6, 6] must have the query's rank}}
  %o, %l = graph.attention %q, %q, %q mask %m : tensor<6x6xf32> scale = 1.0 : tensor<2x3x6x4xf32>, tensor<2x3x6x4xf32>, tensor<2x3x6x4xf32>
  return
}

// -----

func.func @mask_type(%q: tensor<2x3x6x4xf32>, %m: tensor<2x1x6x6xf16>) {
  // expected-error @+1 {{attention mask element type 'f16' differs from the query's 'f32'}}
  %o, %l = graph.attention %q, %q, %q mask %m : tensor<2x1x6x6xf16> scale = 1.0 : tensor<2x3x6x4xf32>, tensor<2x3x6x4xf32>, tensor<2x3x6x4xf32>
  return
}

// -----

func.func @grad_mask(%q: tensor<2x3x6x4xf32>, %lse: tensor<2x3x6xf32>, %m: tensor<2x3x6x5xf32>) {
  // expected-error @+1 {{attention mask [2, 3, 6, 5] must have one column per key}}
  %dq, %dk, %dv = graph.attention_grad %q, %q, %q, %q, %lse, %q mask %m : tensor<2x3x6x5xf32> scale = 1.0 : tensor<2x3x6x4xf32>, tensor<2x3x6x4xf32>, tensor<2x3x6x4xf32>, tensor<2x3x6x4xf32>, tensor<2x3x6xf32>
  return
}
