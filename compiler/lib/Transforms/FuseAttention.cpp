//===- FuseAttention.cpp - Unfused attention chains to graph.attention ----===//
//
// The pattern is anchored on the last product (probabilities x values) and
// walks up its chain; every intermediate value must have this chain as its
// only reader, since the fused op produces none of them.
//
//===----------------------------------------------------------------------===//

#include "cleave/Transforms/FuseAttention.h"

#include "cleave/Dialect/Graph/IR/GraphDialect.h"
#include "cleave/Dialect/Graph/IR/GraphOps.h"
#include "cleave/Dialect/Graph/IR/ShapeInference.h"
#include "cleave/Dialect/Graph/IR/TensorValues.h"
#include "cleave/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "llvm/ADT/DenseSet.h"

#include <cmath>
#include <limits>

namespace cleave {
#define GEN_PASS_DEF_FUSEATTENTION
#include "cleave/Transforms/Passes.h.inc"
} // namespace cleave

using namespace mlir;
using namespace cleave::graph;

namespace {

/// The value of a constant holding one number (a scalar or a splat).
std::optional<double> scalarConstant(Value v) {
  auto constant = v.getDefiningOp<ConstantOp>();
  if (!constant)
    return std::nullopt;
  auto dense = dyn_cast<DenseFPElementsAttr>(constant.getValue());
  if (!dense || !dense.isSplat())
    return std::nullopt;
  return dense.getSplatValue<APFloat>().convertToDouble();
}

RankedTensorType tensorOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

bool hasSplatValue(Value v, double value) {
  std::optional<double> s = scalarConstant(v);
  return s && *s == value;
}

/// `v` through multiplications and divisions by scalar constants of its
/// own type (exporters scale q and k^T by the root of the scale each, or
/// the scores once), each read only here; `scale` takes their product.
Value peelScale(Value v, double &scale) {
  while (v.hasOneUse()) {
    if (auto mul = v.getDefiningOp<MulOp>()) {
      std::optional<double> s = scalarConstant(mul.getRhs());
      Value raw = mul.getLhs();
      if (!s) {
        s = scalarConstant(mul.getLhs());
        raw = mul.getRhs();
      }
      if (!s || raw.getType() != v.getType())
        return v;
      scale *= *s;
      v = raw;
    } else if (auto div = v.getDefiningOp<DivOp>()) {
      std::optional<double> s = scalarConstant(div.getRhs());
      if (!s || *s == 0 || div.getLhs().getType() != v.getType())
        return v;
      scale /= *s;
      v = div.getLhs();
    } else {
      return v;
    }
  }
  return v;
}

/// Whether a reshape keeps the last two dimensions (it only regroups the
/// batch dimensions, as exporters do around batched products).
bool regroupsBatch(ReshapeOp reshape) {
  ArrayRef<int64_t> in = tensorOf(reshape.getInput()).getShape(),
                    out = reshape.getType().getShape();
  return in.size() >= 2 && out.size() >= 2 &&
         in.take_back(2) == out.take_back(2);
}

/// `v` through one batch-regrouping reshape read only here.
Value peelReshape(Value v) {
  if (auto r = v.getDefiningOp<ReshapeOp>(); r && v.hasOneUse() &&
                                             regroupsBatch(r))
    return r.getInput();
  return v;
}

/// A value as attention reads it: `value` permuted by `perm` (none when
/// empty), of `shape`.
struct Read {
  Value value;
  SmallVector<int64_t> perm;
  SmallVector<int64_t> shape;
};

/// The key of scores computed as q x `rhs`: `rhs` itself with
/// transpose_rhs, or read through a transpose that swaps the last two
/// dimensions (as ONNX exports write k^T), possibly between reshapes that
/// regroup the batch dimensions (PyTorch's dynamo exporter flattens them
/// for the transpose) or permuting the batch dimensions too (the
/// TorchScript exporter's one transpose from [B, S, H, D] to [B, H, D, S]:
/// the key is then read through the rest of that permutation).
std::optional<Read> keyOf(MatmulOp scores, Value rhs) {
  if (scores.getTransposeLhs())
    return std::nullopt;
  if (scores.getTransposeRhs())
    return Read{rhs, {}, SmallVector<int64_t>(tensorOf(rhs).getShape())};
  auto transpose = peelReshape(rhs).getDefiningOp<TransposeOp>();
  if (!transpose || !transpose->hasOneUse())
    return std::nullopt;
  SmallVector<int64_t> perm(transpose.getPermutation());
  int64_t rank = perm.size();
  if (rank < 3)
    return std::nullopt;
  std::swap(perm[rank - 2], perm[rank - 1]);
  if (llvm::equal(perm, llvm::seq<int64_t>(0, rank))) {
    Value key = peelReshape(transpose.getInput());
    return Read{key, {}, SmallVector<int64_t>(tensorOf(key).getShape())};
  }
  ArrayRef<int64_t> in = tensorOf(transpose.getInput()).getShape();
  SmallVector<int64_t> shape;
  for (int64_t d : perm)
    shape.push_back(in[d]);
  return Read{transpose.getInput(), perm, shape};
}

/// A key or value repeated over grouped-query heads as PyTorch's exporters
/// write `expand`: a product with a splat constant of ones broadcasting it
/// (reached through one batch-regrouping reshape). Returns the unrepeated
/// value, its repeated batch shape in `repeated`; or null.
Value peelRepeat(Value v, SmallVectorImpl<int64_t> &repeated) {
  auto mul = peelReshape(v).getDefiningOp<MulOp>();
  if (!mul || !mul->hasOneUse())
    return {};
  Value x = hasSplatValue(mul.getRhs(), 1.0)   ? mul.getLhs()
            : hasSplatValue(mul.getLhs(), 1.0) ? mul.getRhs()
                                               : Value();
  if (!x || tensorOf(x).getRank() != mul.getType().getRank())
    return {};
  repeated.assign(mul.getType().getShape().drop_back(2).begin(),
                  mul.getType().getShape().drop_back(2).end());
  return x;
}

/// Whether `v` is computed from a trainable parameter (a mask that is
/// would need a gradient, which graph.attention does not make; a frozen one,
/// such as the mask an exporter folded into an initializer, needs none).
bool dependsOnParameter(Value v) {
  SmallVector<Value> work{v};
  llvm::DenseSet<Value> seen;
  while (!work.empty()) {
    Value x = work.pop_back_val();
    if (!seen.insert(x).second)
      continue;
    Operation *def = x.getDefiningOp();
    if (!def)
      continue;
    if (auto param = dyn_cast<ParamOp>(def))
      return !param.getFrozen();
    llvm::append_range(work, def->getOperands());
  }
  return false;
}

/// Groups of `fine` (consecutive runs) whose products are the dimensions
/// of `coarse`: the sizes of each group in `groups`. False when `fine`
/// does not refine `coarse` that way.
bool refines(ArrayRef<int64_t> fine, ArrayRef<int64_t> coarse,
             SmallVectorImpl<SmallVector<int64_t>> &groups) {
  size_t f = 0;
  groups.clear();
  for (size_t i = 0; i < coarse.size(); ++i) {
    int64_t c = coarse[i], product = 1;
    SmallVector<int64_t> group;
    // A dimension of 1 may have no counterpart; any other takes fine
    // dimensions until their product reaches it.
    if (c != 1 || (f < fine.size() && fine[f] == 1)) {
      do {
        if (f == fine.size())
          return false;
        product *= fine[f];
        group.push_back(fine[f++]);
      } while (product < c);
    }
    if (i + 1 == coarse.size())
      while (f < fine.size() && fine[f] == 1)
        group.push_back(fine[f++]);
    if (product != c)
      return false;
    groups.push_back(std::move(group));
  }
  return f == fine.size();
}

Value reshapeTo(PatternRewriter &rewriter, Location loc, Value v,
                ArrayRef<int64_t> shape) {
  auto type = tensorOf(v);
  if (type.getShape() == shape)
    return v;
  return ReshapeOp::create(rewriter, loc, type.clone(shape), v);
}

/// The scores' additive mask and the scores it is applied to: `scores`
/// = x + mask (either side), or where(keep, x, -inf) (a boolean mask,
/// as the ONNX Attention import writes it). No mask: {scores, null}.
std::pair<Value, Value> peelMask(Value scores) {
  if (!scores.hasOneUse())
    return {scores, Value()};
  auto type = tensorOf(scores);
  if (auto add = scores.getDefiningOp<AddOp>()) {
    // The scores are the side that is a (scaled) product.
    for (auto [x, mask] : {std::pair(add.getLhs(), add.getRhs()),
                           std::pair(add.getRhs(), add.getLhs())}) {
      double ignored = 1.0;
      if (x.getType() == type &&
          tensorOf(mask).getElementType() == type.getElementType() &&
          peelScale(x, ignored).getDefiningOp<MatmulOp>())
        return {x, mask};
    }
  }
  if (auto where = scores.getDefiningOp<WhereOp>();
      where && where.getLhs().getType() == type) {
    std::optional<double> fill = scalarConstant(where.getRhs());
    if (fill && std::isinf(*fill) && *fill < 0)
      return {where.getLhs(), where.getCondition()};
  }
  return {scores, Value()};
}

/// Whether `mask` (of the scores' rank after leading 1s) is a constant
/// holding exactly the causal mask for `queries` x `keys` in every plane:
/// 0 where key j <= i + keys - queries, masked (at or below -1e4, as the
/// kernels take it) elsewhere, as exporters fold a causal mask. The fused
/// op then skips the masked blocks and places them under context
/// parallelism, which it cannot for an arbitrary mask.
bool isCausalMask(Value mask, int64_t queries, int64_t keys) {
  ElementsAttr values;
  if (auto constant = mask.getDefiningOp<ConstantOp>())
    values = constant.getValue();
  else if (auto param = mask.getDefiningOp<ParamOp>(); param && param.getFrozen())
    values = param.getValueAttr();
  auto type = tensorOf(mask);
  if (!values || type.getRank() < 2 || type.getShape().end()[-2] != queries ||
      type.getShape().back() != keys ||
      !isa<FloatType>(type.getElementType()))
    return false;
  FailureOr<std::vector<float>> read = readFloatElements(
      values, [&] { return mask.getDefiningOp()->emitWarning(); });
  if (failed(read))
    return false;
  for (size_t e = 0; e < read->size(); ++e) {
    int64_t j = static_cast<int64_t>(e) % keys,
            i = static_cast<int64_t>(e) / keys % queries;
    float v = (*read)[e];
    if (j > i + keys - queries ? !(v <= -1e4f) : v != 0.0f)
      return false;
  }
  return true;
}

struct FuseAttentionChain : OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MatmulOp pv,
                                PatternRewriter &rewriter) const override {
    if (pv.getTransposeLhs() || pv.getTransposeRhs())
      return rewriter.notifyMatchFailure(pv, "transposed product");
    // Probabilities, through dropouts that drop nothing and the guard
    // PyTorch's exporter writes against rows with every key masked
    // (where(p != p, 0, p): the fused kernel gives such rows 0).
    Value probs = pv.getLhs();
    while (auto dropout = probs.getDefiningOp<DropoutOp>()) {
      if (dropout.getRatio().convertToDouble() != 0 || !probs.hasOneUse())
        return rewriter.notifyMatchFailure(pv, "attention dropout");
      probs = dropout.getInput();
    }
    bool guarded = false;
    if (auto guard = probs.getDefiningOp<WhereOp>(); guard && probs.hasOneUse()) {
      auto nan = guard.getCondition().getDefiningOp<CompareOp>();
      Value p = guard.getRhs();
      if (nan && nan.getPredicate() == "ne" && nan.getLhs() == p &&
          nan.getRhs() == p && hasSplatValue(guard.getLhs(), 0.0) &&
          p.getType() == probs.getType() &&
          llvm::all_of(p.getUsers(), [&](Operation *user) {
            return user == nan || user == guard;
          })) {
        probs = p;
        guarded = true;
      }
    }
    auto softmax = probs.getDefiningOp<SoftmaxOp>();
    if (!softmax || (!guarded && !probs.hasOneUse()) ||
        softmax.getQueryBlocks() ||
        static_cast<int64_t>(softmax.getAxis()) !=
            softmax.getType().getRank() - 1)
      return rewriter.notifyMatchFailure(pv, "no softmax over the keys");
    // Scores, through a mask and scalings.
    auto [scaled, mask] = peelMask(softmax.getInput());
    if (mask && dependsOnParameter(mask))
      return rewriter.notifyMatchFailure(pv, "mask computed from parameters");
    double scale = 1.0;
    if (!scaled.hasOneUse())
      return rewriter.notifyMatchFailure(pv, "scores read elsewhere");
    Value scores = peelScale(scaled, scale);
    auto qk = scores.getDefiningOp<MatmulOp>();
    if (!qk || !scores.hasOneUse())
      return rewriter.notifyMatchFailure(pv, "scores not a product");
    Value query = peelScale(qk.getLhs(), scale);
    std::optional<Read> keyRead = keyOf(qk, peelScale(qk.getRhs(), scale));
    if (!keyRead)
      return rewriter.notifyMatchFailure(pv, "scores not q k^T");
    Value key = keyRead->value;
    Read valueRead{pv.getRhs(), {},
                   SmallVector<int64_t>(tensorOf(pv.getRhs()).getShape())};
    if (!(scale > 0) || !std::isfinite(scale))
      return rewriter.notifyMatchFailure(pv, "scale not positive");

    // One batch shape for the three: the grouped-query repeat's when the
    // key or value is repeated, else the query's.
    Location loc = pv.getLoc();
    ArrayRef<int64_t> qShape = tensorOf(query).getShape();
    ArrayRef<int64_t> qBatch = qShape.drop_back(2);
    SmallVector<int64_t> batch, keyRepeat, valueRepeat;
    Value keyBase = keyRead->perm.empty() ? peelRepeat(key, keyRepeat)
                                          : Value();
    Value valueBase = peelRepeat(pv.getRhs(), valueRepeat);
    if (keyBase && valueBase && keyRepeat != valueRepeat)
      return rewriter.notifyMatchFailure(pv, "key and value repeated apart");
    batch = keyBase ? keyRepeat : valueBase ? valueRepeat
                                            : SmallVector<int64_t>(qBatch);
    SmallVector<SmallVector<int64_t>> groups;
    if (!refines(batch, qBatch, groups))
      return rewriter.notifyMatchFailure(pv, "heads regrouped apart");
    // A key or value already in the batch shape (grouped-query heads
    // broadcast by 1s included) is read as it is; else regrouped.
    auto inBatch = [&](const Read &r) {
      ArrayRef<int64_t> s = r.shape;
      if (s.size() != batch.size() + 2)
        return false;
      for (size_t d = 0; d < batch.size(); ++d)
        if (s[d] != batch[d] && s[d] != 1)
          return false;
      return true;
    };
    auto fits = [&](const Read &r, Value base) {
      if (base || inBatch(r))
        return true;
      int64_t elements = 1, batchElements = 1;
      for (int64_t d : r.shape)
        elements *= d;
      for (int64_t d : batch)
        batchElements *= d;
      return elements == batchElements * r.shape.end()[-2] * r.shape.back();
    };
    if (!fits(*keyRead, keyBase) || !fits(valueRead, valueBase))
      return rewriter.notifyMatchFailure(pv, "key or value of other heads");
    // The mask as the scores' shape regrouped like the query: each query
    // batch dimension it keeps becomes that dimension's group.
    SmallVector<int64_t> maskShape;
    if (mask) {
      SmallVector<int64_t> m(tensorOf(mask).getShape());
      int64_t rank = tensorOf(softmax.getInput()).getRank();
      if (static_cast<int64_t>(m.size()) > rank)
        return rewriter.notifyMatchFailure(pv, "mask of a higher rank");
      m.insert(m.begin(), rank - m.size(), 1);
      for (size_t d = 0; d < qBatch.size(); ++d) {
        if (m[d] != 1 && m[d] != qBatch[d])
          return rewriter.notifyMatchFailure(pv, "mask does not broadcast");
        for (int64_t size : groups[d])
          maskShape.push_back(m[d] == 1 ? 1 : size);
      }
      maskShape.append({m[rank - 2], m[rank - 1]});
    }

    // Every check passed: build the operands in the common batch shape.
    auto shaped = [&](const Read &r, Value base) -> Value {
      if (base)
        return base;
      Value v = r.value;
      if (!r.perm.empty())
        v = TransposeOp::create(rewriter, loc, v, r.perm);
      if (inBatch(r))
        return v;
      SmallVector<int64_t> shape(batch);
      shape.append(r.shape.end() - 2, r.shape.end());
      return reshapeTo(rewriter, loc, v, shape);
    };
    SmallVector<int64_t> qNew(batch);
    qNew.append(qShape.end() - 2, qShape.end());
    Value q = reshapeTo(rewriter, loc, query, qNew);
    Value k = shaped(*keyRead, keyBase), v = shaped(valueRead, valueBase);
    SmallVector<Type> types;
    if (failed(cleave::graph::inferAttentionResult(
            std::nullopt, q.getType(), k.getType(), v.getType(), types)) ||
        numElements(cast<RankedTensorType>(types[0])) !=
            numElements(pv.getType()))
      return rewriter.notifyMatchFailure(pv, "shapes outside graph.attention");
    Value additive;
    bool causal = softmax.getCausal();
    ArrayRef<int64_t> scoreShape = tensorOf(softmax.getInput()).getShape();
    if (mask && isCausalMask(mask, scoreShape.end()[-2], scoreShape.back())) {
      mask = Value();
      causal = true;
    }
    if (mask) {
      if (tensorOf(mask).getElementType().isInteger(1)) {
        // where(keep, 0, -inf): the additive form of a boolean mask.
        auto element = tensorOf(scaled).getElementType();
        auto scalar = RankedTensorType::get({}, element);
        auto zero = ConstantOp::create(
            rewriter, loc, DenseElementsAttr::get(scalar, rewriter.getFloatAttr(
                                                              element, 0.0)));
        auto ninf = ConstantOp::create(
            rewriter, loc,
            DenseElementsAttr::get(
                scalar, rewriter.getFloatAttr(
                            element, -std::numeric_limits<double>::infinity())));
        mask = WhereOp::create(rewriter, loc, mask, zero, ninf);
      }
      additive = reshapeTo(rewriter, loc, mask, maskShape);
      if (failed(cleave::graph::verifyAttentionMask(
              std::nullopt, q.getType(), k.getType(), additive.getType())))
        return rewriter.notifyMatchFailure(pv, "mask outside graph.attention");
    }
    auto attention = AttentionOp::create(
        rewriter, loc, q, k, v, additive, rewriter.getF64FloatAttr(scale),
        causal ? rewriter.getUnitAttr() : UnitAttr(),
        ArrayAttr(), UnitAttr());
    rewriter.replaceOp(pv, reshapeTo(rewriter, loc, attention.getOut(),
                                     pv.getType().getShape()));
    return success();
  }
};

struct FuseAttentionPass
    : public cleave::impl::FuseAttentionBase<FuseAttentionPass> {
  using FuseAttentionBase::FuseAttentionBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    RewritePatternSet patterns(&getContext());
    cleave::populateFuseAttentionPatterns(patterns);
    // Only the chains change: no folding or merging of other constants, so
    // the rest of the graph (and its layer numbering) stays as imported.
    GreedyRewriteConfig config;
    config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled)
        .enableFolding(false)
        .enableConstantCSE(false);
    if (failed(applyPatternsGreedily(func, std::move(patterns), config)))
      return signalPassFailure();
    func.walk([&](AttentionOp) { ++numFused; });
  }
};

} // namespace

void cleave::populateFuseAttentionPatterns(RewritePatternSet &patterns) {
  patterns.add<FuseAttentionChain>(patterns.getContext());
}
