//===- OnnxQuantizeConverters.cpp - ONNX's linear (de)quantisation --------===//
//
// QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear: the Q/DQ
// nodes quantisation tools (ONNX Runtime's quantize_static, PyTorch's
// quantised export, TensorRT's QAT) put around weights and activations.
// They are element-wise arithmetic in float with a cast at the end or the
// beginning, composed of graph ops:
//   quantize:   y = cast(clip(round_half_even(x / scale) + zero_point))
//   dequantize: y = (float(x) - float(zero_point)) * scale
// A per-axis scale (1-D, one value per slice along `axis`) is reshaped to
// broadcast along that axis. QLinearMatMul and QLinearConv are a float
// GEMM or convolution of the dequantised operands, quantised.
// MatMulInteger and ConvInteger (ONNX Runtime's dynamic quantisation)
// need int32 sums that are exact: float GEMMs of the centred operands,
// one operand split in two so that every partial sum stays below 2^24,
// combined in int32.
//
//===----------------------------------------------------------------------===//

#include "OnnxCompose.h"
#include "OnnxGraphImporter.h"
#include "OnnxTensors.h"

#include "cleave/Dialect/Graph/IR/GraphOps.h"

using namespace mlir;
using namespace cleave::graph;

namespace cleave::onnx_import {
namespace {

/// The range of an 8-bit quantised type (uint8 or int8), the only ones
/// ONNX 1.12 quantises to.
FailureOr<std::pair<double, double>>
quantizedRange(NodeContext &ctx, Type element, const char *zpName) {
  auto integer = dyn_cast<IntegerType>(element);
  if (!integer || integer.getWidth() != 8) {
    ctx.emitError() << zpName << " must be uint8 or int8, got " << element;
    return failure();
  }
  if (integer.isUnsigned())
    return std::make_pair(0.0, 255.0);
  return std::make_pair(-128.0, 127.0);
}

/// Input `i` (a scale or a zero point) shaped to broadcast against an
/// input of `shape`: a scalar as it is, a 1-D tensor of one value per
/// index of `axis` (negative counts from the end) as [1, ..., n, ..., 1].
Value quantParam(NodeContext &ctx, unsigned i, ArrayRef<int64_t> shape,
                 int64_t axis, const char *what) {
  Value p = ctx.getValue(i, ParamUse::Frozen);
  if (!p)
    return {};
  auto type = cast<RankedTensorType>(p.getType());
  if (type.getRank() == 0)
    return p;
  if (type.getRank() == 1 && type.getDimSize(0) == 1)
    return ctx.reshape(p, {}).value_or(Value());
  // The axis matters only here: a per-tensor scale needs none.
  int64_t rank = static_cast<int64_t>(shape.size());
  if (axis < -rank || axis >= rank) {
    ctx.emitError() << "axis " << axis << " is out of range for the input's "
                    << "rank " << rank << " (" << what << " is per axis)";
    return {};
  }
  axis = axis < 0 ? axis + rank : axis;
  if (type.getRank() != 1 || type.getDimSize(0) != shape[axis]) {
    ctx.emitError() << what << " must be a scalar or hold one value per "
                    << "index of axis " << axis << " (" << shape[axis]
                    << "), got " << type;
    return {};
  }
  Shape broadcast(shape.size(), 1);
  broadcast[axis] = shape[axis];
  return ctx.reshape(p, broadcast).value_or(Value());
}

/// The quantised integer tensor `x` in the scale's float type:
/// (float(x) - float(zero_point)) * scale. The zero point (input
/// `zpInput`, optional) has x's type.
Value dequantize(Chain &c, Value x, unsigned scaleInput, unsigned zpInput,
                 int64_t axis, const char *scaleName, const char *zpName) {
  NodeContext &ctx = c.ctx;
  auto xType = cast<RankedTensorType>(x.getType());
  if (!isa<IntegerType>(xType.getElementType()) ||
      xType.getElementType().isInteger(1)) {
    ctx.emitError() << "the quantised input must be an integer tensor, got "
                    << xType;
    return {};
  }
  Value scale = quantParam(ctx, scaleInput, xType.getShape(), axis, scaleName);
  if (!scale)
    return {};
  Type floatType = cast<RankedTensorType>(scale.getType()).getElementType();
  if (!isa<FloatType>(floatType)) {
    ctx.emitError() << scaleName << " must be floating point";
    return {};
  }
  Value y = castTo(ctx, x, floatType);
  if (ctx.hasInput(zpInput)) {
    Value zp = quantParam(ctx, zpInput, xType.getShape(), axis, zpName);
    if (!zp)
      return {};
    Type zpElement = cast<RankedTensorType>(zp.getType()).getElementType();
    if (zpElement != xType.getElementType()) {
      ctx.emitError() << zpName << "'s type " << zpElement
                      << " differs from its input's "
                      << xType.getElementType();
      return {};
    }
    y = c.op<SubOp>(y, castTo(ctx, zp, floatType));
  }
  return c.mul(y, scale);
}

/// clip(round_half_even(x / scale) + zero_point) cast to `element`.
Value quantize(Chain &c, Value x, Value scale, Value zeroPoint, Type element,
               std::pair<double, double> range) {
  Value q = c.roundHalfEven(c.op<DivOp>(x, scale));
  if (zeroPoint)
    q = c.add(q, zeroPoint);
  q = c.max(c.min(q, c.scalar(x, range.second)), c.scalar(x, range.first));
  return castTo(c.ctx, q, element);
}

/// x (float) quantised by the scale (input `scaleInput`) and zero point
/// (input `zpInput`, optional: uint8 0), to the zero point's type.
Value quantizeInputs(Chain &c, Value x, unsigned scaleInput, unsigned zpInput,
                     int64_t axis, const char *scaleName,
                     const char *zpName) {
  NodeContext &ctx = c.ctx;
  Shape shape = shapeOf(x);
  Type xFloat = cast<RankedTensorType>(x.getType()).getElementType();
  Value scale =
      castTo(ctx, quantParam(ctx, scaleInput, shape, axis, scaleName), xFloat);
  Type element = IntegerType::get(ctx.getContext(), 8, IntegerType::Unsigned);
  Value zeroPoint;
  if (ctx.hasInput(zpInput)) {
    Value zp = quantParam(ctx, zpInput, shape, axis, zpName);
    if (!zp)
      return {};
    element = cast<RankedTensorType>(zp.getType()).getElementType();
    zeroPoint = castTo(ctx, zp, xFloat);
  }
  FailureOr<std::pair<double, double>> range =
      quantizedRange(ctx, element, zpName);
  if (!scale || failed(range))
    return {};
  return quantize(c, x, scale, zeroPoint, element, *range);
}

LogicalResult convertQuantizeLinear(NodeContext &ctx) {
  Chain c(ctx);
  Value x = ctx.getValue(0);
  if (!x)
    return failure();
  auto xType = cast<RankedTensorType>(x.getType());
  // ONNX allows int32 inputs (quantising accumulators): computed in f32.
  if (!isa<FloatType>(xType.getElementType())) {
    if (!xType.getElementType().isInteger(32))
      return ctx.emitError() << "the input must be float or int32, got "
                             << xType;
    x = castTo(ctx, x, Float32Type::get(ctx.getContext()));
  }
  return c.result(quantizeInputs(c, x, 1, 2, ctx.getInt("axis", 1),
                                 "y_scale", "y_zero_point"));
}

LogicalResult convertDequantizeLinear(NodeContext &ctx) {
  Chain c(ctx);
  Value x = ctx.getValue(0, ParamUse::Frozen);
  if (!x)
    return failure();
  return c.result(dequantize(c, x, 1, 2, ctx.getInt("axis", 1), "x_scale",
                             "x_zero_point"));
}

/// QLinearMatMul: the float product of the dequantised operands,
/// quantised by y's scale and zero point. a's parameters may be per row,
/// b's per column, y's per row.
LogicalResult convertQLinearMatMul(NodeContext &ctx) {
  Chain c(ctx);
  Value a = ctx.getValue(0, ParamUse::Frozen);
  Value b = ctx.getValue(3, ParamUse::Frozen);
  if (!a || !b)
    return failure();
  int64_t aRank = cast<RankedTensorType>(a.getType()).getRank();
  int64_t bRank = cast<RankedTensorType>(b.getType()).getRank();
  if (aRank < 2 || bRank < 2)
    return ctx.emitError() << "needs operands of rank 2 or more, got ranks "
                           << aRank << " and " << bRank;
  Value y = c.op<MatmulOp>(
      dequantize(c, a, 1, 2, aRank - 2, "a_scale", "a_zero_point"),
      dequantize(c, b, 4, 5, bRank - 1, "b_scale", "b_zero_point"), false,
      false);
  if (!y)
    return failure();
  return c.result(quantizeInputs(c, y, 6, 7, shapeOf(y).size() - 2,
                                 "y_scale", "y_zero_point"));
}

/// uint8 quantisation with the scale and zero point of x's own range
/// (widened to hold 0): scale = (max - min) / 255, zero point =
/// round(clip(-min / scale, 0, 255)).
LogicalResult convertDynamicQuantizeLinear(NodeContext &ctx) {
  Chain c(ctx);
  Value x = c.input();
  if (!x)
    return failure();
  auto xType = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> all;
  for (int64_t d = 0; d < xType.getRank(); ++d)
    all.push_back(d);
  auto reduceMax = [&](Value v) {
    return c.op<ReduceMaxOp>(v, ArrayRef<int64_t>(all), /*keepdims=*/false);
  };
  Value zero = c.scalar(x, 0.0);
  Value hi = c.max(reduceMax(x), zero);
  Value lo = c.min(c.op<NegOp>(reduceMax(c.op<NegOp>(x))), zero);
  Value scale = c.op<DivOp>(c.op<SubOp>(hi, lo), c.scalar(x, 255.0));
  Value zeroPoint = c.roundHalfEven(c.max(
      c.min(c.op<DivOp>(c.op<NegOp>(lo), scale), c.scalar(x, 255.0)), zero));
  Type u8 = IntegerType::get(ctx.getContext(), 8, IntegerType::Unsigned);
  Value y = quantize(c, x, scale, zeroPoint, u8, {0.0, 255.0});
  if (!y || failed(ctx.setResult(0, y)) || failed(ctx.setResult(1, scale)))
    return failure();
  return ctx.setResult(2, castTo(ctx, zeroPoint, u8));
}

/// QLinearConv: Conv of the dequantised image and filter (w's parameters
/// may be per output channel) with the int32 bias dequantised by
/// x_scale * w_scale, quantised by y's scale and zero point.
LogicalResult convertQLinearConv(NodeContext &ctx) {
  Chain c(ctx);
  Value x = ctx.getValue(0, ParamUse::Frozen);
  Value w = ctx.getValue(3, ParamUse::Frozen);
  if (!x || !w)
    return failure();
  Value image = dequantize(c, x, 1, 2, 1, "x_scale", "x_zero_point");
  Value filter = dequantize(c, w, 4, 5, 0, "w_scale", "w_zero_point");
  if (!image || !filter)
    return failure();
  Value bias;
  if (ctx.hasInput(8)) {
    Value b = ctx.getValue(8, ParamUse::Frozen);
    Value xScale = ctx.getValue(1, ParamUse::Frozen);
    Value wScale = ctx.getValue(4, ParamUse::Frozen);
    if (!b || !xScale || !wScale)
      return failure();
    auto bType = cast<RankedTensorType>(b.getType());
    if (!bType.getElementType().isInteger(32) || bType.getRank() != 1)
      return ctx.emitError() << "the bias B must be 1-D int32, got " << bType;
    Type f = cast<RankedTensorType>(image.getType()).getElementType();
    bias = c.mul(castTo(ctx, b, f),
                 c.mul(castTo(ctx, xScale, f), castTo(ctx, wScale, f)));
    // A [1]-shaped product broadcast to [M] keeps the bias's shape.
    if (bias && shapeOf(bias) != shapeOf(b))
      bias = ctx.reshape(bias, shapeOf(b)).value_or(Value());
    if (!bias)
      return failure();
  }
  Value y = convolve(ctx, image, filter, bias);
  if (!y)
    return failure();
  return c.result(quantizeInputs(c, y, 6, 7, 1, "y_scale", "y_zero_point"));
}

/// Input `i` (an 8-bit integer tensor) less its zero point (input `zpInput`,
/// optional, per tensor or per index of `axis`), in f32: exact integers in
/// [-255, 255].
Value centred(Chain &c, unsigned i, unsigned zpInput, int64_t axis,
              const char *what, const char *zpName) {
  NodeContext &ctx = c.ctx;
  Value x = ctx.getValue(i, ParamUse::Frozen);
  if (!x)
    return {};
  auto type = cast<RankedTensorType>(x.getType());
  auto integer = dyn_cast<IntegerType>(type.getElementType());
  if (!integer || integer.getWidth() != 8) {
    ctx.emitError() << what << " must be uint8 or int8, got " << type;
    return {};
  }
  Type f32 = Float32Type::get(ctx.getContext());
  Value y = castTo(ctx, x, f32);
  if (ctx.hasInput(zpInput)) {
    Value zp = quantParam(ctx, zpInput, type.getShape(), axis, zpName);
    if (!zp)
      return {};
    y = c.op<SubOp>(y, castTo(ctx, zp, f32));
  }
  return y;
}

/// The largest reduction an integer product keeps exact below: after the
/// split below, each f32 partial sum stays under 2^24 (255 * 16 per term).
constexpr int64_t kMaxExactReduction = (int64_t(1) << 24) / (255 * 16);

/// The int32 product `gemm(a, b)` of two centred 8-bit operands (f32
/// integers in [-255, 255]), exact: f32 sums of such products are exact
/// only below 2^24, so b is split as 16 hi + lo (lo in [0, 15], hi in
/// [-16, 15]), each half's product is exact for reductions up to
/// kMaxExactReduction, and the halves are combined in int32.
Value exactIntegerProduct(Chain &c, Value a, Value b, int64_t reduction,
                          llvm::function_ref<Value(Value, Value)> gemm) {
  NodeContext &ctx = c.ctx;
  if (!a || !b)
    return {};
  if (reduction > kMaxExactReduction) {
    ctx.emitError() << "a reduction over " << reduction
                    << " products is more than the " << kMaxExactReduction
                    << " whose int32 sum this importer computes exactly";
    return {};
  }
  Value hi = c.op<FloorOp>(c.mul(b, c.scalar(b, 1.0 / 16.0)));
  Value lo = c.op<SubOp>(b, c.mul(hi, c.scalar(b, 16.0)));
  Type i32 = IntegerType::get(ctx.getContext(), 32);
  Value hiProduct = castTo(ctx, gemm(a, hi), i32);
  Value loProduct = castTo(ctx, gemm(a, lo), i32);
  if (!hiProduct || !loProduct)
    return {};
  return c.add(c.mul(hiProduct, c.scalar(hiProduct, 16.0)), loProduct);
}

/// MatMulInteger: (A - a_zero_point) (B - b_zero_point) in int32; A's zero
/// point may be per row, B's per column.
LogicalResult convertMatMulInteger(NodeContext &ctx) {
  Chain c(ctx);
  RankedTensorType aType = ctx.getType(0), bType = ctx.getType(1);
  if (!aType || !bType || aType.getRank() < 2 || bType.getRank() < 2)
    return ctx.emitError() << "needs operands of rank 2 or more";
  Value a = centred(c, 0, 2, aType.getRank() - 2, "A", "a_zero_point");
  Value b = centred(c, 1, 3, bType.getRank() - 1, "B", "b_zero_point");
  return c.result(exactIntegerProduct(
      c, a, b, aType.getShape().back(),
      [&](Value x, Value y) { return c.op<MatmulOp>(x, y, false, false); }));
}

/// ConvInteger: Conv of (x - x_zero_point) by (w - w_zero_point) in int32;
/// w's zero point may be per output channel.
LogicalResult convertConvInteger(NodeContext &ctx) {
  Chain c(ctx);
  RankedTensorType wType = ctx.getType(1);
  if (!wType || wType.getRank() < 3)
    return ctx.emitError() << "needs a filter [M, C/group, kernel...]";
  Value x = centred(c, 0, 2, 1, "x", "x_zero_point");
  Value w = centred(c, 1, 3, 0, "w", "w_zero_point");
  int64_t reduction = product(wType.getShape().drop_front());
  return c.result(exactIntegerProduct(
      c, x, w, reduction,
      [&](Value image, Value filter) {
        return convolve(ctx, image, filter, Value());
      }));
}

} // namespace

void addQuantizeConverters(ConverterTable &table) {
  table.add("QuantizeLinear", convertQuantizeLinear);
  table.add("DequantizeLinear", convertDequantizeLinear);
  table.add("DynamicQuantizeLinear", convertDynamicQuantizeLinear);
  table.add("QLinearMatMul", convertQLinearMatMul);
  table.add("QLinearConv", convertQLinearConv);
  table.add("MatMulInteger", convertMatMulInteger);
  table.add("ConvInteger", convertConvInteger);
}

} // namespace cleave::onnx_import
