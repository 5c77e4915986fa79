//===- Blocks.cpp - Transformer building blocks shared by families --------===//

#include "Blocks.h"

#include <cmath>

using namespace mlir;

namespace cleave::zoo {

/// [B, S, n*d] -> [B, n, S, d]
static Value splitHeads(GraphBuilder &g, Value x, int64_t n, int64_t d) {
  ArrayRef<int64_t> s = GraphBuilder::shapeOf(x);
  return g.transpose(g.reshape(x, {s[0], s[1], n, d}), {0, 2, 1, 3});
}

Value selfAttention(GraphBuilder &g, Value x, const AttentionConfig &cfg) {
  ArrayRef<int64_t> shape = GraphBuilder::shapeOf(x);
  int64_t batch = shape[0], seq = shape[1];
  int64_t headDim = cfg.hidden / cfg.heads;
  int64_t kvHeads = cfg.kvHeads ? cfg.kvHeads : cfg.heads;
  int64_t group = cfg.heads / kvHeads;

  Value q, k, v;
  {
    auto s = g.scope("q_proj");
    q = g.linear(x, cfg.hidden, cfg.heads * headDim, cfg.bias);
  }
  {
    auto s = g.scope("k_proj");
    k = g.linear(x, cfg.hidden, kvHeads * headDim, cfg.bias);
  }
  {
    auto s = g.scope("v_proj");
    v = g.linear(x, cfg.hidden, kvHeads * headDim, cfg.bias);
  }
  if (cfg.ropeTheta) {
    // Rotary embedding works on [B, S, heads, head_dim].
    q = g.reshape(g.rope(g.reshape(q, {batch, seq, cfg.heads, headDim}),
                         *cfg.ropeTheta),
                  {batch, seq, cfg.heads * headDim});
    k = g.reshape(g.rope(g.reshape(k, {batch, seq, kvHeads, headDim}),
                         *cfg.ropeTheta),
                  {batch, seq, kvHeads * headDim});
  }
  q = splitHeads(g, q, cfg.heads, headDim); // [B, nh, S, d]
  k = splitHeads(g, k, kvHeads, headDim);   // [B, kvh, S, d]
  v = splitHeads(g, v, kvHeads, headDim);
  if (group > 1) {
    // Grouped-query attention without repeating keys: the query heads of a
    // group share one key head through matmul's batch broadcasting.
    q = g.reshape(q, {batch, kvHeads, group, seq, headDim});
    k = g.reshape(k, {batch, kvHeads, 1, seq, headDim});
    v = g.reshape(v, {batch, kvHeads, 1, seq, headDim});
  }
  Value scores = g.matmul(q, k, false, /*transposeB=*/true);
  scores = g.mul(scores, g.scalar(1.0 / std::sqrt(double(headDim))));
  Value probs = g.dropout(g.softmax(scores, cfg.causal), cfg.dropout);
  Value ctx = g.matmul(probs, v);
  if (group > 1)
    ctx = g.reshape(ctx, {batch, cfg.heads, seq, headDim});
  ctx = g.reshape(g.transpose(ctx, {0, 2, 1, 3}),
                  {batch, seq, cfg.heads * headDim});
  auto s = g.scope("o_proj");
  return g.dropout(g.linear(ctx, cfg.heads * headDim, cfg.hidden, cfg.bias),
                   cfg.dropout);
}

Value geluMlp(GraphBuilder &g, Value x, int64_t hidden, int64_t ffn,
              bool geluTanh) {
  Value h;
  {
    auto s = g.scope("fc");
    h = g.gelu(g.linear(x, hidden, ffn, true), geluTanh);
  }
  auto s = g.scope("proj");
  return g.linear(h, ffn, hidden, true);
}

Value swigluMlp(GraphBuilder &g, Value x, int64_t hidden, int64_t ffn) {
  Value gate, up;
  {
    auto s = g.scope("gate_proj");
    gate = g.silu(g.linear(x, hidden, ffn, false));
  }
  {
    auto s = g.scope("up_proj");
    up = g.linear(x, hidden, ffn, false);
  }
  auto s = g.scope("down_proj");
  return g.linear(g.mul(gate, up), ffn, hidden, false);
}

Value moeMlp(GraphBuilder &g, Value x, const MoeConfig &cfg) {
  ArrayRef<int64_t> shape = GraphBuilder::shapeOf(x);
  int64_t tokens = shape[0] * shape[1];
  int64_t capacity = static_cast<int64_t>(std::ceil(
      cfg.capacityFactor * double(tokens * cfg.topK) / double(cfg.experts)));
  capacity = std::max<int64_t>(1, std::min(capacity, tokens));
  Value flat = g.reshape(x, {tokens, cfg.hidden});

  Value logits;
  {
    auto s = g.scope("router");
    logits = g.matmul(flat, g.param("weight", {cfg.hidden, cfg.experts}));
  }
  OpBuilder &b = g.builder();
  auto gate = graph::MoeGateOp::create(b, g.loc(), logits, cfg.topK,
                                       /*renormalize=*/cfg.topK > 1);
  Value dispatched = graph::MoeDispatchOp::create(
      b, g.loc(), flat, gate.getIndices(), cfg.experts, capacity);

  // Expert MLPs as batched matmuls over [experts, capacity, H].
  auto s = g.scope("experts");
  Value y;
  if (cfg.swiglu) {
    Value w1 = g.param("gate_proj.weight", {cfg.experts, cfg.hidden, cfg.ffn});
    Value w3 = g.param("up_proj.weight", {cfg.experts, cfg.hidden, cfg.ffn});
    Value w2 = g.param("down_proj.weight", {cfg.experts, cfg.ffn, cfg.hidden});
    Value h = g.mul(g.silu(g.matmul(dispatched, w1)), g.matmul(dispatched, w3));
    y = g.matmul(h, w2);
  } else {
    Value w1 = g.param("fc.weight", {cfg.experts, cfg.hidden, cfg.ffn});
    Value w2 = g.param("proj.weight", {cfg.experts, cfg.ffn, cfg.hidden});
    y = g.matmul(g.gelu(g.matmul(dispatched, w1), /*tanh=*/true), w2);
  }
  Value combined = graph::MoeCombineOp::create(b, g.loc(), y, gate.getWeights(),
                                               gate.getIndices());
  return g.reshape(combined, shape);
}

} // namespace cleave::zoo
