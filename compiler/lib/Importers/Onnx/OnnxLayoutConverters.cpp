//===- OnnxLayoutConverters.cpp - Pad, Tile, DepthToSpace, norms ----------===//
//
// Operators of vision and OCR exports written in the graph ops they are
// made of, so that each has the shape rules, kernels, gradients and
// sharding rules of those: constant Pad as a concatenation with constant
// blocks (reflect and edge Pad as a gather by indices computed at import), Tile as concatenated copies, DepthToSpace and SpaceToDepth as
// reshape-transpose-reshape, InstanceNormalization from means over the spatial axes, Trilu
// as a selection by a triangular mask, CumSum as a product with a
// triangular matrix.
//
//===----------------------------------------------------------------------===//

#include "OnnxCompose.h"
#include "OnnxShapeRules.h"

#include "cleave/Dialect/Graph/IR/GraphOps.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace cleave::graph;

namespace cleave::onnx_import {
namespace {

/// Reflect and edge padding: along each padded axis one gather of the
/// input's slices by indices computed at import (edge: the nearest slice;
/// reflect: mirrored about the first and last slice, which are not
/// repeated), so the padding has gather's gradient (a scatter-add).
LogicalResult padByGather(NodeContext &ctx, Value x, ArrayRef<int64_t> pads,
                          bool reflect) {
  Shape shape = shapeOf(x);
  int64_t rank = static_cast<int64_t>(shape.size());
  Value y = x;
  for (int64_t axis = 0; axis < rank; ++axis) {
    int64_t before = pads[axis], after = pads[axis + rank], n = shape[axis];
    if (before < 0 || after < 0)
      return ctx.emitError() << "negative pads (cropping) are not supported";
    if (before == 0 && after == 0)
      continue;
    if (reflect && (before >= n || after >= n))
      return ctx.emitError() << "reflect pads of " << before << " and "
                             << after << " need more than " << n
                             << " elements along axis " << axis;
    HostTensor idx = HostTensor::zeros(onnx::TensorProto::INT64,
                                       {n + before + after});
    for (int64_t o = 0; o < n + before + after; ++o) {
      int64_t i = o - before;
      if (reflect)
        i = i < 0 ? -i : i >= n ? 2 * (n - 1) - i : i;
      idx.ints[o] = std::clamp<int64_t>(i, 0, n - 1);
    }
    y = compose<GatherOp>(ctx, y, ctx.createConstant(idx), axis);
    if (!y)
      return failure();
  }
  return ctx.setResult(0, y);
}

LogicalResult convertPad(NodeContext &ctx) {
  std::string mode = ctx.getString("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge")
    return ctx.emitError() << "mode '" << mode
                           << "' is not supported (constant, reflect, edge)";
  // Any element type: the edges are gathers and the fill a splat, both
  // kernels over any element width.
  Value x = ctx.getValue(0);
  if (!x)
    return failure();
  Shape shape = shapeOf(x);
  int64_t rank = static_cast<int64_t>(shape.size());
  FailureOr<Shape> pads = ctx.getConstantInts(1, "pads");
  if (failed(pads))
    return failure();
  // Axes (opset 18) are past libonnx 1.12: pads cover every axis.
  if (static_cast<int64_t>(pads->size()) != 2 * rank)
    return ctx.emitError() << "pads has " << pads->size()
                           << " values, the input's rank " << rank
                           << " needs " << 2 * rank;
  if (mode != "constant")
    return padByGather(ctx, x, *pads, mode == "reflect");
  // The fill: a number known at import, or a one-element initializer (a
  // frozen value the blocks are multiplied by).
  double value = 0.0;
  Value fill;
  if (ctx.hasInput(2)) {
    if (const HostTensor *v = ctx.getConstant(2)) {
      if (v->size() != 1)
        return ctx.emitError() << "constant_value must hold one value";
      value = v->getDouble(0);
    } else {
      fill = ctx.getValue(2, ParamUse::Frozen);
      if (!fill)
        return failure();
      if (!isNumeric(cast<RankedTensorType>(fill.getType()).getElementType()))
        return ctx.emitError() << "a run-time constant_value must be a "
                                  "number (it scales the fill), not bool";
      if (graph::numElements(cast<RankedTensorType>(fill.getType())) != 1)
        return ctx.emitError() << "constant_value must hold one value";
      value = 1.0;
    }
  }
  Type element = cast<RankedTensorType>(x.getType()).getElementType();
  auto block = [&](const Shape &shape) -> Value {
    Value splat =
        ctx.createSplat(RankedTensorType::get(shape, element), value);
    return fill ? compose<MulOp>(ctx, splat, fill) : splat;
  };
  Value y = x;
  for (int64_t axis = 0; axis < rank; ++axis) {
    int64_t before = (*pads)[axis], after = (*pads)[axis + rank];
    if (before < 0 || after < 0)
      return ctx.emitError() << "negative pads (cropping) are not supported";
    if (before == 0 && after == 0)
      continue;
    SmallVector<Value> parts;
    Shape side = shapeOf(y);
    if (before > 0) {
      side[axis] = before;
      parts.push_back(block(side));
    }
    parts.push_back(y);
    if (after > 0) {
      side[axis] = after;
      parts.push_back(block(side));
    }
    if (llvm::is_contained(parts, Value()) ||
        !(y = concat(ctx, parts, axis)))
      return failure();
  }
  return ctx.setResult(0, y);
}

LogicalResult convertTile(NodeContext &ctx) {
  Value x = floatOperand(ctx, 0, "the input");
  if (!x)
    return failure();
  FailureOr<Shape> repeats = ctx.getConstantInts(1, "repeats");
  if (failed(repeats))
    return failure();
  Shape shape = shapeOf(x);
  if (repeats->size() != shape.size())
    return ctx.emitError() << "repeats has " << repeats->size()
                           << " values for an input of rank " << shape.size();
  Value y = x;
  for (size_t axis = 0; axis < shape.size(); ++axis) {
    int64_t r = (*repeats)[axis];
    if (r < 1)
      return ctx.emitError() << "repeats must be positive, got " << r;
    if (!(y = concat(ctx, SmallVector<Value>(r, y), axis)))
      return failure();
  }
  return ctx.setResult(0, y);
}

LogicalResult convertDepthToSpace(NodeContext &ctx) {
  Value x = floatOperand(ctx, 0, "the input");
  if (!x)
    return failure();
  Shape s = shapeOf(x);
  int64_t b = ctx.getInt("blocksize", 0);
  if (s.size() != 4 || b < 1 || s[1] % (b * b))
    return ctx.emitError() << "needs an [N, C, H, W] input whose channels "
                              "blocksize^2 divides, got "
                           << shapeToString(s) << " and blocksize " << b;
  int64_t n = s[0], c = s[1] / (b * b), h = s[2], w = s[3];
  bool crd = ctx.getString("mode", "DCR") == "CRD";
  // DCR: channels are (row offset, column offset, channel); CRD: (channel,
  // row offset, column offset).
  Shape split = crd ? Shape{n, c, b, b, h, w} : Shape{n, b, b, c, h, w};
  SmallVector<int64_t> perm = crd ? SmallVector<int64_t>{0, 1, 4, 2, 5, 3}
                                  : SmallVector<int64_t>{0, 3, 4, 1, 5, 2};
  FailureOr<Value> r = ctx.reshape(x, split);
  if (failed(r))
    return failure();
  Value t = compose<TransposeOp>(ctx, *r, ArrayRef<int64_t>(perm));
  if (!t)
    return failure();
  FailureOr<Value> y = ctx.reshape(t, {n, c, h * b, w * b});
  return failed(y) ? failure() : ctx.setResult(0, *y);
}

/// SpaceToDepth, DepthToSpace's inverse (DCR order): [N, C, H, W] ->
/// [N, C, H/b, b, W/b, b] -> [N, b, b, C, H/b, W/b] -> [N, C b^2, H/b, W/b].
LogicalResult convertSpaceToDepth(NodeContext &ctx) {
  Value x = floatOperand(ctx, 0, "the input");
  if (!x)
    return failure();
  Shape s = shapeOf(x);
  int64_t b = ctx.getInt("blocksize", 0);
  if (s.size() != 4 || b < 1 || s[2] % b || s[3] % b)
    return ctx.emitError() << "needs an [N, C, H, W] input whose height and "
                              "width blocksize divides, got "
                           << shapeToString(s) << " and blocksize " << b;
  int64_t n = s[0], c = s[1], h = s[2] / b, w = s[3] / b;
  FailureOr<Value> r = ctx.reshape(x, {n, c, h, b, w, b});
  if (failed(r))
    return failure();
  SmallVector<int64_t> perm{0, 3, 5, 1, 2, 4};
  Value t = compose<TransposeOp>(ctx, *r, ArrayRef<int64_t>(perm));
  if (!t)
    return failure();
  FailureOr<Value> y = ctx.reshape(t, {n, c * b * b, h, w});
  return failed(y) ? failure() : ctx.setResult(0, *y);
}

LogicalResult convertInstanceNormalization(NodeContext &ctx) {
  Value x = floatOperand(ctx, 0, "the input");
  Value scale = ctx.getValue(1), bias = ctx.getValue(2);
  if (!x || !scale || !bias)
    return failure();
  Shape s = shapeOf(x);
  if (s.size() < 3)
    return ctx.emitError() << "needs an [N, C, ...] input with spatial axes, "
                              "got "
                           << shapeToString(s);
  SmallVector<int64_t> spatial;
  for (int64_t a = 2; a < static_cast<int64_t>(s.size()); ++a)
    spatial.push_back(a);
  // Per-channel scale and bias, broadcast over the spatial axes.
  Shape perChannel(s.size() - 1, 1);
  perChannel[0] = s[1];
  FailureOr<Value> gamma = ctx.reshape(scale, perChannel);
  FailureOr<Value> beta = ctx.reshape(bias, perChannel);
  if (failed(gamma) || failed(beta))
    return failure();
  Type element = cast<RankedTensorType>(x.getType()).getElementType();
  Value eps = ctx.createSplat(RankedTensorType::get({}, element),
                              ctx.getFloat("epsilon", 1e-5));
  ArrayRef<int64_t> axes(spatial);
  Value mean = compose<ReduceMeanOp>(ctx, x, axes, true);
  Value centred = mean ? compose<SubOp>(ctx, x, mean) : Value();
  Value square = centred ? compose<MulOp>(ctx, centred, centred) : Value();
  Value var = square ? compose<ReduceMeanOp>(ctx, square, axes, true) : Value();
  Value inv = var ? compose<RsqrtOp>(ctx, compose<AddOp>(ctx, var, eps)) : Value();
  Value normed = inv ? compose<MulOp>(ctx, centred, inv) : Value();
  Value scaled = normed ? compose<MulOp>(ctx, normed, *gamma) : Value();
  Value y = scaled ? compose<AddOp>(ctx, scaled, *beta) : Value();
  return y ? ctx.setResult(0, y) : failure();
}

/// MeanVarianceNormalization: (x - E[x]) / (sqrt(Var[x]) + 1e-9) over
/// `axes` (default N, H, W), as ONNX's function body defines it, with the
/// variance taken of the centred values.
LogicalResult convertMeanVarianceNormalization(NodeContext &ctx) {
  Value x = floatOperand(ctx, 0, "the input");
  if (!x)
    return failure();
  int64_t rank = static_cast<int64_t>(shapeOf(x).size());
  SmallVector<int64_t> axes(ctx.getInts("axes").value_or(Shape{0, 2, 3}));
  for (int64_t &axis : axes) {
    if (axis < -rank || axis >= rank)
      return ctx.emitError() << "axis " << axis << " is out of range for rank "
                             << rank;
    axis = axis < 0 ? axis + rank : axis;
  }
  llvm::sort(axes);
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
    return ctx.emitError() << "axes repeat an axis";
  Type element = cast<RankedTensorType>(x.getType()).getElementType();
  Value eps = ctx.createSplat(RankedTensorType::get({}, element), 1e-9);
  ArrayRef<int64_t> over(axes);
  Value mean = compose<ReduceMeanOp>(ctx, x, over, true);
  Value centred = mean ? compose<SubOp>(ctx, x, mean) : Value();
  Value square = centred ? compose<MulOp>(ctx, centred, centred) : Value();
  Value var = square ? compose<ReduceMeanOp>(ctx, square, over, true) : Value();
  Value std = var ? compose<SqrtOp>(ctx, var) : Value();
  Value den = std ? compose<AddOp>(ctx, std, eps) : Value();
  Value y = den ? compose<DivOp>(ctx, centred, den) : Value();
  return y ? ctx.setResult(0, y) : failure();
}

/// Trilu: the upper (or lower) triangle of the last two axes from diagonal
/// k on, the rest 0. Of a tensor known at import (exporters build causal
/// masks so), computed then; of a run-time tensor, selected by a
/// triangular mask.
LogicalResult convertTrilu(NodeContext &ctx) {
  const HostTensor *known = ctx.getConstant(0);
  Value x = known ? Value() : ctx.getValue(0);
  if (!known && !x)
    return failure();
  Shape s = known ? known->shape : shapeOf(x);
  if (s.size() < 2)
    return ctx.emitError() << "needs an input of rank 2 or more, got "
                           << shapeToString(s);
  int64_t k = 0;
  const HostTensor *given = ctx.hasInput(1) ? ctx.getConstant(1) : nullptr;
  if (given) {
    if (given->size() != 1)
      return ctx.emitError() << "k must be one integer, got "
                             << given->size() << " values";
    k = given->getInt(0);
  }
  bool runTimeK = ctx.hasInput(1) && !given;
  bool upper = ctx.getInt("upper", 1) != 0;
  int64_t rows = s[s.size() - 2], cols = s.back();
  auto kept = [&](int64_t i, int64_t j) {
    return upper ? j - i >= k : j - i <= k;
  };
  if (known && !runTimeK) {
    HostTensor out = *known;
    for (int64_t e = 0; e < out.size(); ++e) {
      int64_t j = e % cols, i = (e / cols) % rows;
      if (kept(i, j))
        continue;
      if (out.isFloat())
        out.floats[e] = 0;
      else
        out.ints[e] = 0;
    }
    return ctx.setResult(0, std::move(out));
  }
  // Run-time values: where(mask, x, 0), which keeps an infinity or NaN
  // above the diagonal out (a 0/1 product would not). Integer tensors (index
  // masks) pass through f32 and back, exact below 2^24.
  if (!x && !(x = ctx.getValue(0)))
    return failure();
  auto type = cast<RankedTensorType>(x.getType());
  bool integer = isa<IntegerType>(type.getElementType());
  Chain c(ctx);
  if (integer)
    x = c.op<CastOp>(type.clone(Float32Type::get(x.getContext())), x);
  Value mask;
  if (runTimeK) {
    // k given at run time: the mask is (j - i >= k) or (j - i <= k),
    // compared against the offsets of the last two axes.
    HostTensor offsets = HostTensor::zeros(onnx::TensorProto::FLOAT,
                                           {rows, cols});
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        offsets.floats[i * cols + j] = double(j - i);
    Value kValue = ctx.getValue(1);
    if (!kValue)
      return failure();
    auto kType = cast<RankedTensorType>(kValue.getType());
    if (kType.getNumElements() != 1)
      return ctx.emitError() << "k must be one integer, got " << kType;
    Value kf = c.op<CastOp>(
        RankedTensorType::get({}, Float32Type::get(x.getContext())),
        kType.getRank() == 0 ? kValue : ctx.reshape(kValue, {}).value_or(Value()));
    mask = c.op<CompareOp>(StringAttr::get(x.getContext(), upper ? "ge" : "le"),
                           ctx.createConstant(offsets), kf);
  } else {
    HostTensor constant = HostTensor::zeros(onnx::TensorProto::BOOL,
                                            {rows, cols});
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        constant.ints[i * cols + j] = kept(i, j) ? 1 : 0;
    mask = ctx.createConstant(constant);
  }
  Value y = c.op<WhereOp>(mask, x, c.scalar(x, 0.0));
  if (integer)
    y = c.op<CastOp>(type, y);
  return c.result(y);
}

} // namespace

/// CumSum along a constant axis as a product with a triangular 0/1 matrix
/// T [n, n] over that axis moved last: y[.., i] = sum_j x[.., j] T[j, i],
/// T[j, i] = 1 where j <= i (j >= i with `reverse`; strictly with
/// `exclusive`). n^2 work instead of n, but every step is a GEMM or a
/// transpose, so it trains and shards like them. Integer inputs pass
/// through f32 (exact below 2^24).
LogicalResult convertCumSum(NodeContext &ctx) {
  Value x = ctx.getValue(0);
  if (!x)
    return failure();
  const HostTensor *axisGiven = ctx.getConstant(1);
  if (!axisGiven || axisGiven->size() != 1)
    return ctx.emitError() << "the axis must be one integer known at import "
                              "time";
  auto type = cast<RankedTensorType>(x.getType());
  int64_t rank = type.getRank(), axis = axisGiven->getInt(0);
  if (axis < -rank || axis >= rank)
    return ctx.emitError() << "axis " << axis << " is out of range for rank "
                           << rank;
  if (axis < 0)
    axis += rank;
  bool exclusive = ctx.getInt("exclusive", 0) != 0;
  bool reverse = ctx.getInt("reverse", 0) != 0;
  int64_t n = type.getDimSize(axis);
  HostTensor triangle = HostTensor::zeros(onnx::TensorProto::FLOAT, {n, n});
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < n; ++i) {
      bool before = reverse ? j > i : j < i;
      triangle.floats[j * n + i] = before || (!exclusive && i == j) ? 1 : 0;
    }
  bool integer = isa<IntegerType>(type.getElementType());
  Chain c(ctx);
  if (integer)
    x = c.op<CastOp>(type.clone(Float32Type::get(x.getContext())), x);
  // The axis last, and back.
  SmallVector<int64_t> perm;
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis)
      perm.push_back(d);
  perm.push_back(axis);
  SmallVector<int64_t> inverse(rank);
  for (int64_t d = 0; d < rank; ++d)
    inverse[perm[d]] = d;
  bool moved = axis != rank - 1;
  Value last = moved ? c.op<TransposeOp>(x, ArrayRef<int64_t>(perm)) : x;
  Value t = ctx.createConstant(triangle);
  if (x && t &&
      cast<RankedTensorType>(t.getType()).getElementType() !=
          cast<RankedTensorType>(x.getType()).getElementType())
    t = c.op<CastOp>(
        RankedTensorType::get({n, n},
                              cast<RankedTensorType>(x.getType())
                                  .getElementType()),
        t);
  // A vector is one row of a matrix.
  if (rank == 1 && last)
    last = ctx.reshape(last, {1, n}).value_or(Value());
  Value y = c.op<MatmulOp>(last, t, false, false);
  if (rank == 1 && y)
    y = ctx.reshape(y, {n}).value_or(Value());
  if (moved)
    y = c.op<TransposeOp>(y, ArrayRef<int64_t>(inverse));
  if (integer)
    y = c.op<CastOp>(type, y);
  return c.result(y);
}

/// Resize (nearest, linear, cubic) as one product per resized axis with an
/// interpolation matrix A [out, in] computed at import: y = x A^T along the
/// axis. Row x of A holds the weights ONNX's reference gives output x: its
/// coordinate in the input (coordinate_transformation_mode), then the
/// nearest pixel (nearest_mode), the two around it (linear) or the four
/// (cubic: Keys' kernel with cubic_coeff_a; exclude_outside drops the taps
/// past the edge and renormalises), indices clamped to the edge. Every step is a transpose or a GEMM, so Resize
/// trains and shards like them; work is out x in per axis instead of out.
LogicalResult convertResize(NodeContext &ctx) {
  Value x = floatOperand(ctx, 0, "the input");
  if (!x)
    return failure();
  auto type = cast<RankedTensorType>(x.getType());
  int64_t rank = type.getRank();
  std::string mode = ctx.getString("mode", "nearest");
  std::string transform =
      ctx.getString("coordinate_transformation_mode", "half_pixel");
  std::string nearest = ctx.getString("nearest_mode", "round_prefer_floor");
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    return ctx.emitError() << "mode '" << mode
                           << "' is not supported (nearest, linear, cubic)";
  double a = ctx.getFloat("cubic_coeff_a", -0.75);
  bool excludeOutside = ctx.getInt("exclude_outside", 0) != 0;
  if (transform != "half_pixel" && transform != "pytorch_half_pixel" &&
      transform != "align_corners" && transform != "asymmetric" &&
      transform != "tf_half_pixel_for_nn" && transform != "tf_crop_and_resize")
    return ctx.emitError() << "coordinate_transformation_mode '" << transform
                           << "' is not supported";
  // tf_crop_and_resize: the region of interest (input 1: starts, then
  // ends, normalized) must be known; outside it, extrapolation_value.
  const HostTensor *roi = nullptr;
  double extrapolation = ctx.getFloat("extrapolation_value", 0.0);
  if (transform == "tf_crop_and_resize") {
    roi = ctx.hasInput(1) ? ctx.getImportValue(1) : nullptr;
    if (!roi || roi->size() != 2 * rank)
      return ctx.emitError() << "tf_crop_and_resize needs the roi known at "
                                "import time: "
                             << 2 * rank << " values (starts, then ends)";
  }
  if (nearest != "round_prefer_floor" && nearest != "round_prefer_ceil" &&
      nearest != "floor" && nearest != "ceil")
    return ctx.emitError() << "nearest_mode '" << nearest
                           << "' is not supported";
  // Output sizes and scales per axis, from `sizes` (input 3) or `scales`
  // (input 2), which must be known at import (they fix the shape).
  std::vector<int64_t> out(type.getShape().begin(), type.getShape().end());
  std::vector<double> scale(rank, 1.0);
  const HostTensor *sizes = ctx.hasInput(3) ? ctx.getImportValue(3) : nullptr;
  const HostTensor *scales = ctx.hasInput(2) ? ctx.getImportValue(2) : nullptr;
  if ((ctx.hasInput(3) && !sizes) || (ctx.hasInput(2) && !scales))
    return ctx.emitError() << "scales and sizes must be known at import "
                              "time (they fix the output's shape)";
  if (scales && scales->size() == 0)
    scales = nullptr;
  if (sizes && sizes->size() == rank) {
    for (int64_t d = 0; d < rank; ++d) {
      out[d] = sizes->getInt(d);
      scale[d] = double(out[d]) / double(type.getDimSize(d));
    }
  } else if (scales && scales->size() == rank) {
    for (int64_t d = 0; d < rank; ++d) {
      scale[d] = scales->getDouble(d);
      out[d] = static_cast<int64_t>(std::floor(type.getDimSize(d) * scale[d]));
    }
  } else {
    return ctx.emitError() << "needs scales or sizes with one value per "
                              "axis of the rank-" << rank << " input";
  }
  Chain c(ctx);
  Value y = x;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t in = type.getDimSize(d), n = out[d];
    if (n <= 0 || scale[d] <= 0)
      return ctx.emitError() << "axis " << d << " resizes to " << n;
    if (n == in && scale[d] == 1.0)
      continue;
    // The output's length as the reference computes coordinates with it:
    // in x scale, unrounded (scales given), or the size given.
    double length = double(in) * scale[d];
    auto source = [&](int64_t i) {
      double s = scale[d];
      if (roi) {
        double start = roi->getDouble(d), end = roi->getDouble(rank + d);
        return n > 1 ? start * (in - 1) +
                           double(i) * (end - start) * (in - 1) / double(n - 1)
                     : 0.5 * (start + end) * (in - 1);
      }
      if (transform == "half_pixel")
        return (i + 0.5) / s - 0.5;
      if (transform == "pytorch_half_pixel")
        return length > 1 ? (i + 0.5) / s - 0.5 : 0.0;
      if (transform == "align_corners")
        return length == 1 ? 0.0
                           : double(i) * double(in - 1) / (length - 1);
      if (transform == "tf_half_pixel_for_nn")
        return (i + 0.5) / s;
      return i / s; // asymmetric
    };
    auto clamp = [&](int64_t i) { return std::clamp<int64_t>(i, 0, in - 1); };
    // A^T [in, n], the product's right operand.
    HostTensor at = HostTensor::zeros(onnx::TensorProto::FLOAT, {in, n});
    // tf_crop_and_resize: outputs whose source lies outside the input take
    // extrapolation_value (a zero column of A^T and this bias).
    HostTensor outside = HostTensor::zeros(onnx::TensorProto::FLOAT, {n});
    bool anyOutside = false;
    for (int64_t i = 0; i < n; ++i) {
      double xo = source(i), lo = std::floor(xo), r = xo - lo;
      if (roi && (xo < 0 || xo > double(in - 1))) {
        outside.floats[i] = extrapolation;
        anyOutside = true;
        continue;
      }
      int64_t i0 = clamp(int64_t(lo)), i1 = clamp(int64_t(lo) + 1);
      if (r == 0) {
        at.floats[i0 * n + i] = 1;
      } else if (mode == "linear") {
        at.floats[i0 * n + i] += 1 - r;
        at.floats[i1 * n + i] += r;
      } else if (mode == "cubic") {
        // Taps at lo - 1 .. lo + 2, distances 1 + r, r, 1 - r, 2 - r.
        double s = 1 - r;
        double w[4] = {((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) -
                           4 * a,
                       ((a + 2) * r - (a + 3)) * r * r + 1,
                       ((a + 2) * s - (a + 3)) * s * s + 1,
                       ((a * (s + 1) - 5 * a) * (s + 1) + 8 * a) * (s + 1) -
                           4 * a};
        double kept = 0;
        for (int t = 0; t < 4; ++t) {
          int64_t tap = int64_t(lo) - 1 + t;
          if (excludeOutside && (tap < 0 || tap >= in))
            w[t] = 0;
          kept += w[t];
        }
        for (int t = 0; t < 4; ++t)
          at.floats[clamp(int64_t(lo) - 1 + t) * n + i] +=
              excludeOutside ? w[t] / kept : w[t];
      } else {
        bool up = nearest == "round_prefer_floor"  ? r > 0.5
                  : nearest == "round_prefer_ceil" ? r >= 0.5
                                                   : nearest == "ceil";
        at.floats[(up ? i1 : i0) * n + i] = 1;
      }
    }
    // The axis last (a matrix for a vector), the product, and back.
    SmallVector<int64_t> perm, inverse(rank);
    for (int64_t e = 0; e < rank; ++e)
      if (e != d)
        perm.push_back(e);
    perm.push_back(d);
    for (int64_t e = 0; e < rank; ++e)
      inverse[perm[e]] = e;
    bool moved = d != rank - 1;
    Value last = moved ? c.op<TransposeOp>(y, ArrayRef<int64_t>(perm)) : y;
    if (rank == 1 && last)
      last = ctx.reshape(last, {1, in}).value_or(Value());
    Value product = c.op<MatmulOp>(last, ctx.createConstant(at), false, false);
    if (anyOutside && extrapolation != 0.0)
      product = c.add(product, ctx.createConstant(outside));
    if (rank == 1 && product)
      product = ctx.reshape(product, {n}).value_or(Value());
    y = moved ? c.op<TransposeOp>(product, ArrayRef<int64_t>(inverse))
              : product;
    if (!y)
      return failure();
  }
  return c.result(y);
}

void addLayoutConverters(ConverterTable &table) {
  table.add("Trilu", convertTrilu);
  table.add("CumSum", convertCumSum);
  table.add("Resize", convertResize);
  table.add("Pad", convertPad);
  table.add("Tile", convertTile);
  table.add("DepthToSpace", convertDepthToSpace);
  table.add("SpaceToDepth", convertSpaceToDepth);
  table.add("InstanceNormalization", convertInstanceNormalization);
  table.add("MeanVarianceNormalization", convertMeanVarianceNormalization);
}

} // namespace cleave::onnx_import
