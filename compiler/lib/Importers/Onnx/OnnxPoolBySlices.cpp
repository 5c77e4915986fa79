//===- OnnxPoolBySlices.cpp - Pooling as a fold over strided slices -------===//
//
// A pooling window of K taps over an input padded once is K strided
// slices: tap j (a kernel offset per spatial axis) reads the padded input
// from j * dilation with the pooling stride, and each slice has the
// output's shape. MaxPool folds them with graph.max, AveragePool with
// graph.add and a per-position scale of 1 / (the taps counted). This is
// K slices and K - 1 element-wise ops where a fused kernel would read the
// input once: the form for the pooling real models rarely use (3-D, dilated,
// integer, argmax); 1-D and 2-D float pooling keeps graph.max_pool2d and
// graph.avg_pool2d, which the cost model and the CUDA backend know.
//
//===----------------------------------------------------------------------===//

#include "OnnxPoolBySlices.h"
#include "OnnxCompose.h"
#include "OnnxTensors.h"

#include "cleave/Dialect/Graph/IR/GraphOps.h"

#include <limits>

using namespace mlir;
using namespace cleave::graph;

namespace cleave::onnx_import {
namespace {

/// More taps than this would unroll into an unreasonably long chain of ops.
constexpr int64_t kMaxTaps = 4096;

/// The window of one pooling node, per spatial axis.
struct Window {
  Shape input, kernel, strides, dilations;
  /// Padding at the beginning and end as the node states it (pads or
  /// auto_pad); `extraEnd` is what ceil_mode adds after it, never counted.
  Shape begin, end, extraEnd;
  Shape out;
};

/// A window attribute of one positive value per spatial axis, `dflt` when
/// absent.
FailureOr<Shape> getAxisValues(NodeContext &ctx, StringRef name, size_t k,
                               std::optional<int64_t> dflt) {
  std::optional<Shape> values = ctx.getInts(name);
  if (!values && dflt)
    values = Shape(k, *dflt);
  if (!values || values->size() != k ||
      llvm::any_of(*values, [](int64_t v) { return v <= 0; })) {
    ctx.emitError() << "'" << name << "' must hold " << k
                    << " positive values (one per spatial axis), got "
                    << (values ? shapeToString(*values) : "none");
    return failure();
  }
  return *values;
}

FailureOr<Window> getWindow(NodeContext &ctx, ArrayRef<int64_t> spatial) {
  size_t k = spatial.size();
  Window w;
  w.input.assign(spatial.begin(), spatial.end());
  FailureOr<Shape> kernel = getAxisValues(ctx, "kernel_shape", k, {});
  FailureOr<Shape> strides = getAxisValues(ctx, "strides", k, 1);
  FailureOr<Shape> dilations = getAxisValues(ctx, "dilations", k, 1);
  if (failed(kernel) || failed(strides) || failed(dilations))
    return failure();
  w.kernel = *kernel;
  w.strides = *strides;
  w.dilations = *dilations;
  w.begin.assign(k, 0);
  w.end.assign(k, 0);
  w.extraEnd.assign(k, 0);
  std::string autoPad = ctx.getString("auto_pad", "NOTSET");
  if (autoPad == "NOTSET") {
    Shape pads = ctx.getInts("pads").value_or(Shape(2 * k, 0));
    if (pads.size() != 2 * k ||
        llvm::any_of(pads, [](int64_t p) { return p < 0; })) {
      ctx.emitError() << "'pads' must hold " << 2 * k
                      << " non-negative values, got " << shapeToString(pads);
      return failure();
    }
    for (size_t a = 0; a < k; ++a) {
      w.begin[a] = pads[a];
      w.end[a] = pads[a + k];
    }
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    // ceil(in / stride) outputs; an odd total padding puts the extra
    // element at the end (UPPER) or the beginning (LOWER).
    for (size_t a = 0; a < k; ++a) {
      int64_t out = (spatial[a] + w.strides[a] - 1) / w.strides[a];
      int64_t total = std::max<int64_t>(
          0, (out - 1) * w.strides[a] + (w.kernel[a] - 1) * w.dilations[a] +
                 1 - spatial[a]);
      int64_t small = total / 2;
      w.begin[a] = autoPad == "SAME_UPPER" ? small : total - small;
      w.end[a] = total - w.begin[a];
    }
  } else if (autoPad != "VALID") {
    ctx.emitError() << "auto_pad '" << autoPad << "' is not supported";
    return failure();
  }
  bool ceilMode = ctx.getInt("ceil_mode", 0) != 0;
  for (size_t a = 0; a < k; ++a) {
    int64_t extent = (w.kernel[a] - 1) * w.dilations[a] + 1;
    int64_t span = spatial[a] + w.begin[a] + w.end[a] - extent;
    if (span < 0) {
      ctx.emitError() << "spatial axis " << a << ": the window spans "
                      << extent << " elements, more than the padded input's "
                      << spatial[a] + w.begin[a] + w.end[a];
      return failure();
    }
    int64_t s = w.strides[a];
    int64_t out = span / s + 1;
    if (ceilMode) {
      // A last window that would start in the end padding is dropped, as
      // PyTorch and ONNX Runtime do.
      out = (span + s - 1) / s + 1;
      if ((out - 1) * s >= spatial[a] + w.begin[a])
        --out;
      w.extraEnd[a] = std::max<int64_t>(
          0, (out - 1) * s + extent - (spatial[a] + w.begin[a] + w.end[a]));
    }
    w.out.push_back(out);
  }
  if (product(w.kernel) > kMaxTaps) {
    ctx.emitError() << "a window of " << product(w.kernel)
                    << " taps is more than the " << kMaxTaps
                    << " this importer unrolls";
    return failure();
  }
  return w;
}

/// The lowest value of `element`: what max pooling pads with.
double lowest(Type element) {
  if (isa<FloatType>(element))
    return -std::numeric_limits<double>::infinity();
  auto integer = cast<IntegerType>(element);
  if (integer.isUnsigned())
    return 0.0;
  return -std::ldexp(1.0, static_cast<int>(integer.getWidth()) - 1);
}

/// `x` [N, C, spatial...] with `fill` blocks before and after each spatial
/// axis.
Value padSpatial(NodeContext &ctx, Value x, const Window &w, double fill) {
  Type element = cast<RankedTensorType>(x.getType()).getElementType();
  Value y = x;
  for (size_t a = 0; a < w.kernel.size() && y; ++a) {
    int64_t before = w.begin[a], after = w.end[a] + w.extraEnd[a];
    if (before == 0 && after == 0)
      continue;
    int64_t axis = static_cast<int64_t>(a) + 2;
    SmallVector<Value> parts;
    Shape side = shapeOf(y);
    if (before > 0) {
      side[axis] = before;
      parts.push_back(ctx.createSplat(RankedTensorType::get(side, element), fill));
    }
    parts.push_back(y);
    if (after > 0) {
      side[axis] = after;
      parts.push_back(ctx.createSplat(RankedTensorType::get(side, element), fill));
    }
    y = concat(ctx, parts, axis);
  }
  return y;
}

/// The kernel offsets of every tap, the first axis slowest.
std::vector<Shape> taps(const Window &w) {
  std::vector<Shape> all;
  Shape j(w.kernel.size(), 0);
  while (true) {
    all.push_back(j);
    size_t a = j.size();
    while (a > 0 && ++j[a - 1] == w.kernel[a - 1])
      j[--a] = 0;
    if (a == 0)
      return all;
  }
}

/// Tap `j` of the padded input: its elements under each output position.
Value tapSlice(NodeContext &ctx, Value padded, const Window &w,
               const Shape &j) {
  Shape shape = shapeOf(padded);
  Shape starts(shape.size(), 0), limits = shape, strides(shape.size(), 1);
  for (size_t a = 0; a < j.size(); ++a) {
    starts[a + 2] = j[a] * w.dilations[a];
    limits[a + 2] = starts[a + 2] + (w.out[a] - 1) * w.strides[a] + 1;
    strides[a + 2] = w.strides[a];
  }
  return compose<SliceOp>(ctx, padded, ArrayRef<int64_t>(starts),
                          ArrayRef<int64_t>(limits),
                          ArrayRef<int64_t>(strides));
}

/// ONNX's Indices: each element's flat position in the input [N, C,
/// spatial...], the spatial part row-major (storage_order 0) or
/// column-major (1).
HostTensor flatIndices(const Shape &shape, bool columnMajor) {
  HostTensor t = HostTensor::zeros(onnx::TensorProto::INT64, shape);
  size_t k = shape.size() - 2;
  Shape spatial(shape.begin() + 2, shape.end());
  int64_t plane = product(spatial);
  // The stride of each spatial axis in the chosen order.
  Shape stride(k, 1);
  for (size_t a = 0; a < k; ++a)
    for (size_t b = 0; b < k; ++b)
      if (columnMajor ? b < a : b > a)
        stride[a] *= spatial[b];
  Shape at(k, 0);
  for (int64_t e = 0; e < t.size(); ++e) {
    int64_t rest = e % plane, index = e - rest;
    for (size_t a = k; a-- > 0;) {
      at[a] = rest % spatial[a];
      rest /= spatial[a];
    }
    for (size_t a = 0; a < k; ++a)
      index += at[a] * stride[a];
    t.ints[e] = index;
  }
  return t;
}

/// Per output position, 1 / the taps that land in [lo, hi) on every axis:
/// inside the input, or inside the input and its stated padding.
HostTensor averageScale(const Window &w, bool includePad) {
  size_t k = w.kernel.size();
  Shape shape = {1, 1};
  shape.append(w.out.begin(), w.out.end());
  HostTensor t = HostTensor::zeros(onnx::TensorProto::FLOAT, shape);
  // Taps counted per axis and output position.
  std::vector<Shape> counts(k);
  for (size_t a = 0; a < k; ++a) {
    int64_t lo = includePad ? -w.begin[a] : 0;
    int64_t hi = w.input[a] + (includePad ? w.end[a] : 0);
    for (int64_t o = 0; o < w.out[a]; ++o) {
      int64_t n = 0;
      for (int64_t j = 0; j < w.kernel[a]; ++j) {
        int64_t p = o * w.strides[a] - w.begin[a] + j * w.dilations[a];
        n += p >= lo && p < hi;
      }
      counts[a].push_back(n);
    }
  }
  for (int64_t e = 0; e < t.size(); ++e) {
    int64_t rest = e, n = 1;
    for (size_t a = k; a-- > 0;) {
      n *= counts[a][rest % w.out[a]];
      rest /= w.out[a];
    }
    // A window wholly in padding (possible only with dilations) has no
    // taps to average; its sum is 0 and stays 0.
    t.floats[e] = n > 0 ? 1.0 / double(n) : 0.0;
  }
  return t;
}

} // namespace

bool poolNeedsSlices(NodeContext &ctx) {
  RankedTensorType type = ctx.getType(0);
  if (!type)
    return false;
  if (type.getRank() > 4 || !isa<FloatType>(type.getElementType()) ||
      ctx.isOutputUsed(1))
    return true;
  std::optional<Shape> dilations = ctx.getInts("dilations");
  return dilations && llvm::any_of(*dilations, [](int64_t d) { return d != 1; });
}

LogicalResult convertPoolBySlices(NodeContext &ctx, bool isMax) {
  Value x = ctx.getValue(0);
  if (!x)
    return failure();
  auto type = cast<RankedTensorType>(x.getType());
  Type element = type.getElementType();
  if (type.getRank() < 3)
    return ctx.emitError() << "expects an input [N, C, spatial...], got "
                           << type;
  if (isMax ? !isNumeric(element) : !isa<FloatType>(element))
    return ctx.emitError() << "the input must be "
                           << (isMax ? "a number tensor" : "floating point")
                           << ", got " << type;
  FailureOr<Window> w = getWindow(ctx, type.getShape().drop_front(2));
  if (failed(w))
    return failure();
  int64_t storageOrder = ctx.getInt("storage_order", 0);
  if (storageOrder != 0 && storageOrder != 1)
    return ctx.emitError() << "storage_order must be 0 or 1, got "
                           << storageOrder;

  Value padded = padSpatial(ctx, x, *w, isMax ? lowest(element) : 0.0);
  Value indices;
  if (isMax && ctx.isOutputUsed(1))
    indices = padSpatial(
        ctx, ctx.createConstant(flatIndices(shapeOf(x), storageOrder == 1)),
        *w, 0.0);
  Value result, argmax;
  for (const Shape &j : taps(*w)) {
    Value v = tapSlice(ctx, padded, *w, j);
    if (!v)
      return failure();
    if (!result) {
      result = v;
      argmax = indices ? tapSlice(ctx, indices, *w, j) : Value();
      continue;
    }
    if (!isMax) {
      result = compose<AddOp>(ctx, result, v);
    } else if (!indices) {
      result = compose<MaxOp>(ctx, result, v);
    } else {
      // The first maximum in tap order wins, as in ONNX's reference.
      Value better = compose<CompareOp>(
          ctx, StringAttr::get(ctx.getContext(), "gt"), v, result);
      argmax = compose<WhereOp>(ctx, better, tapSlice(ctx, indices, *w, j),
                                argmax);
      result = compose<WhereOp>(ctx, better, v, result);
    }
    if (!result || (indices && !argmax))
      return failure();
  }
  if (!isMax) {
    bool includePad = ctx.getInt("count_include_pad", 0) != 0;
    Value scale =
        castTo(ctx, ctx.createConstant(averageScale(*w, includePad)), element);
    result = compose<MulOp>(ctx, result, scale);
    if (!result)
      return failure();
  }
  if (failed(ctx.setResult(0, result)))
    return failure();
  return argmax ? ctx.setResult(1, argmax) : success();
}

} // namespace cleave::onnx_import
