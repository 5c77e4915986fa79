//===- OnnxAttentionConverters.cpp - Attention and RotaryEmbedding (23) ---===//
//
// Opset 23's attention operators, which PyTorch's exporter writes from
// scaled_dot_product_attention at opset 23 and later, as the graph ops
// their definitions compose:
// - Attention: softmax(scale Q K^T, masked) V, the chain
//   cleave-fuse-attention turns into one graph.attention where it can
//   (a boolean mask becomes a `where` to -inf, a float mask an addition,
//   is_causal the softmax's causal mask). Grouped-query heads broadcast
//   through the products' batch dimensions ([B, kv_heads, group, S, D]
//   against [B, kv_heads, 1, S, D]); 3-D inputs [B, S, heads x D] are
//   split into heads by q_num_heads and kv_num_heads. A key/value cache
//   (past_key, past_value, nonpad_kv_seqlen), softcap, sliding windows and
//   the qk_matmul_output output are refused by name.
// - RotaryEmbedding: x1 cos - x2 sin and x1 sin + x2 cos over the halves
//   (or the even and odd elements, `interleaved`) of the first
//   rotary_embedding_dim features of each head, the caches gathered by
//   position_ids when given.
//
//===----------------------------------------------------------------------===//

#include "OnnxCompose.h"
#include "OnnxGraphImporter.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace cleave::graph;

namespace cleave::onnx_import {
namespace {

/// A splat constant of `value` with `v`'s element type and rank-0 shape.
Value scalarOf(NodeContext &ctx, Value v, double value) {
  auto type = cast<RankedTensorType>(v.getType());
  return ctx.createSplat(RankedTensorType::get({}, type.getElementType()),
                         value);
}

Value reshapeTo(NodeContext &ctx, Value v, ArrayRef<int64_t> shape) {
  if (!v)
    return {};
  FailureOr<Value> r = ctx.reshape(v, shape);
  return failed(r) ? Value() : *r;
}

Value transposed(NodeContext &ctx, Value v, ArrayRef<int64_t> perm) {
  if (!v)
    return {};
  return compose<TransposeOp>(ctx, v,
                              ctx.getBuilder().getDenseI64ArrayAttr(perm));
}

/// [B, S, heads x D] as [B, heads, S, D].
Value splitHeads(NodeContext &ctx, Value v, int64_t heads) {
  Shape s = shapeOf(v);
  if (heads < 1 || s[2] % heads) {
    ctx.emitError() << "hidden size " << s[2] << " is not a multiple of "
                    << heads << " heads";
    return {};
  }
  return transposed(ctx, reshapeTo(ctx, v, {s[0], s[1], heads, s[2] / heads}),
                    {0, 2, 1, 3});
}

LogicalResult convertAttention(NodeContext &ctx) {
  for (auto [i, what] : {std::pair{4u, "past_key"}, {5u, "past_value"},
                         {6u, "nonpad_kv_seqlen"}})
    if (ctx.hasInput(i))
      return ctx.emitError()
             << what << " (a key/value cache) is not supported: export the "
                "model for training or a full forward pass, without a cache";
  if (ctx.getFloat("softcap", 0) != 0)
    return ctx.emitError() << "softcap is not supported";
  if (ctx.getInt("left_window_size", -1) != -1 ||
      ctx.getInt("right_window_size", -1) != -1)
    return ctx.emitError() << "sliding-window attention is not supported";
  if (ctx.getNumOutputs() > 3 && ctx.isOutputUsed(3))
    return ctx.emitError() << "the qk_matmul_output output is not supported";
  Value q = floatOperand(ctx, 0, "Q"), k = floatOperand(ctx, 1, "K"),
        v = floatOperand(ctx, 2, "V");
  if (!q || !k || !v)
    return failure();
  Value key = k, value = v; // present_key and present_value: no cache
  size_t rank = shapeOf(q).size();
  if (rank != shapeOf(k).size() || rank != shapeOf(v).size() ||
      (rank != 3 && rank != 4))
    return ctx.emitError() << "Q, K and V must all be 3-D or all 4-D";
  if (rank == 3) {
    int64_t qHeads = ctx.getInt("q_num_heads", 0),
            kvHeads = ctx.getInt("kv_num_heads", 0);
    if (qHeads < 1 || kvHeads < 1)
      return ctx.emitError() << "3-D inputs need q_num_heads and kv_num_heads";
    q = splitHeads(ctx, q, qHeads);
    k = splitHeads(ctx, k, kvHeads);
    v = splitHeads(ctx, v, kvHeads);
    if (!q || !k || !v)
      return failure();
  }
  Shape qs = shapeOf(q), ks = shapeOf(k), vs = shapeOf(v);
  int64_t batch = qs[0], heads = qs[1], sq = qs[2], d = qs[3];
  int64_t kvHeads = ks[1], sk = ks[2], dv = vs[3];
  if (ks[0] != batch || vs[0] != batch || vs[1] != kvHeads || vs[2] != sk ||
      ks[3] != d)
    return ctx.emitError() << "Q " << shapeToString(qs) << ", K "
                           << shapeToString(ks) << " and V "
                           << shapeToString(vs) << " do not match";
  if (heads % kvHeads)
    return ctx.emitError() << heads << " query heads are not a multiple of "
                           << kvHeads << " key/value heads";
  bool causal = ctx.getInt("is_causal", 0) != 0;
  if (causal && sq != sk)
    return ctx.emitError() << "is_causal with " << sq << " queries and " << sk
                           << " keys (ONNX aligns the mask to the first key, "
                              "cleave's causal softmax to the last)";
  // Grouped-query heads: [B, kv_heads, group, S, D] against
  // [B, kv_heads, 1, S, D]; the products broadcast the group.
  int64_t group = heads / kvHeads;
  if (group > 1) {
    q = reshapeTo(ctx, q, {batch, kvHeads, group, sq, d});
    k = reshapeTo(ctx, k, {batch, kvHeads, 1, sk, d});
    v = reshapeTo(ctx, v, {batch, kvHeads, 1, sk, dv});
  }
  Value scores = compose<MatmulOp>(ctx, q, k, UnitAttr(),
                                   ctx.getBuilder().getUnitAttr());
  if (!scores)
    return failure();
  double scale = ctx.getFloat("scale", 1.0 / std::sqrt(double(d)));
  scores = compose<MulOp>(ctx, scores, scalarOf(ctx, scores, scale));
  if (ctx.hasInput(3)) {
    Value mask = ctx.getValue(3, ParamUse::Frozen);
    if (!mask || !scores)
      return failure();
    Shape ms = shapeOf(mask);
    if (ms.size() > 4)
      return ctx.emitError() << "attn_mask " << shapeToString(ms)
                             << " has more than 4 dimensions";
    if (group > 1) {
      // [b, h, Sq, Sk] (broadcasting to [B, heads, Sq, Sk]) as the scores'
      // [b, kv_heads or 1, group or 1, Sq, Sk].
      while (ms.size() < 4)
        ms.insert(ms.begin(), 1);
      int64_t h = ms[1];
      if (h != 1 && h != heads)
        return ctx.emitError() << "attn_mask " << shapeToString(shapeOf(mask))
                               << " does not broadcast to " << heads
                               << " heads";
      mask = reshapeTo(ctx, mask,
                       {ms[0], h == 1 ? 1 : kvHeads, h == 1 ? 1 : group, ms[2],
                        ms[3]});
    }
    auto maskType = cast<RankedTensorType>(mask.getType());
    if (maskType.getElementType().isInteger(1)) {
      scores = compose<WhereOp>(
          ctx, mask, scores,
          scalarOf(ctx, scores, -std::numeric_limits<double>::infinity()));
    } else if (isa<FloatType>(maskType.getElementType())) {
      auto element = cast<RankedTensorType>(scores.getType()).getElementType();
      scores = compose<AddOp>(ctx, scores, castTo(ctx, mask, element));
    } else {
      return ctx.emitError() << "attn_mask must be bool or floating point, got "
                             << maskType;
    }
  }
  if (!scores)
    return failure();
  OpBuilder &b = ctx.getBuilder();
  int64_t last = shapeOf(scores).size() - 1;
  Value probs = compose<SoftmaxOp>(ctx, scores, b.getI64IntegerAttr(last),
                                   causal ? b.getUnitAttr() : UnitAttr());
  Value y = compose<MatmulOp>(ctx, probs, v, UnitAttr(), UnitAttr());
  y = reshapeTo(ctx, y, {batch, heads, sq, dv});
  if (rank == 3)
    y = reshapeTo(ctx, transposed(ctx, y, {0, 2, 1, 3}),
                  {batch, sq, heads * dv});
  if (!y || failed(ctx.setResult(0, y)))
    return failure();
  if (ctx.getNumOutputs() > 1 && failed(ctx.setResult(1, key)))
    return failure();
  if (ctx.getNumOutputs() > 2 && failed(ctx.setResult(2, value)))
    return failure();
  return success();
}

Value sliceLast(NodeContext &ctx, Value x, int64_t start, int64_t limit,
                int64_t stride) {
  if (!x)
    return {};
  Shape s = shapeOf(x);
  Shape starts(s.size(), 0), limits = s, strides(s.size(), 1);
  starts.back() = start;
  limits.back() = limit;
  strides.back() = stride;
  return compose<SliceOp>(ctx, x, ArrayRef<int64_t>(starts),
                          ArrayRef<int64_t>(limits),
                          ArrayRef<int64_t>(strides));
}

LogicalResult convertRotaryEmbedding(NodeContext &ctx) {
  Value x = floatOperand(ctx, 0, "X");
  Value cosCache = floatOperand(ctx, 1, "cos_cache"),
        sinCache = floatOperand(ctx, 2, "sin_cache");
  if (!x || !cosCache || !sinCache)
    return failure();
  Shape xs = shapeOf(x);
  if (xs.size() != 3 && xs.size() != 4)
    return ctx.emitError() << "X must be 3-D or 4-D, got "
                           << shapeToString(xs);
  // Work on [B, H, S, D] (ONNX's 4-D layout); 3-D [B, S, H x D] is split.
  bool flat = xs.size() == 3;
  if (flat) {
    int64_t heads = ctx.getInt("num_heads", 0);
    if (heads < 1)
      return ctx.emitError() << "3-D X needs num_heads";
    x = splitHeads(ctx, x, heads);
    if (!x)
      return failure();
  }
  Shape s = shapeOf(x);
  int64_t batch = s[0], seq = s[2], headDim = s[3];
  int64_t dim = ctx.getInt("rotary_embedding_dim", 0);
  if (dim == 0)
    dim = headDim;
  if (dim < 2 || dim > headDim || dim % 2)
    return ctx.emitError() << "rotary_embedding_dim " << dim
                           << " must be even and at most the head size "
                           << headDim;
  if (ctx.hasInput(3)) {
    Value positions = ctx.getValue(3, ParamUse::Frozen);
    if (!positions)
      return failure();
    cosCache = compose<GatherOp>(ctx, cosCache, positions, int64_t(0));
    sinCache = compose<GatherOp>(ctx, sinCache, positions, int64_t(0));
  }
  if (!cosCache || !sinCache)
    return failure();
  Shape cs = shapeOf(cosCache);
  if (cs.size() != 3 || cs[0] != batch || cs[1] != seq || cs[2] != dim / 2 ||
      shapeOf(sinCache) != cs)
    return ctx.emitError() << "the caches (after position_ids) are "
                           << shapeToString(cs) << ", expected ["
                           << batch << ", " << seq << ", " << dim / 2 << "]";
  auto element = cast<RankedTensorType>(x.getType()).getElementType();
  Value cos = reshapeTo(ctx, castTo(ctx, cosCache, element),
                        {batch, 1, seq, dim / 2});
  Value sin = reshapeTo(ctx, castTo(ctx, sinCache, element),
                        {batch, 1, seq, dim / 2});
  bool interleaved = ctx.getInt("interleaved", 0) != 0;
  Value x1 = interleaved ? sliceLast(ctx, x, 0, dim, 2)
                         : sliceLast(ctx, x, 0, dim / 2, 1);
  Value x2 = interleaved ? sliceLast(ctx, x, 1, dim, 2)
                         : sliceLast(ctx, x, dim / 2, dim, 1);
  Value real = compose<SubOp>(ctx, compose<MulOp>(ctx, x1, cos),
                              compose<MulOp>(ctx, x2, sin));
  Value imag = compose<AddOp>(ctx, compose<MulOp>(ctx, x1, sin),
                              compose<MulOp>(ctx, x2, cos));
  Value rotated;
  if (interleaved) {
    Shape pairs = {batch, s[1], seq, dim / 2, 1};
    rotated = reshapeTo(ctx,
                        concat(ctx, {reshapeTo(ctx, real, pairs),
                                     reshapeTo(ctx, imag, pairs)},
                               4),
                        {batch, s[1], seq, dim});
  } else {
    rotated = concat(ctx, {real, imag}, 3);
  }
  Value y = dim < headDim
                ? concat(ctx, {rotated, sliceLast(ctx, x, dim, headDim, 1)}, 3)
                : rotated;
  if (flat)
    y = reshapeTo(ctx, transposed(ctx, y, {0, 2, 1, 3}), xs);
  if (!y)
    return failure();
  return ctx.setResult(0, y);
}

} // namespace

void addAttentionConverters(ConverterTable &table) {
  table.add("Attention", convertAttention);
  table.add("RotaryEmbedding", convertRotaryEmbedding);
}

} // namespace cleave::onnx_import
