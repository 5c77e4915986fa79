//===- VocabParallel.cpp - Local programs of vocabulary-split ops ---------===//
//
// Both expansions need this device's place in the group: a constant that
// counts the whole vocabulary, sliced by `shard_slice`, is this device's
// ids (the slice is where the runtime applies the device's coordinate). Ids
// are compared in f32, exact below 2^24 (every vocabulary in use).
//
//===----------------------------------------------------------------------===//

#include "VocabParallel.h"

#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using namespace cleave::graph;

namespace cleave::partition {

namespace {

RankedTensorType f32(OpBuilder &b, ArrayRef<int64_t> shape) {
  return RankedTensorType::get(shape, b.getF32Type());
}

Value scalarConstant(OpBuilder &b, Location loc, float v) {
  auto type = f32(b, {});
  return ConstantOp::create(b, loc, DenseElementsAttr::get(type, v));
}

/// This device's ids of a vocabulary of `whole` split over the group:
/// [g * whole / n, (g + 1) * whole / n) as f32.
Value localIds(OpBuilder &b, Location loc, int64_t whole, const Group &g) {
  std::vector<float> ids(whole);
  for (int64_t i = 0; i < whole; ++i)
    ids[i] = static_cast<float>(i);
  auto type = f32(b, {whole});
  Value all = ConstantOp::create(
      b, loc, DenseElementsAttr::get(type, ArrayRef<float>(ids)));
  return ShardSliceOp::create(b, loc, f32(b, {whole / g.size}), all, g.axes,
                              b.getI64IntegerAttr(g.size),
                              b.getI64IntegerAttr(0), /*zigzag=*/nullptr);
}

/// A scalar `v` of element type `type` (the table's, under mixed
/// precision): an f32 constant, cast where the type differs.
Value scalarOf(OpBuilder &b, Location loc, float v, Type type) {
  Value c = scalarConstant(b, loc, v);
  if (type.isF32())
    return c;
  return CastOp::create(b, loc, RankedTensorType::get({}, type), c);
}

Value reshapeTo(OpBuilder &b, Location loc, Value v,
                ArrayRef<int64_t> shape) {
  auto type = cast<RankedTensorType>(v.getType()).clone(shape);
  return ReshapeOp::create(b, loc, type, v);
}

Value allReduce(OpBuilder &b, Location loc, Value v, const Group &g,
                StringRef reduction) {
  return AllReduceOp::create(b, loc, v.getType(), v, g.axes,
                             b.getI64IntegerAttr(g.size),
                             b.getStringAttr(reduction));
}

} // namespace

Value expandRowParallelGather(OpBuilder &b, GatherOp gather, Value table,
                              Value indices, const Group &group) {
  Location loc = gather.getLoc();
  auto tableType = cast<RankedTensorType>(table.getType());
  auto idxType = cast<RankedTensorType>(indices.getType());
  int64_t rows = tableType.getDimSize(0);
  // The first row this device holds, as f32 [1]: the smallest of its ids.
  Value ids = localIds(b, loc, rows * group.size, group);
  Value first = ReduceMaxOp::create(
      b, loc, NegOp::create(b, loc, ids), b.getDenseI64ArrayAttr({0}),
      b.getUnitAttr());
  Value idsF = CastOp::create(b, loc, idxType.clone(b.getF32Type()), indices);
  // local = index - first row, held when it is already within
  // [0, rows - 1]; rows another device holds read a clamped row here and
  // are zeroed below.
  Value local = AddOp::create(b, loc, idsF, first);
  Value zero = scalarConstant(b, loc, 0.0f);
  Value clamped = MinOp::create(b, loc, MaxOp::create(b, loc, local, zero),
                                scalarConstant(b, loc, float(rows - 1)));
  Value held =
      CompareOp::create(b, loc, b.getStringAttr("eq"), clamped, local);
  Value localIdx = CastOp::create(b, loc, idxType, clamped);
  auto rowsType = cast<RankedTensorType>(gather.getType()).clone(
      [&] {
        SmallVector<int64_t> shape(idxType.getShape());
        for (int64_t d = 1; d < tableType.getRank(); ++d)
          shape.push_back(tableType.getDimSize(d));
        return shape;
      }());
  Value looked = GatherOp::create(b, loc, rowsType, table, localIdx,
                                  b.getI64IntegerAttr(0));
  // The mask [indices..., 1, ...] broadcasts over the rows' other dims.
  SmallVector<int64_t> maskShape(idxType.getShape());
  maskShape.append(tableType.getRank() - 1, 1);
  Value heldRows = reshapeTo(b, loc, held, maskShape);
  return WhereOp::create(b, loc, heldRows, looked,
                         scalarOf(b, loc, 0.0f, tableType.getElementType()));
}

Value expandClassParallelCrossEntropy(OpBuilder &b, CrossEntropyOp ce,
                                      Value logits, Value labels,
                                      const Group &group) {
  Location loc = ce.getLoc();
  auto type = cast<RankedTensorType>(logits.getType());
  int64_t rank = type.getRank(), classes = type.getDimSize(rank - 1);
  auto rowAxes = [&] {
    SmallVector<int64_t> axes;
    for (int64_t d = 0; d < rank - 1; ++d)
      axes.push_back(d);
    return b.getDenseI64ArrayAttr(axes);
  };
  DenseI64ArrayAttr classAxis = b.getDenseI64ArrayAttr({rank - 1});
  // The row maximum over every device's classes shifts the exponentials;
  // it cancels from the loss and its derivative, so no gradient goes back
  // through it (an all-reduce of the maximum has none).
  Value localMax = ReduceMaxOp::create(b, loc, logits, classAxis,
                                       b.getUnitAttr());
  Value max = StopGradientOp::create(
      b, loc, allReduce(b, loc, localMax, group, "max"));
  Value shifted = SubOp::create(b, loc, logits, max);
  Value sumExp = allReduce(
      b, loc,
      ReduceSumOp::create(b, loc, ExpOp::create(b, loc, shifted), classAxis,
                          UnitAttr()),
      group, "sum");
  // The target's shifted logit, from the device holding its class.
  auto labelType = cast<RankedTensorType>(labels.getType());
  Value labelsF =
      CastOp::create(b, loc, labelType.clone(b.getF32Type()), labels);
  SmallVector<int64_t> column(labelType.getShape());
  column.push_back(1);
  Value isTarget = CompareOp::create(
      b, loc, b.getStringAttr("eq"), reshapeTo(b, loc, labelsF, column),
      localIds(b, loc, classes * group.size, group));
  Value zero = scalarConstant(b, loc, 0.0f);
  Value target = allReduce(
      b, loc,
      ReduceSumOp::create(b, loc,
                          WhereOp::create(b, loc, isTarget, shifted, zero),
                          classAxis, UnitAttr()),
      group, "sum");
  // Mean over the labels that count: log(sum exp) - shifted target.
  Value perRow = SubOp::create(b, loc, LogOp::create(b, loc, sumExp), target);
  Value counts = CompareOp::create(
      b, loc, b.getStringAttr("ne"), labelsF,
      scalarConstant(b, loc, float(ce.getIgnoreIndex())));
  Value total = ReduceSumOp::create(
      b, loc, WhereOp::create(b, loc, counts, perRow, zero), rowAxes(),
      UnitAttr());
  Value count = ReduceSumOp::create(
      b, loc,
      WhereOp::create(b, loc, counts, scalarConstant(b, loc, 1.0f), zero),
      rowAxes(), UnitAttr());
  Value loss = DivOp::create(
      b, loc, total, MaxOp::create(b, loc, count, scalarConstant(b, loc, 1.0f)));
  if (loss.getType() != ce.getType())
    loss = CastOp::create(b, loc, ce.getType(), loss);
  return loss;
}

} // namespace cleave::partition
