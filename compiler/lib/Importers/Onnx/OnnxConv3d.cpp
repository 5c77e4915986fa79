//===- OnnxConv3d.cpp - 3-D Conv and ConvTranspose as 2-D ones ------------===//
//
// Video and volumetric models (I3D, 3-D U-Nets, video diffusion) convolve
// over depth as well as height and width. A 3-D convolution is a 2-D one
// whose channels also run over the kernel's depth taps: output depth d
// reads input depths d * stride + kd * dilation - pad, so the kD strided
// depth slices of the padded input, stacked beside the channels and with
// depth folded into the batch, meet a filter [C_out, kD * C_in / group,
// kH, kW] in one graph.conv2d (its FLOPs are the 3-D convolution's; the
// input is read kD times, as an im2col over depth would). A 3-D
// ConvTranspose is the mirror: one graph.conv2d_input_grad produces every
// depth tap's contribution for every input depth, and each tap's planes
// are spread out by the stride, shifted by kd * dilation and summed. Both
// are ordinary graph ops, so shapes, costs, kernels, sharding and autodiff
// come with them. Channels stay grouped: the stacked channels are ordered
// [group, kD, C / group] so that each group's taps stay in its group.
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

/// A 3-entry window attribute (strides, dilations), default all ones.
FailureOr<Shape> getTriple(NodeContext &ctx, StringRef name) {
  Shape values = ctx.getInts(name).value_or(Shape{1, 1, 1});
  if (values.size() != 3 ||
      llvm::any_of(values, [](int64_t v) { return v <= 0; })) {
    ctx.emitError() << "'" << name << "' must hold 3 positive values, got "
                    << shapeToString(values);
    return failure();
  }
  return values;
}

/// `x` with `before` and `after` zeros along `axis`.
Value padAxis(NodeContext &ctx, Value x, int64_t axis, int64_t before,
              int64_t after) {
  if (!x || (before == 0 && after == 0))
    return x;
  auto type = cast<RankedTensorType>(x.getType());
  SmallVector<Value> parts;
  auto zeros = [&](int64_t n) {
    Shape shape(type.getShape());
    shape[axis] = n;
    return ctx.createSplat(RankedTensorType::get(shape, type.getElementType()),
                           0.0);
  };
  if (before > 0)
    parts.push_back(zeros(before));
  parts.push_back(x);
  if (after > 0)
    parts.push_back(zeros(after));
  return concat(ctx, parts, axis);
}

/// Elements [start, start + (count - 1) step] of `x` along `axis`, every
/// `step`th.
Value sliceAxis(NodeContext &ctx, Value x, int64_t axis, int64_t start,
                int64_t count, int64_t step) {
  if (!x)
    return {};
  Shape shape = shapeOf(x);
  Shape begin(shape.size(), 0), end = shape, steps(shape.size(), 1);
  begin[axis] = start;
  end[axis] = start + (count - 1) * step + 1;
  steps[axis] = step;
  return compose<SliceOp>(ctx, x, ArrayRef<int64_t>(begin),
                          ArrayRef<int64_t>(end), ArrayRef<int64_t>(steps));
}

Value reshapeTo(NodeContext &ctx, Value v, Shape shape) {
  return v ? ctx.reshape(v, shape).value_or(Value()) : Value();
}

Value transposeBy(NodeContext &ctx, Value v, ArrayRef<int64_t> perm) {
  return compose<TransposeOp>(ctx, v, perm);
}

/// The filter [A, B, kD, kH, kW] as [A, kD * B, kH, kW], taps outermost.
Value stackFilterTaps(NodeContext &ctx, Value w) {
  Shape s = shapeOf(w);
  return reshapeTo(ctx, transposeBy(ctx, w, {0, 2, 1, 3, 4}),
                   {s[0], s[2] * s[1], s[3], s[4]});
}

/// A rank-5 floating-point image and filter, checked; nulls after an error.
bool checkVolume(NodeContext &ctx, Value x, Value w) {
  if (!x || !w)
    return false;
  auto xType = cast<RankedTensorType>(x.getType());
  auto wType = cast<RankedTensorType>(w.getType());
  if (!isa<FloatType>(xType.getElementType())) {
    ctx.emitError() << "the input must be floating point, got " << xType;
    return false;
  }
  if (wType.getRank() != 5) {
    ctx.emitError() << "the filter of a 3-D convolution must have rank 5, got "
                    << wType;
    return false;
  }
  if (std::optional<Shape> kernel = ctx.getInts("kernel_shape");
      kernel && ArrayRef<int64_t>(*kernel) != wType.getShape().drop_front(2)) {
    ctx.emitError() << "kernel_shape " << shapeToString(*kernel)
                    << " disagrees with the filter " << wType;
    return false;
  }
  return true;
}

} // namespace

Value convolve3d(NodeContext &ctx, Value x, Value w, Value bias) {
  if (!checkVolume(ctx, x, w))
    return {};
  Shape in = shapeOf(x), k = shapeOf(w);
  int64_t n = in[0], ch = in[1], group = ctx.getInt("group", 1);
  if (group < 1 || ch % group != 0 || k[1] * group != ch || k[0] % group) {
    ctx.emitError() << "the filter must be [C_out, C_in / group, kD, kH, kW] "
                       "with C_in = "
                    << ch << " and group " << group << ", got "
                    << shapeToString(k);
    return {};
  }
  FailureOr<Shape> strides = getTriple(ctx, "strides");
  FailureOr<Shape> dilations = getTriple(ctx, "dilations");
  if (failed(strides) || failed(dilations))
    return {};
  std::string autoPad = ctx.getString("auto_pad", "NOTSET");
  Shape pads(6, 0);
  if (autoPad == "NOTSET") {
    pads = ctx.getInts("pads").value_or(pads);
    if (pads.size() != 6 ||
        llvm::any_of(pads, [](int64_t p) { return p < 0; })) {
      ctx.emitError() << "'pads' must hold 6 non-negative values, got "
                      << shapeToString(pads);
      return {};
    }
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    // The output has ceil(in / stride) elements; an odd total padding puts
    // the extra element at the end (UPPER) or the beginning (LOWER).
    for (int i = 0; i < 3; ++i) {
      int64_t s = (*strides)[i], out = (in[2 + i] + s - 1) / s;
      int64_t total = std::max<int64_t>(
          0, (out - 1) * s + (k[2 + i] - 1) * (*dilations)[i] + 1 - in[2 + i]);
      int64_t small = total / 2;
      pads[i] = autoPad == "SAME_UPPER" ? small : total - small;
      pads[i + 3] = total - pads[i];
    }
  } else if (autoPad != "VALID") {
    ctx.emitError() << "auto_pad '" << autoPad << "' is not supported";
    return {};
  }
  int64_t sd = (*strides)[0], dd = (*dilations)[0], kd = k[2];
  int64_t depth = (in[2] + pads[0] + pads[3] - dd * (kd - 1) - 1) / sd + 1;
  if (depth <= 0) {
    ctx.emitError() << "the kernel " << shapeToString(k)
                    << " is deeper than the padded input " << shapeToString(in);
    return {};
  }
  // The kD depth taps [N, C, D_out, H, W], stacked as [N, g, kD, C/g, ...]
  // and laid out [N * D_out, g * kD * C/g, H, W].
  Value padded = padAxis(ctx, x, 2, pads[0], pads[3]);
  SmallVector<Value> taps;
  for (int64_t t = 0; t < kd; ++t)
    taps.push_back(reshapeTo(ctx, sliceAxis(ctx, padded, 2, t * dd, depth, sd),
                             {n, group, 1, ch / group, depth, in[3], in[4]}));
  Value stacked = transposeBy(ctx, concat(ctx, taps, 2), {0, 4, 1, 2, 3, 5, 6});
  stacked = reshapeTo(ctx, stacked, {n * depth, kd * ch, in[3], in[4]});
  Value filter = stackFilterTaps(ctx, w);
  if (!stacked || !filter)
    return {};
  FailureOr<Conv2dOp> op = ctx.create<Conv2dOp>(
      stacked, filter, bias, ArrayRef<int64_t>{(*strides)[1], (*strides)[2]},
      ArrayRef<int64_t>{pads[1], pads[2], pads[4], pads[5]},
      ArrayRef<int64_t>{(*dilations)[1], (*dilations)[2]}, group);
  if (failed(op))
    return {};
  Shape planes = shapeOf(op->getResult());
  Value y =
      reshapeTo(ctx, op->getResult(), {n, depth, k[0], planes[2], planes[3]});
  return transposeBy(ctx, y, {0, 2, 1, 3, 4});
}

LogicalResult convertConvTranspose3d(NodeContext &ctx) {
  Value x = ctx.getValue(0);
  Value w = x ? ctx.getValue(1) : Value();
  if (!checkVolume(ctx, x, w))
    return failure();
  Shape in = shapeOf(x), k = shapeOf(w);
  int64_t n = in[0], ch = in[1], group = ctx.getInt("group", 1);
  if (group < 1 || k[0] != ch || ch % group != 0)
    return ctx.emitError() << "the filter must be [C_in = " << ch
                           << ", C_out / group, kD, kH, kW], got "
                           << shapeToString(k);
  FailureOr<Shape> strides = getTriple(ctx, "strides");
  FailureOr<Shape> dilations = getTriple(ctx, "dilations");
  if (failed(strides) || failed(dilations))
    return failure();
  Shape outputPadding = ctx.getInts("output_padding").value_or(Shape{0, 0, 0});
  Shape pads = ctx.getInts("pads").value_or(Shape(6, 0));
  if (outputPadding.size() != 3 || pads.size() != 6)
    return ctx.emitError() << "needs 3 output_padding values and 6 pads";
  FailureOr<Shape> out = transposedExtents(
      ctx, ArrayRef<int64_t>(in).drop_front(2),
      ArrayRef<int64_t>(k).drop_front(2), *strides, *dilations,
      ctx.getInts("output_shape"), ctx.getString("auto_pad", "NOTSET"),
      outputPadding, pads);
  if (failed(out))
    return failure();
  int64_t outCh = k[1] * group, kd = k[2];
  int64_t sd = (*strides)[0], dd = (*dilations)[0];
  // Every depth tap of every input plane: [N * D, g * kD * C_out/g, Ho, Wo].
  Value planes = reshapeTo(ctx, transposeBy(ctx, x, {0, 2, 1, 3, 4}),
                           {n * in[2], ch, in[3], in[4]});
  Value filter = stackFilterTaps(ctx, w);
  if (!planes || !filter)
    return failure();
  auto planesType = RankedTensorType::get(
      {n * in[2], group * kd * k[1], (*out)[1], (*out)[2]},
      cast<RankedTensorType>(x.getType()).getElementType());
  FailureOr<Conv2dInputGradOp> op = ctx.create<Conv2dInputGradOp>(
      planesType, planes, filter,
      ArrayRef<int64_t>{(*strides)[1], (*strides)[2]},
      ArrayRef<int64_t>{pads[1], pads[2], pads[4], pads[5]},
      ArrayRef<int64_t>{(*dilations)[1], (*dilations)[2]}, group);
  if (failed(op))
    return failure();
  Shape tapShape = {n, in[2], group, kd, k[1], (*out)[1], (*out)[2]};
  Value byTap = reshapeTo(ctx, op->getResult(), tapShape);
  // Tap t of input depth i lands at depth i * stride + t * dilation of the
  // full output, which is then cropped by the depth pads.
  int64_t spread = (in[2] - 1) * sd + 1;
  int64_t full = spread + dd * (kd - 1) + outputPadding[0];
  Value sum;
  for (int64_t t = 0; t < kd; ++t) {
    Value tap = reshapeTo(ctx, sliceAxis(ctx, byTap, 3, t, 1, 1),
                          {n, in[2], outCh, (*out)[1], (*out)[2]});
    if (sd > 1) {
      // Interleave stride - 1 zero planes after each input plane.
      Value one =
          reshapeTo(ctx, tap, {n, in[2], 1, outCh, (*out)[1], (*out)[2]});
      Value gaps = padAxis(ctx, one, 2, 0, sd - 1);
      tap = sliceAxis(
          ctx,
          reshapeTo(ctx, gaps, {n, in[2] * sd, outCh, (*out)[1], (*out)[2]}), 1,
          0, spread, 1);
    }
    Value placed = padAxis(ctx, tap, 1, t * dd, full - t * dd - spread);
    sum = sum ? compose<AddOp>(ctx, sum, placed) : placed;
  }
  Value y = sliceAxis(ctx, sum, 1, pads[0], (*out)[0], 1);
  y = transposeBy(ctx, y, {0, 2, 1, 3, 4});
  if (ctx.hasInput(2)) {
    Value bias = ctx.getValue(2);
    y = compose<AddOp>(ctx, y, reshapeTo(ctx, bias, {1, outCh, 1, 1, 1}));
  }
  return y ? ctx.setResult(0, y) : failure();
}

} // namespace cleave::onnx_import
