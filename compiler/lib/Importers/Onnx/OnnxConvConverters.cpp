//===- OnnxConvConverters.cpp - ONNX convolution and pooling --------------===//
//
// 2-D (NCHW) Conv, MaxPool, AveragePool and GlobalAveragePool. ONNX pads
// are [x1_begin, x2_begin, x1_end, x2_end], which is the graph dialect's
// [top, left, bottom, right]. auto_pad and ceil_mode are turned into
// explicit padding here, so the graph ops need only one output-size rule.
//
//===----------------------------------------------------------------------===//

#include "OnnxGraphImporter.h"

#include "cleave/Dialect/Graph/IR/GraphOps.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace cleave::graph;

namespace cleave::onnx_import {
namespace {

/// The NCHW input of a 2-D window op.
Value getImageInput(NodeContext &ctx) {
  Value x = ctx.getValue(0);
  if (!x)
    return {};
  auto type = cast<RankedTensorType>(x.getType());
  if (type.getRank() != 4) {
    ctx.emitError() << "only 2-D (NCHW) inputs are supported, got " << type;
    return {};
  }
  if (!isa<FloatType>(type.getElementType())) {
    ctx.emitError() << "the input must be floating point, got " << type;
    return {};
  }
  return x;
}

/// A 2-entry window attribute (strides, dilations), default all ones.
FailureOr<Shape> getPair(NodeContext &ctx, StringRef name) {
  Shape values = ctx.getInts(name).value_or(Shape{1, 1});
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
                            ArrayRef<int64_t> dilations) {
  std::string autoPad = ctx.getString("auto_pad", "NOTSET");
  if (autoPad == "NOTSET") {
    Shape pads = ctx.getInts("pads").value_or(Shape{0, 0, 0, 0});
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

LogicalResult convertConv(NodeContext &ctx) {
  Value x = getImageInput(ctx);
  Value w = x ? ctx.getValue(1) : Value();
  if (!w)
    return failure();
  auto xType = cast<RankedTensorType>(x.getType());
  auto wType = cast<RankedTensorType>(w.getType());
  if (wType.getRank() != 4)
    return ctx.emitError() << "the filter must be OIHW, got " << wType;
  if (std::optional<Shape> kernel = ctx.getInts("kernel_shape"))
    if (ArrayRef<int64_t>(*kernel) != wType.getShape().drop_front(2))
      return ctx.emitError() << "kernel_shape " << shapeToString(*kernel)
                             << " disagrees with the filter " << wType;
  FailureOr<Shape> strides = getPair(ctx, "strides");
  if (failed(strides))
    return failure();
  FailureOr<Shape> dilations = getPair(ctx, "dilations");
  if (failed(dilations))
    return failure();
  FailureOr<Shape> pads =
      getPadding(ctx, xType.getShape().drop_front(2),
                 wType.getShape().drop_front(2), *strides, *dilations);
  if (failed(pads))
    return failure();
  Value bias;
  if (ctx.hasInput(2) && !(bias = ctx.getValue(2)))
    return failure();
  FailureOr<Conv2dOp> op = ctx.create<Conv2dOp>(
      x, w, bias, ArrayRef<int64_t>(*strides), ArrayRef<int64_t>(*pads),
      ArrayRef<int64_t>(*dilations), ctx.getInt("group", 1));
  if (failed(op))
    return failure();
  return ctx.setResult(0, op->getResult());
}

/// MaxPool and AveragePool.
template <typename OpTy> LogicalResult convertPool(NodeContext &ctx) {
  Value x = getImageInput(ctx);
  if (!x)
    return failure();
  if (ctx.isOutputUsed(1))
    return ctx.emitError() << "the Indices output is not supported";
  auto xType = cast<RankedTensorType>(x.getType());
  std::optional<Shape> kernel = ctx.getInts("kernel_shape");
  if (!kernel || kernel->size() != 2)
    return ctx.emitError() << "needs a 2-entry kernel_shape";
  FailureOr<Shape> strides = getPair(ctx, "strides");
  if (failed(strides))
    return failure();
  FailureOr<Shape> dilations = getPair(ctx, "dilations");
  if (failed(dilations))
    return failure();
  if ((*dilations)[0] != 1 || (*dilations)[1] != 1)
    return ctx.emitError() << "dilated pooling is not supported";
  ArrayRef<int64_t> inputHW = xType.getShape().drop_front(2);
  FailureOr<Shape> pads =
      getPadding(ctx, inputHW, *kernel, *strides, *dilations);
  if (failed(pads))
    return failure();
  if (ctx.getInt("count_include_pad", 0) != 0 &&
      llvm::any_of(*pads, [](int64_t p) { return p != 0; }))
    return ctx.emitError() << "count_include_pad = 1 with padding is not "
                              "supported (graph.avg_pool2d excludes padding)";
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
  return ctx.setResult(0, op->getResult());
}

LogicalResult convertGlobalAveragePool(NodeContext &ctx) {
  Value x = getImageInput(ctx);
  if (!x)
    return failure();
  FailureOr<GlobalAvgPoolOp> op = ctx.create<GlobalAvgPoolOp>(x);
  if (failed(op))
    return failure();
  return ctx.setResult(0, op->getResult());
}

} // namespace

void addConvolutionConverters(ConverterTable &table) {
  table.add("Conv", convertConv);
  table.add("MaxPool", convertPool<MaxPool2dOp>);
  table.add("AveragePool", convertPool<AvgPool2dOp>);
  table.add("GlobalAveragePool", convertGlobalAveragePool);
}

} // namespace cleave::onnx_import
