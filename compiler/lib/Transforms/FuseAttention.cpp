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
#include "cleave/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

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

/// The key of scores computed as q x `rhs`: `rhs` itself with
/// transpose_rhs, or the input of a transpose swapping the last two
/// dimensions (as ONNX exports write k^T).
Value keyOf(MatmulOp scores) {
  if (scores.getTransposeLhs())
    return {};
  if (scores.getTransposeRhs())
    return scores.getRhs();
  auto transpose = scores.getRhs().getDefiningOp<TransposeOp>();
  if (!transpose || !transpose->hasOneUse())
    return {};
  ArrayRef<int64_t> perm = transpose.getPermutation();
  int64_t rank = perm.size();
  for (int64_t d = 0; d < rank - 2; ++d)
    if (perm[d] != d)
      return {};
  if (rank < 3 || perm[rank - 2] != rank - 1 || perm[rank - 1] != rank - 2)
    return {};
  return transpose.getInput();
}

struct FuseAttentionChain : OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MatmulOp pv,
                                PatternRewriter &rewriter) const override {
    if (pv.getTransposeLhs() || pv.getTransposeRhs())
      return rewriter.notifyMatchFailure(pv, "transposed product");
    // Probabilities, through dropouts that drop nothing.
    Value probs = pv.getLhs();
    while (auto dropout = probs.getDefiningOp<DropoutOp>()) {
      if (dropout.getRatio().convertToDouble() != 0 || !probs.hasOneUse())
        return rewriter.notifyMatchFailure(pv, "attention dropout");
      probs = dropout.getInput();
    }
    auto softmax = probs.getDefiningOp<SoftmaxOp>();
    if (!softmax || !probs.hasOneUse() || softmax.getQueryBlocks() ||
        softmax.getAxis() != softmax.getType().getRank() - 1)
      return rewriter.notifyMatchFailure(pv, "no softmax over the keys");
    // Scores, through one scaling by a scalar constant.
    Value scores = softmax.getInput();
    double scale = 1.0;
    if (!scores.hasOneUse())
      return rewriter.notifyMatchFailure(pv, "scores read elsewhere");
    if (auto mul = scores.getDefiningOp<MulOp>()) {
      std::optional<double> s = scalarConstant(mul.getRhs());
      Value raw = mul.getLhs();
      if (!s) {
        s = scalarConstant(mul.getLhs());
        raw = mul.getRhs();
      }
      if (!s || raw.getType() != scores.getType())
        return rewriter.notifyMatchFailure(pv, "scores scaled by a tensor");
      scale = *s;
      scores = raw;
    } else if (auto div = scores.getDefiningOp<DivOp>()) {
      std::optional<double> s = scalarConstant(div.getRhs());
      if (!s || *s == 0 || div.getLhs().getType() != scores.getType())
        return rewriter.notifyMatchFailure(pv, "scores divided by a tensor");
      scale = 1.0 / *s;
      scores = div.getLhs();
    }
    if (!(scale > 0) || !std::isfinite(scale))
      return rewriter.notifyMatchFailure(pv, "scale not positive");
    auto qk = scores.getDefiningOp<MatmulOp>();
    if (!qk || !scores.hasOneUse())
      return rewriter.notifyMatchFailure(pv, "scores not a product");
    Value query = qk.getLhs(), key = keyOf(qk), value = pv.getRhs();
    if (!key)
      return rewriter.notifyMatchFailure(pv, "scores not q k^T");

    SmallVector<Type> types;
    if (failed(cleave::graph::inferAttentionResult(
            std::nullopt, query.getType(), key.getType(), value.getType(),
            types)) ||
        types[0] != pv.getType())
      return rewriter.notifyMatchFailure(pv, "shapes outside graph.attention");

    auto attention = AttentionOp::create(
        rewriter, pv.getLoc(), query, key, value,
        rewriter.getF64FloatAttr(scale),
        softmax.getCausal() ? rewriter.getUnitAttr() : UnitAttr(),
        ArrayAttr(), UnitAttr());
    rewriter.replaceOp(pv, attention.getOut());
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
