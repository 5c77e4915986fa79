//===- OnnxIndexConverters.cpp - Index arithmetic as graph ops ------------===//
//
// ArgMax and ArgMin: the index of the largest (smallest) element along an
// axis, written in
// graph ops that all have kernels on both backends, shape rules and
// sharding rules: the extreme by reduce_max, the positions equal to it by
// compare, their indices (an iota along the axis) kept by where, and the
// first of them by a maximum of the negated indices (the last, with
// select_last_index, by a maximum), cast to int64. Ties go to the first
// index as ONNX specifies. There is no gradient (the result is integers),
// as in any framework. Hardmax is the same chain compared with the index
// it finds: 1 at the first largest element, 0 elsewhere; TopK is k passes
// of it, each masking out what it took.
//
// GatherElements, GatherND, ScatterElements and ScatterND with indices
// known at import (as exporters give them: Swin's window shifts, fixed
// permutations): the source element of every output element is computed
// then, and the op becomes one graph.gather of the flattened source by that
// constant map (a scatter selects by a constant mask between the gathered
// updates and the data). Both have gradients (gather's is a scatter-add,
// where's a selection), so these ops train and shard like them.
//
//===----------------------------------------------------------------------===//

#include "OnnxCompose.h"

#include "OnnxTensors.h"

#include <cmath>

using namespace mlir;
using namespace cleave::graph;

namespace cleave::onnx_import {
namespace {

/// Where x's extreme along `axis` lies: `kept` holds -i at the positions
/// of the extreme (i if `last`) and -n elsewhere; `found`, its maximum
/// along the axis (kept as a dimension of 1 when `keepdims`), names the
/// first (last) of them. Null after an error.
struct Extreme {
  Value kept, found;
};
Extreme locateExtreme(NodeContext &ctx, Chain &c, Value x, int64_t axis,
                      bool largest, bool last, bool keepdims) {
  auto type = cast<RankedTensorType>(x.getType());
  int64_t n = type.getDimSize(axis);
  if (n <= 0) {
    ctx.emitError() << "axis " << axis << " of " << type << " is empty";
    return {};
  }
  // For ArgMin, the largest of -x.
  Value v = largest ? x : c.op<NegOp>(x);
  SmallVector<int64_t> axes{axis};
  Value extreme = c.op<ReduceMaxOp>(v, ArrayRef<int64_t>(axes), true);
  Value hit = c.op<CompareOp>(StringAttr::get(x.getContext(), "eq"), v,
                              extreme);
  // Indices along the axis, [1, ..., n, ..., 1] (exact in f32 below 2^24).
  HostTensor iota;
  iota.dtype = onnx::TensorProto::FLOAT;
  iota.shape.assign(type.getRank(), 1);
  iota.shape[axis] = n;
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
  return {kept, c.op<ReduceMaxOp>(kept, ArrayRef<int64_t>(axes), keepdims)};
}

LogicalResult convertArgExtreme(NodeContext &ctx, bool largest) {
  Chain c(ctx);
  Value x = c.input();
  if (!x)
    return failure();
  auto type = cast<RankedTensorType>(x.getType());
  FailureOr<int64_t> axis = ctx.getAxis(0, type.getRank());
  if (failed(axis))
    return failure();
  bool last = ctx.getInt("select_last_index", 0) != 0;
  Value found = locateExtreme(ctx, c, x, *axis, largest, last,
                              ctx.getInt("keepdims", 1) != 0)
                    .found;
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

/// Hardmax: 1 at the first largest element along the axis, 0 elsewhere
/// (the positions ArgMax's chain keeps, compared with the one it finds).
LogicalResult convertHardmax(NodeContext &ctx) {
  Chain c(ctx);
  Value x = c.input();
  if (!x)
    return failure();
  FailureOr<int64_t> axis =
      ctx.getAxis(-1, cast<RankedTensorType>(x.getType()).getRank());
  if (failed(axis))
    return failure();
  Extreme e = locateExtreme(ctx, c, x, *axis, /*largest=*/true,
                            /*last=*/false, /*keepdims=*/true);
  Value first = c.op<CompareOp>(StringAttr::get(x.getContext(), "eq"), e.kept,
                                e.found);
  return c.result(
      c.op<WhereOp>(first, c.scalar(x, 1.0), c.scalar(x, 0.0)));
}

/// The most passes TopK is composed of (one ArgMax chain each).
constexpr int64_t kMaxTopK = 64;

/// TopK of a k known at import: k passes of ArgMax's chain, each taking the
/// first extreme left and masking it out (+-infinity), the values and
/// indices concatenated along the axis, largest (smallest) first, ties to
/// the lower index as ONNX specifies. The values have the gradient of the
/// selections; the indices, integers, none.
LogicalResult convertTopK(NodeContext &ctx) {
  Chain c(ctx);
  Value x = c.input();
  if (!x)
    return failure();
  auto type = cast<RankedTensorType>(x.getType());
  FailureOr<int64_t> axis = ctx.getAxis(-1, type.getRank());
  FailureOr<Shape> ks = ctx.getConstantInts(1, "k");
  if (failed(axis) || failed(ks))
    return failure();
  int64_t k = ks->empty() ? -1 : (*ks)[0];
  if (ks->size() != 1 || k < 1 || k > type.getDimSize(*axis))
    return ctx.emitError() << "k must be one value in [1, "
                           << type.getDimSize(*axis) << "]";
  if (k > kMaxTopK)
    return ctx.emitError() << "k = " << k << ": TopK is composed of k "
                           << "passes over the input, at most " << kMaxTopK;
  if (ctx.getInt("sorted", 1) == 0)
    return ctx.emitError() << "sorted = 0 is not supported";
  bool largest = ctx.getInt("largest", 1) != 0;
  SmallVector<int64_t> axes{*axis};
  SmallVector<Value> values, indices;
  Value left = x;
  Value masked = c.scalar(x, largest ? -INFINITY : INFINITY);
  for (int64_t i = 0; i < k && left; ++i) {
    Extreme e = locateExtreme(ctx, c, left, *axis, largest, /*last=*/false,
                              /*keepdims=*/true);
    Value value =
        largest ? c.op<ReduceMaxOp>(left, ArrayRef<int64_t>(axes), true)
                : c.op<NegOp>(c.op<ReduceMaxOp>(
                      c.op<NegOp>(left), ArrayRef<int64_t>(axes), true));
    values.push_back(value);
    indices.push_back(c.op<NegOp>(e.found));
    Value first = c.op<CompareOp>(StringAttr::get(x.getContext(), "eq"),
                                  e.kept, e.found);
    left = c.op<WhereOp>(first, masked, left);
  }
  if (!left || llvm::is_contained(values, Value()) ||
      llvm::is_contained(indices, Value()))
    return failure();
  auto join = [&](SmallVector<Value> parts) {
    return parts.size() == 1
               ? parts.front()
               : compose<ConcatOp>(ctx, ValueRange(parts), *axis);
  };
  Value index = join(indices);
  if (!index)
    return failure();
  auto indexType = cast<RankedTensorType>(index.getType());
  if (failed(ctx.setResult(0, join(values))))
    return failure();
  return ctx.setResult(
      1, c.op<CastOp>(RankedTensorType::get(indexType.getShape(),
                                            IntegerType::get(x.getContext(), 64)),
                      index));
}

LogicalResult convertArgMax(NodeContext &ctx) {
  return convertArgExtreme(ctx, /*largest=*/true);
}
LogicalResult convertArgMin(NodeContext &ctx) {
  return convertArgExtreme(ctx, /*largest=*/false);
}

Shape stridesOf(ArrayRef<int64_t> shape) {
  Shape strides(shape.size(), 1);
  for (int64_t d = int64_t(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

/// Coordinates of flat element `e` of `shape`.
Shape coordsOf(int64_t e, ArrayRef<int64_t> shape) {
  Shape coords(shape.size());
  for (int64_t d = int64_t(shape.size()) - 1; d >= 0; --d) {
    coords[d] = shape[d] ? e % shape[d] : 0;
    e = shape[d] ? e / shape[d] : 0;
  }
  return coords;
}

/// The constant integer indices (input `i`); null after an error.
const HostTensor *indicesOf(NodeContext &ctx, unsigned i) {
  const HostTensor *idx = ctx.getConstant(i);
  if (!idx || idx->isFloat()) {
    ctx.emitError() << "the indices must be integers known at import time";
    return nullptr;
  }
  return idx;
}

/// An index in [-dim, dim) as a non-negative one, or an error.
FailureOr<int64_t> normalized(NodeContext &ctx, int64_t index, int64_t dim) {
  if (index < -dim || index >= dim) {
    ctx.emitError() << "index " << index << " is out of range for a dimension "
                    << "of " << dim;
    return failure();
  }
  return index < 0 ? index + dim : index;
}

/// A scatter's result: the data (input 0) with the updates (input 2)
/// written where `writes` say, (target element, update element) in the
/// order the node lists them, combined by `reduction`: "none" (the last
/// write stands), "add" or "mul" (every write to an element combines with
/// it). Computed at import when both are known (Swin's attention mask,
/// built from shapes); else, per level of repeated targets (the k-th write
/// to each element), one gather of the updates and a where.
LogicalResult scatterByMap(NodeContext &ctx,
                           const std::vector<std::pair<int64_t, int64_t>> &writes,
                           StringRef reduction) {
  RankedTensorType dataType = ctx.getType(0);
  int64_t n = dataType.getNumElements();
  // levels[k]: the k-th write to each element (-1: none); with "none"
  // only the last write, as one level.
  std::vector<std::vector<int64_t>> levels;
  std::vector<int64_t> hits(n, 0);
  for (auto [target, source] : writes) {
    int64_t level = reduction == "none" ? 0 : hits[target]++;
    if (int64_t(levels.size()) <= level)
      levels.emplace_back(n, -1);
    levels[level][target] = source;
  }
  const HostTensor *knownData = ctx.getConstant(0);
  const HostTensor *knownUpdates = knownData ? ctx.getConstant(2) : nullptr;
  if (knownUpdates && knownUpdates->isFloat() == knownData->isFloat()) {
    HostTensor out = *knownData;
    for (const std::vector<int64_t> &map : levels)
      for (int64_t e = 0; e < n; ++e) {
        if (map[e] < 0)
          continue;
        if (reduction == "none") {
          out.copyElement(e, *knownUpdates, map[e]);
        } else if (out.isFloat()) {
          double u = knownUpdates->floats[map[e]];
          out.floats[e] = reduction == "add" ? out.floats[e] + u
                                             : out.floats[e] * u;
        } else {
          int64_t u = knownUpdates->ints[map[e]];
          out.ints[e] = reduction == "add" ? out.ints[e] + u : out.ints[e] * u;
        }
      }
    return ctx.setResult(0, std::move(out));
  }
  Value acc = floatOperand(ctx, 0, "the data");
  Value updates = acc ? floatOperand(ctx, 2, "the updates") : Value();
  if (!updates)
    return failure();
  Chain c(ctx);
  for (const std::vector<int64_t> &map : levels) {
    std::vector<int64_t> clamped(map);
    HostTensor keep;
    keep.dtype = onnx::TensorProto::BOOL;
    keep.shape.assign(dataType.getShape().begin(), dataType.getShape().end());
    keep.ints.resize(n);
    for (int64_t e = 0; e < n; ++e) {
      keep.ints[e] = map[e] >= 0;
      clamped[e] = std::max<int64_t>(map[e], 0);
    }
    Value gathered = gatherByMap(ctx, updates, clamped, dataType.getShape());
    Value mask = ctx.createConstant(keep);
    if (reduction == "none")
      acc = c.op<WhereOp>(mask, gathered, acc);
    else if (reduction == "add")
      acc = c.add(acc, c.op<WhereOp>(mask, gathered, c.scalar(acc, 0.0)));
    else
      acc = c.mul(acc, c.op<WhereOp>(mask, gathered, c.scalar(acc, 1.0)));
  }
  return c.result(acc);
}

/// GatherElements' and ScatterElements' addressing: for every element of
/// `idx` (the data's rank), the flat address in the data of `type` it
/// names, its coordinate along the node's `axis` replaced by the index.
FailureOr<std::vector<int64_t>> elementAddresses(NodeContext &ctx,
                                                 const HostTensor &idx,
                                                 RankedTensorType type) {
  FailureOr<int64_t> axisOr = ctx.getAxis(0, type.getRank());
  if (failed(axisOr))
    return failure();
  int64_t axis = *axisOr;
  if (int64_t(idx.shape.size()) != type.getRank())
    return ctx.emitError() << "indices must have the data's rank";
  Shape strides = stridesOf(type.getShape());
  std::vector<int64_t> addresses(idx.size());
  for (int64_t e = 0; e < idx.size(); ++e) {
    Shape at = coordsOf(e, idx.shape);
    FailureOr<int64_t> i = normalized(ctx, idx.getInt(e), type.getDimSize(axis));
    if (failed(i))
      return failure();
    at[axis] = *i;
    int64_t flat = 0;
    for (int64_t d = 0; d < type.getRank(); ++d)
      flat += at[d] * strides[d];
    addresses[e] = flat;
  }
  return addresses;
}

/// Output `shape` of a gather whose element e is element map[e] of the
/// flattened data (input 0): computed at import when the data is known
/// (shape arithmetic), else one graph.gather.
LogicalResult setGathered(NodeContext &ctx, const std::vector<int64_t> &map,
                          ArrayRef<int64_t> shape) {
  if (const HostTensor *known = ctx.getConstant(0)) {
    HostTensor out = HostTensor::zeros(known->dtype, shape);
    for (int64_t e = 0; e < out.size(); ++e)
      out.copyElement(e, *known, map[e]);
    return ctx.setResult(0, std::move(out));
  }
  // Gathers move elements of any type (kernels by element width).
  Value data = ctx.getValue(0, ParamUse::Frozen);
  Value y = data ? gatherByMap(ctx, data, map, shape) : Value();
  return y ? ctx.setResult(0, y) : failure();
}

/// MaxUnpool: the pooled values put back where MaxPool's Indices (flat
/// positions in the unpooled [N, C, spatial...], computed at run time)
/// say, zero elsewhere: one scatter-add into zeros (graph.gather_grad).
/// Overlapping windows can name one position twice, with the same value:
/// the sums are divided by the times each position was named.
LogicalResult convertMaxUnpool(NodeContext &ctx) {
  Chain c(ctx);
  Value x = floatOperand(ctx, 0, "the input");
  Value indices = x ? ctx.getValue(1, ParamUse::Frozen) : Value();
  if (!indices)
    return failure();
  Shape in = shapeOf(x);
  if (in.size() < 3 || shapeOf(indices) != in)
    return ctx.emitError() << "needs an input [N, C, spatial...] and indices "
                              "of its shape, got "
                           << shapeToString(in) << " and "
                           << shapeToString(shapeOf(indices));
  size_t k = in.size() - 2;
  // The unpooled shape the indices address, by the window attributes.
  std::optional<Shape> kernel = ctx.getInts("kernel_shape");
  Shape strides = ctx.getInts("strides").value_or(Shape(k, 1));
  Shape pads = ctx.getInts("pads").value_or(Shape(2 * k, 0));
  if (!kernel || kernel->size() != k || strides.size() != k ||
      pads.size() != 2 * k)
    return ctx.emitError() << "needs kernel_shape, strides and pads of " << k
                           << " spatial axes";
  Shape unpooled = {in[0], in[1]};
  for (size_t a = 0; a < k; ++a)
    unpooled.push_back((in[a + 2] - 1) * strides[a] + (*kernel)[a] - pads[a] -
                       pads[a + k]);
  Shape out = unpooled;
  if (ctx.hasInput(2)) {
    FailureOr<Shape> given = ctx.getConstantInts(2, "output_shape");
    if (failed(given))
      return failure();
    out = *given;
    if (out.size() != in.size() || out[0] != in[0] || out[1] != in[1])
      return ctx.emitError() << "output_shape " << shapeToString(out)
                             << " does not keep the input's [N, C] of "
                             << shapeToString(in);
    for (size_t a = 2; a < out.size(); ++a)
      if (out[a] < unpooled[a])
        return ctx.emitError() << "output_shape " << shapeToString(out)
                               << " is smaller than the unpooled "
                               << shapeToString(unpooled);
  }
  int64_t total = product(out);
  Value flatX = ctx.reshape(x, {product(in)}).value_or(Value());
  Type i64 = IntegerType::get(ctx.getContext(), 64);
  Value flatI = castTo(ctx, ctx.reshape(indices, {product(in)}).value_or(Value()), i64);
  if (!flatX || !flatI)
    return failure();
  if (out != unpooled) {
    // The indices address the unpooled shape: each position's coordinates
    // re-addressed in the (larger) output_shape, as ONNX's reference does.
    auto constant = [&](int64_t v) { return c.scalar(flatI, double(v)); };
    int64_t fromPlane = product(ArrayRef<int64_t>(unpooled).drop_front(2));
    int64_t toPlane = product(ArrayRef<int64_t>(out).drop_front(2));
    Value nc = c.op<DivOp>(flatI, constant(fromPlane));
    Value moved = c.mul(nc, constant(toPlane));
    int64_t fromStride = 1, toStride = 1;
    for (size_t a = out.size(); a-- > 2;) {
      Value coord = c.op<DivOp>(flatI, constant(fromStride));
      coord = c.op<SubOp>(coord, c.mul(c.op<DivOp>(coord, constant(unpooled[a])),
                                       constant(unpooled[a])));
      moved = c.add(moved, c.mul(coord, constant(toStride)));
      fromStride *= unpooled[a];
      toStride *= out[a];
    }
    if (!(flatI = moved))
      return failure();
  }
  auto scatter = [&](Value v) -> Value {
    auto type = RankedTensorType::get({total}, cast<RankedTensorType>(v.getType()).getElementType());
    return compose<GatherGradOp>(ctx, type, v, flatI,
                                 IntegerAttr::get(IntegerType::get(ctx.getContext(), 64), 0));
  };
  Value sums = scatter(flatX);
  Value counts = scatter(ctx.createSplat(cast<RankedTensorType>(flatX.getType()), 1.0));
  Value y = c.op<DivOp>(sums, c.max(counts, c.scalar(counts, 1.0)));
  return c.result(y ? ctx.reshape(y, out).value_or(Value()) : Value());
}

/// Compress: the slices along `axis` (of the flattened input when there is
/// no axis) where the condition is true. The result's shape depends on
/// the condition, so it must be known at import; then this is one gather
/// by a map.
LogicalResult convertCompress(NodeContext &ctx) {
  RankedTensorType type = ctx.getType(0);
  if (!type || !type.hasStaticShape())
    return ctx.emitError() << "needs an input of known shape";
  const HostTensor *cond = ctx.getConstant(1);
  if (!cond)
    cond = ctx.getImportValue(1);
  if (!cond || cond->isFloat() || cond->shape.size() != 1)
    return ctx.emitError() << "the condition must be a 1-D bool tensor known "
                              "at import time (the result's shape depends on "
                              "it)";
  Shape shape(type.getShape().begin(), type.getShape().end());
  int64_t axis = 0;
  if (ctx.getAttr("axis")) {
    FailureOr<int64_t> a = ctx.getAxis(0, type.getRank());
    if (failed(a))
      return failure();
    axis = *a;
  } else {
    shape = {type.getNumElements()};
  }
  if (cond->size() > shape[axis])
    return ctx.emitError() << "the condition has " << cond->size()
                           << " values for an axis of " << shape[axis];
  std::vector<int64_t> kept;
  for (int64_t i = 0; i < cond->size(); ++i)
    if (cond->ints[i])
      kept.push_back(i);
  if (kept.empty())
    return ctx.emitError() << "the condition selects nothing (an empty "
                              "result)";
  int64_t inner = product(ArrayRef<int64_t>(shape).drop_front(axis + 1));
  int64_t n = static_cast<int64_t>(kept.size());
  Shape out = shape;
  out[axis] = n;
  std::vector<int64_t> map(product(out));
  for (int64_t e = 0; e < int64_t(map.size()); ++e) {
    int64_t i = e % inner, k = e / inner % n, outer = e / inner / n;
    map[e] = (outer * shape[axis] + kept[k]) * inner + i;
  }
  return setGathered(ctx, map, out);
}

/// ReverseSequence: in each batch entry b, the first sequence_lens[b]
/// steps along the time axis in reverse, the rest as they are; one gather
/// by a map computed at import (the lengths must be known then).
LogicalResult convertReverseSequence(NodeContext &ctx) {
  RankedTensorType type = ctx.getType(0);
  if (!type || !type.hasStaticShape() || type.getRank() < 2)
    return ctx.emitError() << "needs an input of at least two dimensions, "
                              "of known shape";
  int64_t batchAxis = ctx.getInt("batch_axis", 1);
  int64_t timeAxis = ctx.getInt("time_axis", 0);
  if (!((batchAxis == 0 && timeAxis == 1) ||
        (batchAxis == 1 && timeAxis == 0)))
    return ctx.emitError() << "batch_axis and time_axis must be 0 and 1, "
                              "either way round; got "
                           << batchAxis << " and " << timeAxis;
  FailureOr<Shape> lens = ctx.getConstantInts(1, "the sequence lengths");
  if (failed(lens))
    return failure();
  int64_t batch = type.getDimSize(batchAxis), time = type.getDimSize(timeAxis);
  if (int64_t(lens->size()) != batch)
    return ctx.emitError() << "sequence_lens has " << lens->size()
                           << " entries for a batch of " << batch;
  for (int64_t len : *lens)
    if (len < 0 || len > time)
      return ctx.emitError() << "sequence length " << len
                             << " is outside [0, " << time << "]";
  Shape shape(type.getShape());
  Shape strides(shape.size(), 1);
  for (int64_t d = int64_t(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  std::vector<int64_t> map(type.getNumElements());
  for (int64_t e = 0; e < int64_t(map.size()); ++e) {
    int64_t b = e / strides[batchAxis] % batch;
    int64_t t = e / strides[timeAxis] % time;
    int64_t len = (*lens)[b];
    int64_t from = t < len ? len - 1 - t : t;
    map[e] = e + (from - t) * strides[timeAxis];
  }
  return setGathered(ctx, map, shape);
}

LogicalResult convertGatherElements(NodeContext &ctx) {
  RankedTensorType type = ctx.getType(0);
  const HostTensor *idx = type ? indicesOf(ctx, 1) : nullptr;
  if (!idx)
    return failure();
  FailureOr<std::vector<int64_t>> map = elementAddresses(ctx, *idx, type);
  if (failed(map))
    return failure();
  return setGathered(ctx, *map, idx->shape);
}

/// GatherND's and ScatterND's addressing: for every index tuple (the last
/// axis of `idx`, after `batch` leading batch axes shared with `shape`),
/// the flat offset of the slice it selects in a tensor of `shape`, and that
/// slice's size.
FailureOr<std::pair<std::vector<int64_t>, int64_t>>
sliceOffsets(NodeContext &ctx, const HostTensor &idx, ArrayRef<int64_t> shape,
             int64_t batch) {
  int64_t rank = shape.size(), q = idx.shape.size();
  int64_t k = q ? idx.shape.back() : 0;
  if (q < 1 || k < 1 || batch + k > rank || batch > q - 1)
    return ctx.emitError() << "indices " << shapeToString(idx.shape)
                           << " do not address data " << shapeToString(shape);
  for (int64_t d = 0; d < batch; ++d)
    if (idx.shape[d] != shape[d])
      return ctx.emitError() << "batch dimension " << d << " differs";
  Shape strides = stridesOf(shape);
  int64_t slice = 1;
  for (int64_t d = batch + k; d < rank; ++d)
    slice *= shape[d];
  int64_t tuples = idx.size() / k;
  std::vector<int64_t> offsets(tuples);
  // Tuples per batch entry: the index axes between the batch axes and k.
  int64_t perBatch = 1;
  for (int64_t d = batch; d < q - 1; ++d)
    perBatch *= idx.shape[d];
  for (int64_t t = 0; t < tuples; ++t) {
    Shape b = coordsOf(t / perBatch, ArrayRef<int64_t>(shape).take_front(batch));
    int64_t flat = 0;
    for (int64_t d = 0; d < batch; ++d)
      flat += b[d] * strides[d];
    for (int64_t j = 0; j < k; ++j) {
      FailureOr<int64_t> i =
          normalized(ctx, idx.getInt(t * k + j), shape[batch + j]);
      if (failed(i))
        return failure();
      flat += *i * strides[batch + j];
    }
    offsets[t] = flat;
  }
  return std::make_pair(std::move(offsets), slice);
}

/// GatherND with run-time indices of one coordinate each ([..., 1], no
/// batch axes) selects whole rows along axis 0: a Gather of the indices
/// without their last axis. Hugging Face's batched MoE experts select
/// each token's expert weights so (`weight[expert_ids]`).
FailureOr<Value> gatherRowsByTuples(NodeContext &ctx) {
  Value data = ctx.getValue(0), indices = ctx.getValue(1);
  if (!data || !indices)
    return failure();
  auto idxType = dyn_cast<RankedTensorType>(indices.getType());
  if (ctx.getInt("batch_dims", 0) != 0 || !idxType ||
      !idxType.hasStaticShape() || idxType.getRank() < 1 ||
      idxType.getShape().back() != 1 ||
      !isa<IntegerType>(idxType.getElementType()))
    return ctx.emitError() << "the indices must be integers known at import "
                              "time, or run-time indices [..., 1] without "
                              "batch_dims (rows of the data)";
  FailureOr<Value> rows =
      ctx.reshape(indices, idxType.getShape().drop_back());
  if (failed(rows))
    return failure();
  FailureOr<GatherOp> op = ctx.create<GatherOp>(data, *rows, int64_t(0));
  if (failed(op))
    return failure();
  return op->getResult();
}

LogicalResult convertGatherND(NodeContext &ctx) {
  RankedTensorType type = ctx.getType(0);
  if (type && !ctx.getConstant(1)) {
    FailureOr<Value> rows = gatherRowsByTuples(ctx);
    if (failed(rows))
      return failure();
    return ctx.setResult(0, *rows);
  }
  const HostTensor *idx = type ? indicesOf(ctx, 1) : nullptr;
  if (!idx)
    return failure();
  int64_t batch = ctx.getInt("batch_dims", 0);
  auto addressed = sliceOffsets(ctx, *idx, type.getShape(), batch);
  if (failed(addressed))
    return failure();
  auto &[offsets, slice] = *addressed;
  Shape out(idx->shape.begin(), idx->shape.end() - 1);
  for (int64_t d = batch + idx->shape.back(); d < type.getRank(); ++d)
    out.push_back(type.getDimSize(d));
  std::vector<int64_t> map;
  map.reserve(offsets.size() * slice);
  for (int64_t offset : offsets)
    for (int64_t r = 0; r < slice; ++r)
      map.push_back(offset + r);
  return setGathered(ctx, map, out);
}

/// A scatter's constant indices (null after an error) and its data's type;
/// only reduction none (the last update of an element wins).
const HostTensor *scatterIndices(NodeContext &ctx, RankedTensorType &type) {
  std::string reduction = ctx.getString("reduction", "none");
  if (reduction != "none" && reduction != "add" && reduction != "mul") {
    ctx.emitError() << "reduction '" << reduction
                    << "' is not supported (none, add, mul)";
    return nullptr;
  }
  type = ctx.getType(0);
  if (!type || !type.hasStaticShape()) {
    ctx.emitError() << "the data's shape must be known";
    return nullptr;
  }
  return indicesOf(ctx, 1);
}

LogicalResult convertScatterND(NodeContext &ctx) {
  RankedTensorType type;
  const HostTensor *idx = scatterIndices(ctx, type);
  if (!idx)
    return failure();
  auto addressed = sliceOffsets(ctx, *idx, type.getShape(), 0);
  if (failed(addressed))
    return failure();
  auto &[offsets, slice] = *addressed;
  std::vector<std::pair<int64_t, int64_t>> writes;
  for (size_t t = 0; t < offsets.size(); ++t)
    for (int64_t r = 0; r < slice; ++r)
      writes.push_back({offsets[t] + r, int64_t(t) * slice + r});
  return scatterByMap(ctx, writes, ctx.getString("reduction", "none"));
}

LogicalResult convertScatterElements(NodeContext &ctx) {
  RankedTensorType type;
  const HostTensor *idx = scatterIndices(ctx, type);
  if (!idx)
    return failure();
  FailureOr<std::vector<int64_t>> addresses =
      elementAddresses(ctx, *idx, type);
  if (failed(addresses))
    return failure();
  std::vector<std::pair<int64_t, int64_t>> writes;
  for (int64_t e = 0; e < int64_t(addresses->size()); ++e)
    writes.push_back({(*addresses)[e], e});
  return scatterByMap(ctx, writes, ctx.getString("reduction", "none"));
}

/// OneHot: out[..., d, ...] = on where the index (wrapped when negative)
/// is d, else off, the depth axis inserted at `axis`. The depth must be
/// known at import (it is a dimension); the indices may be run-time
/// values of any numeric type (compared in f32, exact below 2^24); the
/// result takes the values' type.
LogicalResult convertOneHot(NodeContext &ctx) {
  const HostTensor *depthT = ctx.getImportValue(1);
  if (!depthT || depthT->size() != 1)
    return ctx.emitError() << "depth must be one value known at import "
                              "time (it sizes the output)";
  int64_t depth = int64_t(depthT->getDouble(0));
  if (depth < 1)
    return ctx.emitError() << "depth must be positive, got " << depth;
  RankedTensorType indexType = ctx.getType(0), valuesType = ctx.getType(2);
  if (!indexType || !valuesType || valuesType.getNumElements() != 2)
    return ctx.emitError() << "values must hold two elements, [off, on]";
  int64_t rank = indexType.getRank() + 1;
  FailureOr<int64_t> axisOr = ctx.getAxis(-1, rank);
  if (failed(axisOr))
    return failure();
  int64_t axis = *axisOr;
  Chain c(ctx);
  Type f32 = Builder(ctx.getContext()).getF32Type();
  Value idx = ctx.getValue(0, ParamUse::Frozen);
  if (idx && !indexType.getElementType().isF32())
    idx = c.op<CastOp>(indexType.clone(f32), idx);
  // Negative indices count from the end: idx + depth where idx < 0.
  Value zero = ctx.createSplat(RankedTensorType::get({}, f32), 0.0);
  Value wrapped = c.op<WhereOp>(
      c.op<CompareOp>(StringAttr::get(ctx.getContext(), "lt"), idx, zero),
      c.add(idx, ctx.createSplat(RankedTensorType::get({}, f32), double(depth))),
      idx);
  Shape withAxis(indexType.getShape().begin(), indexType.getShape().end());
  withAxis.insert(withAxis.begin() + axis, 1);
  Value placed =
      wrapped ? ctx.reshape(wrapped, withAxis).value_or(Value()) : Value();
  HostTensor iota;
  iota.dtype = onnx::TensorProto::FLOAT;
  iota.shape.assign(rank, 1);
  iota.shape[axis] = depth;
  for (int64_t d = 0; d < depth; ++d)
    iota.floats.push_back(double(d));
  Value hot = c.op<CompareOp>(StringAttr::get(ctx.getContext(), "eq"), placed,
                              ctx.createConstant(iota));
  // off and on as f32 scalars.
  Value values = ctx.getValue(2, ParamUse::Frozen);
  if (values && !valuesType.getElementType().isF32())
    values = c.op<CastOp>(valuesType.clone(f32), values);
  auto element = [&](int64_t i) -> Value {
    if (!values)
      return {};
    Value one = c.op<SliceOp>(values, ArrayRef<int64_t>{i},
                              ArrayRef<int64_t>{i + 1}, ArrayRef<int64_t>{1});
    return one ? ctx.reshape(one, {}).value_or(Value()) : Value();
  };
  return c.result(castTo(ctx, c.op<WhereOp>(hot, element(1), element(0)),
                        valuesType.getElementType()));
}

} // namespace

void addIndexConverters(ConverterTable &table) {
  table.add("ArgMax", convertArgMax);
  table.add("Hardmax", convertHardmax);
  table.add("TopK", convertTopK);
  table.add("ArgMin", convertArgMin);
  table.add("GatherElements", convertGatherElements);
  table.add("Compress", convertCompress);
  table.add("MaxUnpool", convertMaxUnpool);
  table.add("ReverseSequence", convertReverseSequence);
  table.add("GatherND", convertGatherND);
  table.add("ScatterElements", convertScatterElements);
  table.add("ScatterND", convertScatterND);
  table.add("OneHot", convertOneHot);
}

} // namespace cleave::onnx_import
