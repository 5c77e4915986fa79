//===- StructuredRules.cpp - Derivatives of matmul, norms, conv, MoE ------===//

#include "GradientBuilders.h"

using namespace mlir;
using namespace cleave::graph;

namespace cleave::autodiff {

namespace {

/// For y = op(A) . op(B): dA = dy . op(B)^T and dB = op(A)^T . dy, written
/// with the transposes folded into the matmuls, then summed over any batch
/// dimensions that broadcasting added. dB comes first: dA is what the next
/// gradient (an activation's, a bias add's) consumes, and emitted last it
/// sits right before that consumer, where a backend can fuse the two
/// (runtime Fusion.h).
LogicalResult gradMatmul(MatmulOp op, OpBuilder &b, ValueRange dys,
                         SmallVectorImpl<Value> &dxs) {
  Location loc = op.getLoc();
  Value a = op.getLhs(), w = op.getRhs(), dy = dys[0];
  bool tA = op.getTransposeLhs(), tB = op.getTransposeRhs();
  Value dw = tB ? Value(MatmulOp::create(b, loc, dy, a, true, tA))
                : Value(MatmulOp::create(b, loc, a, dy, !tA, false));
  dw = reduceTo(b, loc, dw, w.getType());
  Value da = tA ? Value(MatmulOp::create(b, loc, w, dy, tB, true))
                : Value(MatmulOp::create(b, loc, dy, w, false, !tB));
  dxs.push_back(reduceTo(b, loc, da, a.getType()));
  dxs.push_back(dw);
  return success();
}

/// y = K(W)^T g, a transposed convolution (ONNX ConvTranspose): linear in
/// g, so dg = K(W) dy, the forward convolution; and since <y, dy> =
/// <g, K(W) dy>, dW is the filter gradient of a convolution of dy whose
/// output gradient is g.
LogicalResult gradConv2dInputGrad(Conv2dInputGradOp op, OpBuilder &b,
                                  ValueRange dys,
                                  SmallVectorImpl<Value> &dxs) {
  Location loc = op.getLoc();
  dxs.push_back(Conv2dOp::create(b, loc, dys[0], op.getFilter(), Value(),
                                 op.getStridesAttr(), op.getPaddingAttr(),
                                 op.getDilationsAttr(), op.getGroupsAttr()));
  dxs.push_back(Conv2dFilterGradOp::create(
      b, loc, op.getFilter().getType(), dys[0], op.getGrad(),
      op.getStridesAttr(), op.getPaddingAttr(), op.getDilationsAttr(),
      op.getGroupsAttr()));
  return success();
}

LogicalResult gradSoftmax(SoftmaxOp op, OpBuilder &b, ValueRange dys,
                          SmallVectorImpl<Value> &dxs) {
  dxs.push_back(SoftmaxGradOp::create(b, op.getLoc(), op.getType(), op,
                                      dys[0], op.getAxisAttr()));
  return success();
}

/// Fused attention: one attention_grad from the saved inputs, output and
/// log-sum-exp (and mask). The log-sum-exp is a statistic for the backward pass only;
/// a graph differentiating through it is refused.
LogicalResult gradAttention(AttentionOp op, OpBuilder &b, ValueRange dys,
                            SmallVectorImpl<Value> &dxs) {
  if (dys[1])
    return op.emitOpError("the gradient of the log-sum-exp result is not "
                          "supported (it is kept for the backward pass)");
  auto grad = AttentionGradOp::create(
      b, op.getLoc(), op.getQuery(), op.getKey(), op.getValue(), op.getOut(),
      op.getLse(), dys[0], op.getMask(), op.getScaleAttr(),
      op.getCausalAttr(), op.getQueryBlocksAttr(), op.getZigzagAttr());
  dxs.append({grad.getQueryGrad(), grad.getKeyGrad(), grad.getValueGrad()});
  // The additive mask gets none: cleave-fuse-attention only folds masks
  // that depend on no parameter.
  if (op.getMask())
    dxs.push_back(Value());
  return success();
}

LogicalResult gradLayerNorm(LayerNormOp op, OpBuilder &b, ValueRange dys,
                            SmallVectorImpl<Value> &dxs) {
  auto grad = LayerNormGradOp::create(b, op.getLoc(), op.getInput(), dys[0],
                                      op.getScale(), op.getAxisAttr(),
                                      op.getEpsilonAttr());
  dxs.push_back(grad.getInputGrad());
  if (op.getScale())
    dxs.push_back(grad.getScaleGrad());
  if (op.getBias())
    dxs.push_back(grad.getBiasGrad());
  return success();
}

LogicalResult gradRmsNorm(RmsNormOp op, OpBuilder &b, ValueRange dys,
                          SmallVectorImpl<Value> &dxs) {
  auto grad = RmsNormGradOp::create(b, op.getLoc(), op.getInput(), dys[0],
                                    op.getScale(), op.getAxisAttr(),
                                    op.getEpsilonAttr());
  dxs.push_back(grad.getInputGrad());
  if (op.getScale())
    dxs.push_back(grad.getScaleGrad());
  return success();
}

LogicalResult gradBatchNorm(BatchNormOp op, OpBuilder &b, ValueRange dys,
                            SmallVectorImpl<Value> &dxs) {
  auto grad = BatchNormGradOp::create(
      b, op.getLoc(), op.getInput(), dys[0], op.getScale(), op.getMean(),
      op.getVariance(), op.getEpsilonAttr(), op.getTrainingAttr());
  dxs.append({grad.getInputGrad(), grad.getScaleGrad(), grad.getBiasGrad(),
              Value(), Value()});
  return success();
}

LogicalResult gradRope(RopeOp op, OpBuilder &b, ValueRange dys,
                       SmallVectorImpl<Value> &dxs) {
  // A rotation's transpose is the rotation by the negated angle.
  dxs.push_back(RopeOp::create(b, op.getLoc(), op.getType(), dys[0],
                               op.getPositions(), op.getThetaAttr(),
                               op.getOffsetAttr(),
                               op.getInverse() ? UnitAttr() : b.getUnitAttr(),
                               op.getPositionBlocksAttr(),
                               op.getZigzagAttr()));
  if (op.getPositions())
    dxs.push_back(Value()); // integer positions have no gradient
  return success();
}

LogicalResult gradConv2d(Conv2dOp op, OpBuilder &b, ValueRange dys,
                         SmallVectorImpl<Value> &dxs) {
  Location loc = op.getLoc();
  dxs.push_back(Conv2dInputGradOp::create(
      b, loc, op.getInput().getType(), dys[0], op.getFilter(),
      op.getStridesAttr(), op.getPaddingAttr(), op.getDilationsAttr(),
      op.getGroupsAttr()));
  dxs.push_back(Conv2dFilterGradOp::create(
      b, loc, op.getFilter().getType(), op.getInput(), dys[0],
      op.getStridesAttr(), op.getPaddingAttr(), op.getDilationsAttr(),
      op.getGroupsAttr()));
  if (op.getBias())
    dxs.push_back(ReduceSumOp::create(b, loc, dys[0],
                                      ArrayRef<int64_t>{0, 2, 3}, false));
  return success();
}

template <typename OpT>
LogicalResult gradPool(OpT op, OpBuilder &b, ValueRange dys,
                       SmallVectorImpl<Value> &dxs) {
  StringRef kind = std::is_same_v<OpT, MaxPool2dOp> ? "max" : "avg";
  dxs.push_back(Pool2dGradOp::create(
      b, op.getLoc(), op.getInput().getType(), kind, op.getInput(), dys[0],
      op.getKernelAttr(), op.getStridesAttr(), op.getPaddingAttr()));
  return success();
}

LogicalResult gradGlobalAvgPool(GlobalAvgPoolOp op, OpBuilder &b,
                                ValueRange dys, SmallVectorImpl<Value> &dxs) {
  Location loc = op.getLoc();
  auto in = cast<RankedTensorType>(op.getInput().getType());
  double scale = 1.0 / double(in.getDimSize(2) * in.getDimSize(3));
  Value spread = BroadcastToOp::create(b, loc, in, dys[0]);
  dxs.push_back(
      MulOp::create(b, loc, spread, scalar(b, loc, in.getElementType(), scale)));
  return success();
}

LogicalResult gradCrossEntropy(CrossEntropyOp op, OpBuilder &b, ValueRange dys,
                               SmallVectorImpl<Value> &dxs) {
  dxs.push_back(CrossEntropyGradOp::create(
      b, op.getLoc(), op.getLogits().getType(), op.getLogits(), op.getLabels(),
      dys[0], op.getIgnoreIndexAttr()));
  dxs.push_back(Value());
  return success();
}

LogicalResult gradMoeGate(MoeGateOp op, OpBuilder &b, ValueRange dys,
                          SmallVectorImpl<Value> &dxs) {
  // Only the weights carry a gradient; indices are discrete.
  if (!dys[0]) {
    dxs.push_back(Value());
    return success();
  }
  dxs.push_back(MoeGateGradOp::create(
      b, op.getLoc(), op.getLogits().getType(), op.getLogits(), dys[0],
      op.getTopKAttr(), op.getRenormalizeAttr()));
  return success();
}

LogicalResult gradMoeDispatch(MoeDispatchOp op, OpBuilder &b, ValueRange dys,
                              SmallVectorImpl<Value> &dxs) {
  // dispatch copies token t into slot(t, j) of its j-th expert, so its
  // transpose sums those slots back: a combine with unit weights.
  Location loc = op.getLoc();
  auto indices = cast<RankedTensorType>(op.getIndices().getType());
  Value ones = splat(b, loc, indices.clone(elementTypeOf(op.getInput())), 1.0);
  dxs.push_back(
      MoeCombineOp::create(b, loc, dys[0], ones, op.getIndices()));
  dxs.push_back(Value());
  return success();
}

LogicalResult gradMoeCombine(MoeCombineOp op, OpBuilder &b, ValueRange dys,
                             SmallVectorImpl<Value> &dxs) {
  auto grad = MoeCombineGradOp::create(b, op.getLoc(), op.getInput(),
                                       op.getWeights(), op.getIndices(),
                                       dys[0]);
  dxs.append({grad.getInputGrad(), grad.getWeightsGrad(), Value()});
  return success();
}

} // namespace

void attachStructuredRules(MLIRContext *ctx) {
  attach<MatmulOp, gradMatmul>(ctx);
  attach<SoftmaxOp, gradSoftmax>(ctx);
  attach<AttentionOp, gradAttention>(ctx);
  attach<LayerNormOp, gradLayerNorm>(ctx);
  attach<RmsNormOp, gradRmsNorm>(ctx);
  attach<BatchNormOp, gradBatchNorm>(ctx);
  attach<RopeOp, gradRope>(ctx);
  attach<Conv2dOp, gradConv2d>(ctx);
  attach<Conv2dInputGradOp, gradConv2dInputGrad>(ctx);
  attach<MaxPool2dOp, gradPool<MaxPool2dOp>>(ctx);
  attach<AvgPool2dOp, gradPool<AvgPool2dOp>>(ctx);
  attach<GlobalAvgPoolOp, gradGlobalAvgPool>(ctx);
  attach<CrossEntropyOp, gradCrossEntropy>(ctx);
  attach<MoeGateOp, gradMoeGate>(ctx);
  attach<MoeDispatchOp, gradMoeDispatch>(ctx);
  attach<MoeCombineOp, gradMoeCombine>(ctx);
}

} // namespace cleave::autodiff
