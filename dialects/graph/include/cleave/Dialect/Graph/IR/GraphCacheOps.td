//===- GraphCacheOps.td - Key/value cache ops of LLM generation -*- tablegen -*-===//
//
// Autoregressive generation keeps every layer's keys and values of the
// tokens seen so far and attends to them one new token at a time. The cache
// is paged as in vLLM (Kwon et al. 2023, PagedAttention): a pool of
// fixed-size blocks `[blocks, block_size, kv_heads, head_dim]` per layer and
// per key/value, and per sequence a block table naming the blocks that hold
// its positions, so sequences of different lengths share one pool without
// reserving the longest length each. The cache is state that outlives a run
// of the program, like a parameter: graph.cache_write returns it with rows
// written and the lowering writes them in place.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_DIALECT_GRAPH_IR_GRAPHCACHEOPS_TD
#define CLEAVE_DIALECT_GRAPH_IR_GRAPHCACHEOPS_TD

def Graph_CacheWriteOp : Graph_Op<"cache_write", [Pure,
    AllTypesMatch<["cache", "result"]>, Graph_CostOpInterface]> {
  let summary = "Writes key or value rows into a paged cache";
  let description = [{
    `cache` is `[blocks, block_size, kv_heads, head_dim]`, `rows`
    `[N, kv_heads, head_dim]` of the same element type, `slots` `[N]`
    integers: row n goes to block `slots[n] / block_size`, position
    `slots[n] % block_size`. A negative slot skips its row (a padded batch
    entry). The result is the cache with the rows written; a program writes
    them in place. No FLOPs; it moves the rows.

    ```mlir
    %k2 = graph.cache_write %k into %kcache at %slots
        : tensor<4x2x64xf32>, tensor<64x16x2x64xf32>, tensor<4xi64>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$rows, Graph_FloatTensor:$cache,
                       Graph_IndexTensor:$slots);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $rows `into` $cache `at` $slots attr-dict `:` type($rows) `,`
    type($cache) `,` type($slots)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    double getFlops() { return 0; }
    int64_t getBytesRead();
    int64_t getBytesWritten();
  }];
}

def Graph_PagedAttentionOp : Graph_Op<"paged_attention", [Pure,
    Graph_CostOpInterface]> {
  let summary = "Causal attention of new tokens over a paged key/value cache";
  let description = [{
    `query` `[B, H, T, D]`: T new tokens of each of B sequences.
    `key_cache`, `value_cache` `[blocks, block_size, kv_heads, D]`, holding
    every token of each sequence written so far (the T new ones
    included, by graph.cache_write). `block_table` `[B, max_blocks]`
    integers: position p of sequence b is at block `block_table[b, p /
    block_size]`, row `p % block_size`. `lengths` `[B]` integers: the
    keys of sequence b, so its query t sits at position `lengths[b] - T + t`
    and sees the keys at positions up to its own (causal). H is a multiple
    of kv_heads: query head h reads key head `h / (H / kv_heads)`
    (grouped-query attention). A sequence of length 0 (an empty batch slot)
    gets output 0, and so does a query at a negative position (a prompt
    shorter than T, padded on the left).

    out = softmax(scale * q k^T) v per query; FLOPs 4 * D per query and key
    it can see at most (the block table's capacity), and 5 per score for the
    softmax.

    ```mlir
    %o = graph.paged_attention %q, %kc, %vc, %table, %len scale = 1.250000e-01
        : tensor<4x8x1x64xf32>, tensor<64x16x2x64xf32>, tensor<64x16x2x64xf32>,
          tensor<4x8xi64>, tensor<4xi64>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$query, Graph_FloatTensor:$key_cache,
                       Graph_FloatTensor:$value_cache,
                       Graph_IndexTensor:$block_table,
                       Graph_IndexTensor:$lengths, F64Attr:$scale);
  let results = (outs Graph_FloatTensor:$out);
  let assemblyFormat = [{
    $query `,` $key_cache `,` $value_cache `,` $block_table `,` $lengths
    `scale` `=` $scale attr-dict `:` type($query) `,` type($key_cache) `,`
    type($value_cache) `,` type($block_table) `,` type($lengths) `->`
    type($out)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    double getFlops();
    int64_t getBytesRead();
    /// The products run on tensor cores (they are GEMM tiles).
    bool usesTensorCores() { return true; }
  }];
}

#endif // CLEAVE_DIALECT_GRAPH_IR_GRAPHCACHEOPS_TD
