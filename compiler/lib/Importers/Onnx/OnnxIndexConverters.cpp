//===- OnnxIndexConverters.cpp - ArgMax and ArgMin as graph ops -----------===//
//
// The index of the largest (smallest) element along an axis, written in
// graph ops that all have kernels on both backends, shape rules and
// sharding rules: the extreme by reduce_max, the positions equal to it by
// compare, their indices (an iota along the axis) kept by where, and the
// first of them by a maximum of the negated indices (the last, with
// select_last_index, by a maximum), cast to int64. Ties go to the first
// index as ONNX specifies. There is no gradient (the result is integers),
// as in any framework.
//
//===----------------------------------------------------------------------===//

#include "OnnxCompose.h"

#include "OnnxTensors.h"

using namespace mlir;
using namespace cleave::graph;

namespace cleave::onnx_import {
namespace {

LogicalResult convertArgExtreme(NodeContext &ctx, bool largest) {
  Chain c(ctx);
  Value x = c.input();
  if (!x)
    return failure();
  auto type = cast<RankedTensorType>(x.getType());
  FailureOr<int64_t> axis = ctx.getAxis(0, type.getRank());
  if (failed(axis))
    return failure();
  bool keepdims = ctx.getInt("keepdims", 1) != 0;
  bool last = ctx.getInt("select_last_index", 0) != 0;
  int64_t n = type.getDimSize(*axis);
  if (n <= 0)
    return ctx.emitError() << "axis " << *axis << " of " << type
                           << " is empty";
  // For ArgMin, the largest of -x.
  Value v = largest ? x : c.op<NegOp>(x);
  SmallVector<int64_t> axes{*axis};
  Value extreme = c.op<ReduceMaxOp>(v, ArrayRef<int64_t>(axes), true);
  Value hit = c.op<CompareOp>(StringAttr::get(x.getContext(), "eq"), v,
                              extreme);
  // Indices along the axis, [1, ..., n, ..., 1] (exact in f32 below 2^24).
  HostTensor iota;
  iota.dtype = onnx::TensorProto::FLOAT;
  iota.shape.assign(type.getRank(), 1);
  iota.shape[*axis] = n;
  for (int64_t i = 0; i < n; ++i)
    iota.floats.push_back(last ? double(i) : -double(i));
  Value indices = ctx.createConstant(iota);
  if (indices && cast<RankedTensorType>(indices.getType()).getElementType() !=
                     type.getElementType())
    indices = c.op<CastOp>(RankedTensorType::get(iota.shape,
                                                 type.getElementType()),
                           indices);
  // Positions that are not the extreme lose to every index: -n below the
  // smallest of -i (first) or of i (last).
  Value kept = c.op<WhereOp>(hit, indices, c.scalar(x, -double(n)));
  Value found = c.op<ReduceMaxOp>(kept, ArrayRef<int64_t>(axes), keepdims);
  if (!last)
    found = c.op<NegOp>(found);
  if (!found)
    return failure();
  auto foundType = cast<RankedTensorType>(found.getType());
  return c.result(c.op<CastOp>(
      RankedTensorType::get(foundType.getShape(),
                            IntegerType::get(x.getContext(), 64)),
      found));
}

LogicalResult convertArgMax(NodeContext &ctx) {
  return convertArgExtreme(ctx, /*largest=*/true);
}
LogicalResult convertArgMin(NodeContext &ctx) {
  return convertArgExtreme(ctx, /*largest=*/false);
}

} // namespace

void addIndexConverters(ConverterTable &table) {
  table.add("ArgMax", convertArgMax);
  table.add("ArgMin", convertArgMin);
}

} // namespace cleave::onnx_import
