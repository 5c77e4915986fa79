//===- GraphCollectiveOps.cpp - Verifiers of the communication ops --------===//
//
// One rule checks every collective: the result is the input with one
// dimension multiplied (gather) or divided (scatter, slice) by the group
// size, or moved between two dimensions (all-to-all).
//
//===----------------------------------------------------------------------===//

#include "cleave/Dialect/Graph/IR/GraphOps.h"

using namespace mlir;
using namespace cleave::graph;

namespace {

LogicalResult verifyGroup(Operation *op, ArrayAttr axes, int64_t groupSize) {
  if (axes.empty())
    return op->emitOpError("needs at least one mesh axis");
  if (groupSize < 1)
    return op->emitOpError("group size must be positive, got ") << groupSize;
  return success();
}

LogicalResult verifyDim(Operation *op, StringRef what, int64_t dim,
                        int64_t rank) {
  if (dim < 0 || dim >= rank)
    return op->emitOpError() << what << " " << dim
                             << " is out of range for rank " << rank;
  return success();
}

/// `result` equals `input` except dimension `dim`, which is `input`'s times
/// `num` over `den`.
LogicalResult verifyScaledDim(Operation *op, RankedTensorType input,
                              RankedTensorType result, int64_t dim,
                              int64_t num, int64_t den) {
  if (failed(verifyDim(op, "dim", dim, input.getRank())))
    return failure();
  if (input.getElementType() != result.getElementType() ||
      input.getRank() != result.getRank())
    return op->emitOpError("result ")
           << result << " must have the input's rank and element type";
  if (input.getDimSize(dim) * num % den != 0)
    return op->emitOpError("dimension ")
           << dim << " of size " << input.getDimSize(dim)
           << " is not divisible by the group size " << den;
  for (int64_t d = 0; d < input.getRank(); ++d) {
    int64_t expected = d == dim ? input.getDimSize(d) * num / den
                                : input.getDimSize(d);
    if (result.getDimSize(d) != expected)
      return op->emitOpError("result dimension ")
             << d << " is " << result.getDimSize(d) << ", expected "
             << expected;
  }
  return success();
}

RankedTensorType ranked(Value v) { return cast<RankedTensorType>(v.getType()); }

} // namespace

LogicalResult AllReduceOp::verify() {
  if (getReduction() != "sum" && getReduction() != "mean" &&
      getReduction() != "max")
    return emitOpError("unknown reduction '")
           << getReduction() << "' (expected sum, mean or max)";
  return verifyGroup(*this, getAxes(), getGroupSize());
}

LogicalResult AllGatherOp::verify() {
  if (failed(verifyGroup(*this, getAxes(), getGroupSize())))
    return failure();
  return verifyScaledDim(*this, ranked(getInput()), ranked(getResult()),
                         getDim(), getGroupSize(), 1);
}

LogicalResult ReduceScatterOp::verify() {
  if (failed(verifyGroup(*this, getAxes(), getGroupSize())))
    return failure();
  return verifyScaledDim(*this, ranked(getInput()), ranked(getResult()),
                         getDim(), 1, getGroupSize());
}

LogicalResult ShardSliceOp::verify() {
  if (failed(verifyGroup(*this, getAxes(), getGroupSize())) ||
      failed(verifyScaledDim(*this, ranked(getInput()), ranked(getResult()),
                             getDim(), 1, getGroupSize())))
    return failure();
  int64_t size = ranked(getInput()).getDimSize(getDim());
  if (getZigzag() && size % (2 * getGroupSize()) != 0)
    return emitOpError("zigzag cuts dimension ")
           << getDim() << " into " << 2 * getGroupSize()
           << " chunks, but its size " << size << " does not divide by that";
  return success();
}

Value ShardSliceOp::reorderZigzag(OpBuilder &b, Location loc, Value whole,
                                  int64_t dim, int64_t groupSize,
                                  bool toBlocks) {
  auto type = cast<RankedTensorType>(whole.getType());
  int64_t length = type.getDimSize(dim), chunks = 2 * groupSize;
  int64_t chunk = length / chunks;
  // Device g's block is chunk g then chunk 2n - 1 - g: slot s of the
  // blocks laid end to end holds chunk s / 2 (s even) or 2n - 1 - s / 2.
  auto chunkAt = [&](int64_t slot) {
    return slot % 2 == 0 ? slot / 2 : chunks - 1 - slot / 2;
  };
  SmallVector<int64_t> slotOf(chunks);
  for (int64_t s = 0; s < chunks; ++s)
    slotOf[chunkAt(s)] = s;
  SmallVector<int64_t> indices(length);
  for (int64_t i = 0; i < length; ++i) {
    int64_t c = i / chunk, o = i % chunk;
    indices[i] = (toBlocks ? chunkAt(c) : slotOf[c]) * chunk + o;
  }
  auto indexType = RankedTensorType::get({length}, b.getI64Type());
  Value index = ConstantOp::create(
      b, loc, DenseElementsAttr::get(indexType, ArrayRef<int64_t>(indices)));
  return GatherOp::create(b, loc, whole, index, dim);
}

LogicalResult CopyToGroupOp::verify() {
  return verifyGroup(*this, getAxes(), getGroupSize());
}

LogicalResult AllToAllOp::verify() {
  if (failed(verifyGroup(*this, getAxes(), getGroupSize())))
    return failure();
  RankedTensorType input = ranked(getInput()), result = ranked(getResult());
  int64_t n = getGroupSize(), split = getSplitDim(), concat = getConcatDim();
  if (failed(verifyDim(*this, "split dim", split, input.getRank())) ||
      failed(verifyDim(*this, "concat dim", concat, input.getRank())))
    return failure();
  if (split == concat)
    return emitOpError("split and concat dims must differ");
  if (input.getDimSize(split) % n != 0)
    return emitOpError("split dimension ")
           << split << " of size " << input.getDimSize(split)
           << " is not divisible by the group size " << n;
  SmallVector<int64_t> expected(input.getShape());
  expected[split] /= n;
  expected[concat] *= n;
  if (result.getShape() != ArrayRef<int64_t>(expected) ||
      result.getElementType() != input.getElementType())
    return emitOpError("result ")
           << result << " does not match the input re-split, expected "
           << RankedTensorType::get(expected, input.getElementType());
  return success();
}

static LogicalResult verifyPeer(Operation *op, StringRef axis, int64_t offset) {
  if (axis.empty())
    return op->emitOpError("needs a mesh axis");
  if (offset == 0)
    return op->emitOpError("offset must not be zero (a device cannot send to "
                           "itself)");
  return success();
}

LogicalResult SendOp::verify() { return verifyPeer(*this, getAxis(), getOffset()); }
LogicalResult RecvOp::verify() { return verifyPeer(*this, getAxis(), getOffset()); }
