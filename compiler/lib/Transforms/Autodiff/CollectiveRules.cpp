//===- CollectiveRules.cpp - Derivatives of the communication ops ---------===//
//
// The rules keep GraphCollectiveOps.td's invariant: a gradient of a value
// replicated over a group is the same on every device of the group.
// send and recv have none: the stage training-step builder pairs them
// (an activation sent forward gets its gradient received back).
//
//===----------------------------------------------------------------------===//

#include "GradientBuilders.h"

using namespace mlir;
using namespace cleave::graph;

namespace cleave::autodiff {

namespace {

LogicalResult gradAllReduce(AllReduceOp op, OpBuilder &b, ValueRange dys,
                            SmallVectorImpl<Value> &dxs) {
  if (op.getReduction() == "max")
    return op.emitOpError("an all-reduce of the maximum has no gradient");
  Value dx = dys[0];
  if (op.getReduction() == "mean")
    dx = MulOp::create(b, op.getLoc(), dx,
                       scalar(b, op.getLoc(), elementTypeOf(dx),
                              1.0 / double(op.getGroupSize())));
  dxs.push_back(dx);
  return success();
}

LogicalResult gradAllGather(AllGatherOp op, OpBuilder &b, ValueRange dys,
                            SmallVectorImpl<Value> &dxs) {
  Type type = op.getInput().getType();
  if (op.getVaryingGrad())
    dxs.push_back(ReduceScatterOp::create(b, op.getLoc(), type, dys[0],
                                          op.getAxesAttr(),
                                          op.getGroupSizeAttr(),
                                          op.getDimAttr()));
  else
    dxs.push_back(ShardSliceOp::create(b, op.getLoc(), type, dys[0],
                                       op.getAxesAttr(), op.getGroupSizeAttr(),
                                       op.getDimAttr(), /*zigzag=*/nullptr));
  return success();
}

LogicalResult gradReduceScatter(ReduceScatterOp op, OpBuilder &b,
                                ValueRange dys, SmallVectorImpl<Value> &dxs) {
  dxs.push_back(AllGatherOp::create(b, op.getLoc(), op.getInput().getType(),
                                    dys[0], op.getAxesAttr(),
                                    op.getGroupSizeAttr(), op.getDimAttr(),
                                    /*varying_grad=*/nullptr));
  return success();
}

LogicalResult gradAllToAll(AllToAllOp op, OpBuilder &b, ValueRange dys,
                           SmallVectorImpl<Value> &dxs) {
  dxs.push_back(AllToAllOp::create(b, op.getLoc(), op.getInput().getType(),
                                   dys[0], op.getAxesAttr(),
                                   op.getGroupSizeAttr(),
                                   op.getConcatDimAttr(),
                                   op.getSplitDimAttr()));
  return success();
}

LogicalResult gradShardSlice(ShardSliceOp op, OpBuilder &b, ValueRange dys,
                             SmallVectorImpl<Value> &dxs) {
  Value whole = AllGatherOp::create(b, op.getLoc(), op.getInput().getType(),
                                    dys[0], op.getAxesAttr(),
                                    op.getGroupSizeAttr(), op.getDimAttr(),
                                    /*varying_grad=*/nullptr);
  // Zig-zag blocks gathered end to end: the chunks back in order.
  if (op.getZigzag())
    whole = ShardSliceOp::reorderZigzag(b, op.getLoc(), whole, op.getDim(),
                                        op.getGroupSize(), /*toBlocks=*/false);
  dxs.push_back(whole);
  return success();
}

LogicalResult gradCopyToGroup(CopyToGroupOp op, OpBuilder &b, ValueRange dys,
                              SmallVectorImpl<Value> &dxs) {
  auto sum = AllReduceOp::create(b, op.getLoc(), dys[0].getType(), dys[0],
                                 op.getAxesAttr(), op.getGroupSizeAttr(),
                                 b.getStringAttr("sum"));
  // A parameter's gradient summed over the group: the lowering may defer
  // the sum to the step's data-parallel buckets or ZeRO's reduce-scatter
  // (it is linear, so the microbatches' partial gradients can be
  // accumulated first). Under mixed precision the copy reads the
  // parameter's 16-bit cast.
  Value input = op.getInput();
  if (auto narrow = input.getDefiningOp<CastOp>())
    input = narrow.getInput();
  if (input.getDefiningOp<ParamOp>())
    sum->setAttr("cleave.parameter_gradient", b.getUnitAttr());
  dxs.push_back(sum);
  return success();
}

} // namespace

void attachCollectiveRules(MLIRContext *ctx) {
  attach<AllReduceOp, gradAllReduce>(ctx);
  attach<AllGatherOp, gradAllGather>(ctx);
  attach<ReduceScatterOp, gradReduceScatter>(ctx);
  attach<AllToAllOp, gradAllToAll>(ctx);
  attach<ShardSliceOp, gradShardSlice>(ctx);
  attach<CopyToGroupOp, gradCopyToGroup>(ctx);
}

} // namespace cleave::autodiff
