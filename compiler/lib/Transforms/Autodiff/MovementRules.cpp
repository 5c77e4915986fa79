//===- MovementRules.cpp - Derivatives of data movement and reductions ----===//

#include "GradientBuilders.h"

using namespace mlir;
using namespace cleave::graph;

namespace cleave::autodiff {

namespace {

LogicalResult gradGather(GatherOp op, OpBuilder &b, ValueRange dys,
                         SmallVectorImpl<Value> &dxs) {
  dxs.push_back(GatherGradOp::create(b, op.getLoc(), op.getData().getType(),
                                     dys[0], op.getIndices(),
                                     op.getAxisAttr()));
  dxs.push_back(Value());
  return success();
}

/// A scatter-add read back: each scattered element's gradient is the
/// output gradient at its index (ONNX's MaxUnpool imports as one).
LogicalResult gradGatherGrad(GatherGradOp op, OpBuilder &b, ValueRange dys,
                             SmallVectorImpl<Value> &dxs) {
  dxs.push_back(GatherOp::create(b, op.getLoc(), op.getGrad().getType(),
                                 dys[0], op.getIndices(), op.getAxisAttr()));
  dxs.push_back(Value());
  return success();
}

LogicalResult gradReshape(ReshapeOp op, OpBuilder &b, ValueRange dys,
                          SmallVectorImpl<Value> &dxs) {
  dxs.push_back(
      ReshapeOp::create(b, op.getLoc(), op.getInput().getType(), dys[0]));
  return success();
}

LogicalResult gradBroadcastTo(BroadcastToOp op, OpBuilder &b, ValueRange dys,
                              SmallVectorImpl<Value> &dxs) {
  dxs.push_back(reduceTo(b, op.getLoc(), dys[0], op.getInput().getType()));
  return success();
}

LogicalResult gradTranspose(TransposeOp op, OpBuilder &b, ValueRange dys,
                            SmallVectorImpl<Value> &dxs) {
  ArrayRef<int64_t> perm = op.getPermutation();
  SmallVector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    inverse[perm[i]] = i;
  dxs.push_back(TransposeOp::create(b, op.getLoc(), dys[0], inverse));
  return success();
}

LogicalResult gradSlice(SliceOp op, OpBuilder &b, ValueRange dys,
                        SmallVectorImpl<Value> &dxs) {
  dxs.push_back(SliceGradOp::create(b, op.getLoc(), op.getInput().getType(),
                                    dys[0], op.getStartsAttr(),
                                    op.getStridesAttr()));
  return success();
}

LogicalResult gradConcat(ConcatOp op, OpBuilder &b, ValueRange dys,
                         SmallVectorImpl<Value> &dxs) {
  auto type = cast<RankedTensorType>(op.getType());
  int64_t axis = op.getAxis(), offset = 0;
  for (Value input : op.getInputs()) {
    int64_t size = cast<RankedTensorType>(input.getType()).getDimSize(axis);
    SmallVector<int64_t> starts(type.getRank(), 0), limits(type.getShape()),
        strides(type.getRank(), 1);
    starts[axis] = offset;
    limits[axis] = offset + size;
    dxs.push_back(
        SliceOp::create(b, op.getLoc(), dys[0], starts, limits, strides));
    offset += size;
  }
  return success();
}

LogicalResult gradSplit(SplitOp op, OpBuilder &b, ValueRange dys,
                        SmallVectorImpl<Value> &dxs) {
  // Pieces that received no gradient contribute zeros.
  SmallVector<Value> pieces;
  for (auto [result, dy] : llvm::zip(op.getResults(), dys))
    pieces.push_back(dy ? dy : splat(b, op.getLoc(), result.getType(), 0.0));
  dxs.push_back(ConcatOp::create(b, op.getLoc(), pieces, op.getAxisAttr()));
  return success();
}

/// The gradient of a sum or mean reaches every reduced element.
template <typename OpT>
LogicalResult gradReduceSumMean(OpT op, OpBuilder &b, ValueRange dys,
                                SmallVectorImpl<Value> &dxs) {
  Location loc = op.getLoc();
  auto in = cast<RankedTensorType>(op.getInput().getType());
  SmallVector<int64_t> kept(in.getShape());
  int64_t count = 1;
  for (int64_t axis : op.getAxes()) {
    count *= kept[axis];
    kept[axis] = 1;
  }
  Value dy = dys[0];
  auto keptType = in.clone(kept);
  if (dy.getType() != keptType)
    dy = ReshapeOp::create(b, loc, keptType, dy);
  Value dx = BroadcastToOp::create(b, loc, in, dy);
  if (std::is_same_v<OpT, ReduceMeanOp>)
    dx = MulOp::create(b, loc, dx,
                       scalar(b, loc, in.getElementType(), 1.0 / double(count)));
  dxs.push_back(dx);
  return success();
}

LogicalResult gradReduceMax(ReduceMaxOp op, OpBuilder &b, ValueRange dys,
                            SmallVectorImpl<Value> &dxs) {
  dxs.push_back(ReduceMaxGradOp::create(
      b, op.getLoc(), op.getInput().getType(), op.getInput(), dys[0],
      op.getAxesAttr(), op.getKeepdimsAttr()));
  return success();
}

} // namespace

void attachMovementRules(MLIRContext *ctx) {
  attach<GatherOp, gradGather>(ctx);
  attach<GatherGradOp, gradGatherGrad>(ctx);
  attach<ReshapeOp, gradReshape>(ctx);
  attach<BroadcastToOp, gradBroadcastTo>(ctx);
  attach<TransposeOp, gradTranspose>(ctx);
  attach<SliceOp, gradSlice>(ctx);
  attach<ConcatOp, gradConcat>(ctx);
  attach<SplitOp, gradSplit>(ctx);
  attach<ReduceSumOp, gradReduceSumMean<ReduceSumOp>>(ctx);
  attach<ReduceMeanOp, gradReduceSumMean<ReduceMeanOp>>(ctx);
  attach<ReduceMaxOp, gradReduceMax>(ctx);
}

} // namespace cleave::autodiff
