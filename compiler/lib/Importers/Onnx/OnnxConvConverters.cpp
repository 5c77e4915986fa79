//===- OnnxConvConverters.cpp - ONNX convolution and pooling --------------===//
//
// 2-D (NCHW) Conv, ConvTranspose, MaxPool, AveragePool (other pooling is
// OnnxPoolBySlices.cpp's, 3-D convolutions OnnxConv3d.cpp's) and
// GlobalAveragePool, GlobalMaxPool (a maximum over the spatial axes), and
// their 1-D (NCL) forms as 2-D ones over a height
// of 1 (speech and sequence models' Conv1d): the input and filter gain a
// unit axis, the window attributes an entry of 1 (or 0 padding) before
// theirs, and the result loses the axis again. ONNX pads are [x1_begin,
// x2_begin, x1_end, x2_end], which is the graph dialect's [top, left,
// bottom, right]. auto_pad and ceil_mode are turned into explicit padding
// here, so the graph ops need only one output-size rule.
//
//===----------------------------------------------------------------------===//

#include "OnnxCompose.h"
#include "OnnxGraphImporter.h"
#include "OnnxPoolBySlices.h"
#include "OnnxTensors.h"

#include "cleave/Dialect/Graph/IR/GraphOps.h"
#include "llvm/ADT/STLExtras.h"

#include <type_traits>

using namespace mlir;
using namespace cleave::graph;

namespace cleave::onnx_import {
namespace {

/// Whether the node works on 1-D (NCL) data, lifted to a height of 1.
struct Lift {
  bool oneD = false;
  /// A 1-D window attribute as a 2-D one: `fill` for the height first.
  Shape pair(Shape v, int64_t fill) const {
    if (oneD && v.size() == 1)
      v.insert(v.begin(), fill);
    return v;
  }
  /// 1-D pads [begin, end] as [0, begin, 0, end].
  Shape pads(Shape v) const {
    return oneD && v.size() == 2 ? Shape{0, v[0], 0, v[1]} : v;
  }
  /// `v` [A, B, L] as [A, B, 1, L]; unchanged for 2-D.
  Value up(NodeContext &ctx, Value v) const {
    if (!oneD || !v)
      return v;
    auto s = cast<RankedTensorType>(v.getType()).getShape();
    return ctx.reshape(v, {s[0], s[1], 1, s[2]}).value_or(Value());
  }
  /// A result [N, C, 1, L] back to [N, C, L]; unchanged for 2-D.
  Value down(NodeContext &ctx, Value y) const {
    if (!oneD || !y)
      return y;
    auto s = cast<RankedTensorType>(y.getType()).getShape();
    return ctx.reshape(y, {s[0], s[1], s[3]}).value_or(Value());
  }
  /// The same, set as the node's output.
  LogicalResult result(NodeContext &ctx, Value y) const {
    y = down(ctx, y);
    return y ? ctx.setResult(0, y) : failure();
  }
};

/// `x` as the NCHW input of a 2-D window op (an NCL one lifted to NC1L).
Value liftImage(NodeContext &ctx, Lift &lift, Value x) {
  if (!x)
    return {};
  auto type = cast<RankedTensorType>(x.getType());
  if (type.getRank() != 4 && type.getRank() != 3) {
    ctx.emitError() << "only 1-D (NCL), 2-D (NCHW) and, for Conv and "
                       "ConvTranspose, 3-D (NCDHW) inputs are supported, got "
                    << type;
    return {};
  }
  if (!isa<FloatType>(type.getElementType())) {
    ctx.emitError() << "the input must be floating point, got " << type;
    return {};
  }
  lift.oneD = type.getRank() == 3;
  return lift.up(ctx, x);
}

/// The node's input 0 as the image of a 2-D window op.
Value getImageInput(NodeContext &ctx, Lift &lift) {
  return liftImage(ctx, lift, ctx.getValue(0));
}

/// A 2-entry window attribute (strides, dilations), default all ones.
FailureOr<Shape> getPair(NodeContext &ctx, StringRef name, const Lift &lift) {
  Shape values = lift.pair(ctx.getInts(name).value_or(Shape{1, 1}), 1);
  if (values.size() != 2 ||
      llvm::any_of(values, [](int64_t v) { return v <= 0; })) {
    ctx.emitError() << "'" << name << "' must hold 2 positive values, got "
                    << shapeToString(values);
    return failure();
  }
  return values;
}

/// Explicit padding from `pads` and `auto_pad`.
FailureOr<Shape> getPadding(NodeContext &ctx, ArrayRef<int64_t> inputHW,
                            ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                            ArrayRef<int64_t> dilations, const Lift &lift) {
  std::string autoPad = ctx.getString("auto_pad", "NOTSET");
  if (autoPad == "NOTSET") {
    Shape pads = lift.pads(ctx.getInts("pads").value_or(Shape{0, 0, 0, 0}));
    if (pads.size() != 4 ||
        llvm::any_of(pads, [](int64_t p) { return p < 0; })) {
      ctx.emitError() << "'pads' must hold 4 non-negative values, got "
                      << shapeToString(pads);
      return failure();
    }
    return pads;
  }
  if (autoPad == "VALID")
    return Shape{0, 0, 0, 0};
  if (autoPad != "SAME_UPPER" && autoPad != "SAME_LOWER") {
    ctx.emitError() << "auto_pad '" << autoPad << "' is not supported";
    return failure();
  }
  // SAME: the output has ceil(in / stride) elements; an odd total padding
  // puts the extra element at the end (UPPER) or the beginning (LOWER).
  Shape pads(4, 0);
  for (int i = 0; i < 2; ++i) {
    int64_t out = (inputHW[i] + strides[i] - 1) / strides[i];
    int64_t total = std::max<int64_t>(0, (out - 1) * strides[i] +
                                             (kernel[i] - 1) * dilations[i] +
                                             1 - inputHW[i]);
    int64_t small = total / 2;
    pads[i] = autoPad == "SAME_UPPER" ? small : total - small;
    pads[i + 2] = total - pads[i];
  }
  return pads;
}

/// The image and the 4-D filter of Conv or ConvTranspose (3-D for 1-D
/// data, lifted), the filter checked against kernel_shape; nulls after an
/// error.
std::pair<Value, Value> liftImageAndFilter(NodeContext &ctx, Lift &lift,
                                           Value image, Value filter) {
  Value x = liftImage(ctx, lift, image);
  Value w = x ? filter : Value();
  if (!w)
    return {};
  auto wType = cast<RankedTensorType>(w.getType());
  if (wType.getRank() != (lift.oneD ? 3 : 4)) {
    ctx.emitError() << "the filter must have rank " << (lift.oneD ? 3 : 4)
                    << ", got " << wType;
    return {};
  }
  w = lift.up(ctx, w);
  if (!w)
    return {};
  wType = cast<RankedTensorType>(w.getType());
  if (std::optional<Shape> given = ctx.getInts("kernel_shape"))
    if (Shape kernel = lift.pair(*given, 1);
        ArrayRef<int64_t>(kernel) != wType.getShape().drop_front(2)) {
      ctx.emitError() << "kernel_shape " << shapeToString(*given)
                      << " disagrees with the filter " << wType;
      return {};
    }
  return {x, w};
}

/// The node's inputs 0 and 1 as image and filter.
std::pair<Value, Value> getImageAndFilter(NodeContext &ctx, Lift &lift) {
  Value x = ctx.getValue(0);
  Value w = x ? ctx.getValue(1) : Value();
  return w ? liftImageAndFilter(ctx, lift, x, w) : std::pair<Value, Value>();
}

LogicalResult convertConv(NodeContext &ctx) {
  Value x = ctx.getValue(0);
  Value w = x ? ctx.getValue(1) : Value();
  Value bias;
  if (!w || (ctx.hasInput(2) && !(bias = ctx.getValue(2))))
    return failure();
  Value y = convolve(ctx, x, w, bias);
  return y ? ctx.setResult(0, y) : failure();
}

} // namespace

Value convolve(NodeContext &ctx, Value image, Value filter, Value bias) {
  if (image && cast<RankedTensorType>(image.getType()).getRank() == 5)
    return convolve3d(ctx, image, filter, bias);
  Lift lift;
  auto [x, w] = liftImageAndFilter(ctx, lift, image, filter);
  if (!w)
    return {};
  auto xType = cast<RankedTensorType>(x.getType());
  auto wType = cast<RankedTensorType>(w.getType());
  FailureOr<Shape> strides = getPair(ctx, "strides", lift);
  FailureOr<Shape> dilations = getPair(ctx, "dilations", lift);
  if (failed(strides) || failed(dilations))
    return {};
  FailureOr<Shape> pads =
      getPadding(ctx, xType.getShape().drop_front(2),
                 wType.getShape().drop_front(2), *strides, *dilations, lift);
  if (failed(pads))
    return {};
  FailureOr<Conv2dOp> op = ctx.create<Conv2dOp>(
      x, w, bias, ArrayRef<int64_t>(*strides), ArrayRef<int64_t>(*pads),
      ArrayRef<int64_t>(*dilations), ctx.getInt("group", 1));
  if (failed(op))
    return {};
  return lift.down(ctx, op->getResult());
}

FailureOr<Shape> transposedExtents(NodeContext &ctx, ArrayRef<int64_t> in,
                                   ArrayRef<int64_t> kernel,
                                   ArrayRef<int64_t> strides,
                                   ArrayRef<int64_t> dilations,
                                   std::optional<Shape> outputShape,
                                   StringRef autoPad, Shape &outputPadding,
                                   Shape &pads) {
  size_t rank = in.size();
  if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    // SAME: the output is the input times the stride.
    if (!outputShape) {
      outputShape.emplace();
      for (size_t i = 0; i < rank; ++i)
        outputShape->push_back(in[i] * strides[i]);
    }
  } else if (autoPad != "NOTSET") {
    ctx.emitError() << "auto_pad " << autoPad << " is not supported";
    return failure();
  }
  if (outputShape && outputShape->size() < rank) {
    ctx.emitError() << "output_shape needs " << rank << " spatial sizes, got "
                    << shapeToString(*outputShape);
    return failure();
  }
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t full = strides[i] * (in[i] - 1) + outputPadding[i] +
                   dilations[i] * (kernel[i] - 1) + 1;
    int64_t &begin = pads[i], &end = pads[i + rank];
    if (outputShape) {
      int64_t target = (*outputShape)[outputShape->size() - rank + i];
      // SAME_UPPER puts the odd pixel at the end, otherwise at the start;
      // halves rounded down (a negative total pads the end negatively: the
      // output runs past what the input reaches, in zeros).
      int64_t total = full - target;
      int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      begin = autoPad == "SAME_UPPER" ? half : total - half;
      end = total - begin;
    }
    out[i] = full - begin - end;
    if (begin < 0) {
      ctx.emitError() << "output_shape needs negative padding at the start "
                         "of axis "
                      << i << ", which is not supported";
      return failure();
    }
    // A negative end pad is output padding (rows no input reaches).
    if (end < 0) {
      outputPadding[i] -= end;
      end = 0;
    }
    if (out[i] <= 0 ||
        outputPadding[i] >= std::max(strides[i], dilations[i])) {
      ctx.emitError() << "axis " << i << " of the output would be " << out[i]
                      << " (output_padding must be below the stride)";
      return failure();
    }
  }
  return out;
}

namespace {

/// ConvTranspose as graph.conv2d_input_grad: a transposed convolution is
/// the gradient of a convolution for its input, with ONNX's [C_in,
/// C_out/group, kH, kW] filter in the place of the convolution's [C_out,
/// C_in/group, ...] (the same layout read the other way round). The output
/// is stride (H - 1) + output_padding + dilation (k - 1) + 1 - pads, or
/// output_shape (under auto_pad SAME, input x stride) with the pads it
/// implies; a bias is added per channel.
/// Trains through conv2d_input_grad's own derivative (a convolution and a
/// filter gradient).
LogicalResult convertConvTranspose(NodeContext &ctx) {
  if (RankedTensorType type = ctx.getType(0); type && type.getRank() == 5)
    return convertConvTranspose3d(ctx);
  Lift lift;
  auto [x, w] = getImageAndFilter(ctx, lift);
  if (!w)
    return failure();
  auto xType = cast<RankedTensorType>(x.getType());
  auto wType = cast<RankedTensorType>(w.getType());
  int64_t group = ctx.getInt("group", 1);
  if (group < 1 || wType.getDimSize(0) != xType.getDimSize(1) ||
      xType.getDimSize(1) % group != 0)
    return ctx.emitError() << "the filter must be [C_in = "
                           << xType.getDimSize(1)
                           << ", C_out / group, kH, kW], got " << wType;
  FailureOr<Shape> strides = getPair(ctx, "strides", lift);
  FailureOr<Shape> dilations = getPair(ctx, "dilations", lift);
  if (failed(strides) || failed(dilations))
    return failure();
  Shape outputPadding =
      lift.pair(ctx.getInts("output_padding").value_or(Shape{0, 0}), 0);
  Shape pads = lift.pads(ctx.getInts("pads").value_or(Shape{0, 0, 0, 0}));
  std::string autoPad = ctx.getString("auto_pad", "NOTSET");
  if (outputPadding.size() != 2 || pads.size() != 4)
    return ctx.emitError() << "needs 2-D output_padding and pads";
  std::optional<Shape> outputShape = ctx.getInts("output_shape");
  if (outputShape && lift.oneD)
    outputShape = lift.pair(Shape(outputShape->end() - 1, outputShape->end()),
                            1);
  FailureOr<Shape> out = transposedExtents(
      ctx, xType.getShape().drop_front(2), wType.getShape().drop_front(2),
      *strides, *dilations, outputShape, autoPad, outputPadding, pads);
  if (failed(out))
    return failure();
  int64_t channels = wType.getDimSize(1) * group;
  auto resultType = RankedTensorType::get(
      {xType.getDimSize(0), channels, (*out)[0], (*out)[1]}, xType.getElementType());
  FailureOr<Conv2dInputGradOp> op = ctx.create<Conv2dInputGradOp>(
      resultType, x, w, ArrayRef<int64_t>(*strides), ArrayRef<int64_t>(pads),
      ArrayRef<int64_t>(*dilations), group);
  if (failed(op))
    return failure();
  Value y = op->getResult();
  if (ctx.hasInput(2)) {
    Value bias = ctx.getValue(2);
    if (!bias)
      return failure();
    FailureOr<Value> b = ctx.reshape(bias, {1, channels, 1, 1});
    if (failed(b))
      return failure();
    FailureOr<AddOp> add = ctx.create<AddOp>(y, *b);
    if (failed(add))
      return failure();
    y = add->getResult();
  }
  return lift.result(ctx, y);
}

/// MaxPool and AveragePool.
template <typename OpTy> LogicalResult convertPool(NodeContext &ctx) {
  if (poolNeedsSlices(ctx))
    return convertPoolBySlices(ctx, std::is_same_v<OpTy, MaxPool2dOp>);
  Lift lift;
  Value x = getImageInput(ctx, lift);
  if (!x)
    return failure();
  auto xType = cast<RankedTensorType>(x.getType());
  std::optional<Shape> kernel = ctx.getInts("kernel_shape");
  if (kernel)
    kernel = lift.pair(*kernel, 1);
  if (!kernel || kernel->size() != 2)
    return ctx.emitError() << "needs a kernel_shape of the input's "
                              "spatial rank";
  FailureOr<Shape> strides = getPair(ctx, "strides", lift);
  if (failed(strides))
    return failure();
  FailureOr<Shape> dilations = getPair(ctx, "dilations", lift);
  if (failed(dilations))
    return failure();
  ArrayRef<int64_t> inputHW = xType.getShape().drop_front(2);
  FailureOr<Shape> pads =
      getPadding(ctx, inputHW, *kernel, *strides, *dilations, lift);
  if (failed(pads))
    return failure();
  // graph.avg_pool2d averages over the window's elements inside the
  // input; count_include_pad = 1 divides by those inside the padded input
  // instead: the same sums, rescaled per output position below.
  bool includePad = std::is_same_v<OpTy, AvgPool2dOp> &&
                    ctx.getInt("count_include_pad", 0) != 0 &&
                    llvm::any_of(*pads, [](int64_t p) { return p != 0; });
  Shape explicitPads = *pads;
  if (ctx.getInt("ceil_mode", 0) != 0) {
    // Extra padding at the end yields the ceil-mode output size; a last
    // window that would start in the end padding is dropped, as PyTorch
    // and ONNX Runtime do. Padding is excluded from max and mean alike.
    for (int i = 0; i < 2; ++i) {
      int64_t span = inputHW[i] + (*pads)[i] + (*pads)[i + 2] - (*kernel)[i];
      if (span < 0)
        continue;
      int64_t s = (*strides)[i];
      int64_t floorOut = span / s + 1;
      int64_t ceilOut = (span + s - 1) / s + 1;
      if ((ceilOut - 1) * s >= inputHW[i] + (*pads)[i])
        --ceilOut;
      (*pads)[i + 2] += (ceilOut - floorOut) * s;
    }
  }
  FailureOr<OpTy> op =
      ctx.create<OpTy>(x, ArrayRef<int64_t>(*kernel),
                       ArrayRef<int64_t>(*strides), ArrayRef<int64_t>(*pads));
  if (failed(op))
    return failure();
  Value y = op->getResult();
  if (includePad) {
    auto yType = cast<RankedTensorType>(y.getType());
    int64_t out[2] = {yType.getDimSize(2), yType.getDimSize(3)};
    // Per axis and output position: window elements inside the input, and
    // inside the explicitly padded input.
    auto counts = [&](int axis, int64_t o) {
      int64_t start = o * (*strides)[axis] - (*pads)[axis];
      int64_t end = start + (*kernel)[axis];
      auto inside = [&](int64_t lo, int64_t hi) {
        return std::max<int64_t>(0, std::min(end, hi) - std::max(start, lo));
      };
      int64_t n = inputHW[axis];
      return std::make_pair(
          inside(0, n),
          inside(-explicitPads[axis], n + explicitPads[axis + 2]));
    };
    HostTensor scale = HostTensor::zeros(onnx::TensorProto::FLOAT,
                                         {1, 1, out[0], out[1]});
    for (int64_t i = 0; i < out[0]; ++i)
      for (int64_t j = 0; j < out[1]; ++j) {
        auto [rowsIn, rowsPadded] = counts(0, i);
        auto [colsIn, colsPadded] = counts(1, j);
        scale.floats[i * out[1] + j] =
            double(rowsIn * colsIn) / double(rowsPadded * colsPadded);
      }
    FailureOr<MulOp> mul = ctx.create<MulOp>(y, ctx.createConstant(scale));
    if (failed(mul))
      return failure();
    y = mul->getResult();
  }
  return lift.result(ctx, y);
}

LogicalResult convertGlobalAveragePool(NodeContext &ctx) {
  Lift lift;
  Value x = getImageInput(ctx, lift);
  if (!x)
    return failure();
  FailureOr<GlobalAvgPoolOp> op = ctx.create<GlobalAvgPoolOp>(x);
  if (failed(op))
    return failure();
  return lift.result(ctx, op->getResult());
}

/// The maximum over the spatial dimensions, kept as 1s (N, C, 1, 1).
LogicalResult convertGlobalMaxPool(NodeContext &ctx) {
  Value x = ctx.getValue(0);
  if (!x)
    return failure();
  auto type = cast<RankedTensorType>(x.getType());
  if (type.getRank() < 3)
    return ctx.emitError() << "expects [N, C, spatial...], got " << type;
  SmallVector<int64_t> axes;
  for (int64_t d = 2; d < type.getRank(); ++d)
    axes.push_back(d);
  FailureOr<ReduceMaxOp> op = ctx.create<ReduceMaxOp>(
      x, ArrayRef<int64_t>(axes), /*keepdims=*/true);
  if (failed(op))
    return failure();
  return ctx.setResult(0, op->getResult());
}

/// LRN (AlexNet's local response normalisation across channels): x over
/// (bias + alpha / size * the sum of x^2 over the `size` channels around
/// each, zero beyond the edges)^beta. The window sum is a convolution of
/// x^2, viewed as [N, 1, C, spatial], with a [1, 1, size, 1] filter of ones.
LogicalResult convertLrn(NodeContext &ctx) {
  Value x = floatOperand(ctx, 0, "the input");
  if (!x)
    return failure();
  auto type = cast<RankedTensorType>(x.getType());
  if (type.getRank() < 3)
    return ctx.emitError() << "needs an input [N, C, ...], got " << type;
  int64_t size = ctx.getInt("size", 0);
  if (size < 1)
    return ctx.emitError() << "size must be a positive channel count, got "
                           << size;
  double alpha = ctx.getFloat("alpha", 1e-4), beta = ctx.getFloat("beta", 0.75),
         bias = ctx.getFloat("bias", 1.0);
  Shape shape(type.getShape());
  int64_t spatial = 1;
  for (int64_t d : llvm::drop_begin(shape, 2))
    spatial *= d;
  Chain c(ctx);
  Value squares = c.mul(x, x);
  if (!squares)
    return failure();
  FailureOr<Value> column =
      ctx.reshape(squares, {shape[0], 1, shape[1], spatial});
  if (failed(column))
    return failure();
  HostTensor ones =
      HostTensor::zeros(onnx::TensorProto::FLOAT, {1, 1, size, 1});
  std::fill(ones.floats.begin(), ones.floats.end(), 1.0);
  Value filter = ctx.createConstant(ones);
  int64_t before = (size - 1) / 2, after = size - 1 - before;
  FailureOr<Conv2dOp> sums = ctx.create<Conv2dOp>(
      *column, filter, Value(), ArrayRef<int64_t>{1, 1},
      ArrayRef<int64_t>{before, 0, after, 0}, ArrayRef<int64_t>{1, 1},
      int64_t(1));
  if (failed(sums))
    return failure();
  FailureOr<Value> sum = ctx.reshape(sums->getResult(), shape);
  if (failed(sum))
    return failure();
  Value scaled = c.add(c.scalar(x, bias),
                       c.mul(*sum, c.scalar(x, alpha / double(size))));
  Value denominator = c.op<PowOp>(scaled, c.scalar(x, beta));
  return c.result(c.op<DivOp>(x, denominator));
}

} // namespace

void addConvolutionConverters(ConverterTable &table) {
  table.add("Conv", convertConv);
  table.add("LRN", convertLrn);
  table.add("ConvTranspose", convertConvTranspose);
  table.add("MaxPool", convertPool<MaxPool2dOp>);
  table.add("AveragePool", convertPool<AvgPool2dOp>);
  table.add("GlobalAveragePool", convertGlobalAveragePool);
  table.add("GlobalMaxPool", convertGlobalMaxPool);
}

} // namespace cleave::onnx_import
