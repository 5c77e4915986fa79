// RUN: cleave-opt %s -split-input-file -verify-diagnostics
// Every verifier error of graph.cache_write and graph.paged_attention.

func.func @cache_rank(%r: tensor<4x2x8xf32>, %c: tensor<64x2x8xf32>, %s: tensor<4xi64>) {
  // expected-error @+1 {{cache must be [blocks, block_size, kv_heads, head_dim], got 'tensor<64x2x8xf32>'}}
  %0 = graph.cache_write %r into %c at %s : tensor<4x2x8xf32>, tensor<64x2x8xf32>, tensor<4xi64>
  return
}

// -----

func.func @rows_type(%r: tensor<4x2x8xf16>, %c: tensor<64x16x2x8xf32>, %s: tensor<4xi64>) {
  // expected-error @+1 {{rows of 'f16' into a cache of 'f32'}}
  %0 = graph.cache_write %r into %c at %s : tensor<4x2x8xf16>, tensor<64x16x2x8xf32>, tensor<4xi64>
  return
}

// -----

func.func @rows_shape(%r: tensor<4x4x8xf32>, %c: tensor<64x16x2x8xf32>, %s: tensor<4xi64>) {
  // expected-error @+1 {{rows must be [N, kv_heads, head_dim] = [N, 2, 8] for cache 'tensor<64x16x2x8xf32>', got 'tensor<4x4x8xf32>'}}
  %0 = graph.cache_write %r into %c at %s : tensor<4x4x8xf32>, tensor<64x16x2x8xf32>, tensor<4xi64>
  return
}

// -----

func.func @slots(%r: tensor<4x2x8xf32>, %c: tensor<64x16x2x8xf32>, %s: tensor<3xi64>) {
  // expected-error @+1 {{slots must be [4], one per row, got 'tensor<3xi64>'}}
  %0 = graph.cache_write %r into %c at %s : tensor<4x2x8xf32>, tensor<64x16x2x8xf32>, tensor<3xi64>
  return
}

// -----

func.func @query_rank(%q: tensor<4x8x8xf32>, %c: tensor<64x16x2x8xf32>, %t: tensor<4x8xi64>, %l: tensor<4xi64>) {
  // expected-error @+1 {{query must be [batch, heads, tokens, head_dim], got 'tensor<4x8x8xf32>'}}
  %0 = graph.paged_attention %q, %c, %c, %t, %l scale = 1.0 : tensor<4x8x8xf32>, tensor<64x16x2x8xf32>, tensor<64x16x2x8xf32>, tensor<4x8xi64>, tensor<4xi64> -> tensor<4x8x8xf32>
  return
}

// -----

func.func @caches_differ(%q: tensor<4x8x1x8xf32>, %k: tensor<64x16x2x8xf32>, %v: tensor<32x16x2x8xf32>, %t: tensor<4x8xi64>, %l: tensor<4xi64>) {
  // expected-error @+1 {{key_cache 'tensor<64x16x2x8xf32>' and value_cache 'tensor<32x16x2x8xf32>' differ}}
  %0 = graph.paged_attention %q, %k, %v, %t, %l scale = 1.0 : tensor<4x8x1x8xf32>, tensor<64x16x2x8xf32>, tensor<32x16x2x8xf32>, tensor<4x8xi64>, tensor<4xi64> -> tensor<4x8x1x8xf32>
  return
}

// -----

func.func @element_type(%q: tensor<4x8x1x8xf16>, %c: tensor<64x16x2x8xf32>, %t: tensor<4x8xi64>, %l: tensor<4xi64>) {
  // expected-error @+1 {{query of 'f16' against a cache of 'f32'}}
  %0 = graph.paged_attention %q, %c, %c, %t, %l scale = 1.0 : tensor<4x8x1x8xf16>, tensor<64x16x2x8xf32>, tensor<64x16x2x8xf32>, tensor<4x8xi64>, tensor<4xi64> -> tensor<4x8x1x8xf16>
  return
}

// -----

func.func @head_dim(%q: tensor<4x8x1x4xf32>, %c: tensor<64x16x2x8xf32>, %t: tensor<4x8xi64>, %l: tensor<4xi64>) {
  // expected-error @+1 {{query head_dim 4 but the cache holds 8}}
  %0 = graph.paged_attention %q, %c, %c, %t, %l scale = 1.0 : tensor<4x8x1x4xf32>, tensor<64x16x2x8xf32>, tensor<64x16x2x8xf32>, tensor<4x8xi64>, tensor<4xi64> -> tensor<4x8x1x4xf32>
  return
}

// -----

func.func @groups(%q: tensor<4x3x1x8xf32>, %c: tensor<64x16x2x8xf32>, %t: tensor<4x8xi64>, %l: tensor<4xi64>) {
  // expected-error @+1 {{query heads (3) must be a multiple of the cache's kv_heads (2)}}
  %0 = graph.paged_attention %q, %c, %c, %t, %l scale = 1.0 : tensor<4x3x1x8xf32>, tensor<64x16x2x8xf32>, tensor<64x16x2x8xf32>, tensor<4x8xi64>, tensor<4xi64> -> tensor<4x3x1x8xf32>
  return
}

// -----

func.func @table(%q: tensor<4x8x1x8xf32>, %c: tensor<64x16x2x8xf32>, %t: tensor<3x8xi64>, %l: tensor<4xi64>) {
  // expected-error @+1 {{block_table must be [4, max_blocks], got 'tensor<3x8xi64>'}}
  %0 = graph.paged_attention %q, %c, %c, %t, %l scale = 1.0 : tensor<4x8x1x8xf32>, tensor<64x16x2x8xf32>, tensor<64x16x2x8xf32>, tensor<3x8xi64>, tensor<4xi64> -> tensor<4x8x1x8xf32>
  return
}

// -----

func.func @lengths(%q: tensor<4x8x1x8xf32>, %c: tensor<64x16x2x8xf32>, %t: tensor<4x8xi64>, %l: tensor<4x1xi64>) {
  // expected-error @+1 {{lengths must be [4], got 'tensor<4x1xi64>'}}
  %0 = graph.paged_attention %q, %c, %c, %t, %l scale = 1.0 : tensor<4x8x1x8xf32>, tensor<64x16x2x8xf32>, tensor<64x16x2x8xf32>, tensor<4x8xi64>, tensor<4x1xi64> -> tensor<4x8x1x8xf32>
  return
}

// -----

func.func @result(%q: tensor<4x8x1x8xf32>, %c: tensor<64x16x2x8xf32>, %t: tensor<4x8xi64>, %l: tensor<4xi64>) {
  // expected-error @+1 {{result must be the query's type 'tensor<4x8x1x8xf32>', got 'tensor<4x8x2x8xf32>'}}
  %0 = graph.paged_attention %q, %c, %c, %t, %l scale = 1.0 : tensor<4x8x1x8xf32>, tensor<64x16x2x8xf32>, tensor<64x16x2x8xf32>, tensor<4x8xi64>, tensor<4xi64> -> tensor<4x8x2x8xf32>
  return
}

// -----

func.func @scale(%q: tensor<4x8x1x8xf32>, %c: tensor<64x16x2x8xf32>, %t: tensor<4x8xi64>, %l: tensor<4xi64>) {
  // expected-error @+1 {{scale must be positive, got 0}}
  %0 = graph.paged_attention %q, %c, %c, %t, %l scale = 0.0 : tensor<4x8x1x8xf32>, tensor<64x16x2x8xf32>, tensor<64x16x2x8xf32>, tensor<4x8xi64>, tensor<4xi64> -> tensor<4x8x1x8xf32>
  return
}
