//===- OnnxShapeOpConverters.cpp - ONNX data movement and shape ops -------===//
//
// Constant, Shape, Cast, Reshape, Flatten, Squeeze, Unsqueeze, Transpose,
// Concat, Split, Slice, Gather, Expand, ConstantOfShape, Range, Identity
// and Dropout. Every converter works on host values (the exporters' shape
// arithmetic) and on run-time tensors alike, with the same ONNX shape rules
// (OnnxShapeRules.h), so both paths agree on every shape.
//
//===----------------------------------------------------------------------===//

#include "OnnxConstantFolding.h"
#include "OnnxGraphImporter.h"
#include "OnnxShapeRules.h"

#include "cleave/Dialect/Graph/IR/GraphOps.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/xxhash.h"

#include <cmath>

#include <numeric>

using namespace mlir;
using namespace cleave::graph;

namespace cleave::onnx_import {
namespace {

/// Sets result 0 to `input` with a new shape: a host tensor keeps its
/// elements, a run-time tensor gets a graph.reshape.
LogicalResult setReshaped(NodeContext &ctx, ArrayRef<int64_t> shape) {
  if (const HostTensor *input = ctx.getConstant(0)) {
    HostTensor out = *input;
    out.shape.assign(shape.begin(), shape.end());
    return ctx.setResult(0, std::move(out));
  }
  Value input = ctx.getValue(0);
  if (!input)
    return failure();
  FailureOr<Value> reshaped = ctx.reshape(input, shape);
  if (failed(reshaped))
    return failure();
  return ctx.setResult(0, *reshaped);
}

/// The shape of input `i`, known for constants, parameters and values.
FailureOr<Shape> getShape(NodeContext &ctx, unsigned i) {
  RankedTensorType type = ctx.getType(i);
  if (!type) {
    ctx.emitError() << "input " << i << " is missing or has no known type";
    return failure();
  }
  return Shape(type.getShape());
}

//===----------------------------------------------------------------------===//
// Sources and identities
//===----------------------------------------------------------------------===//

LogicalResult convertConstant(NodeContext &ctx) {
  MLIRContext *mlirCtx = ctx.getContext();
  for (const onnx::AttributeProto &attr : ctx.getNode().attribute()) {
    const std::string &name = attr.name();
    if (name == "value") {
      const onnx::TensorProto &t = attr.t();
      // Large constants go straight to an attribute; only small ones are
      // worth holding on the host.
      if (product(Shape(t.dims().begin(), t.dims().end())) > kMaxHostElements) {
        RankedTensorType type = getTensorType(mlirCtx, t);
        if (!type)
          return ctx.emitError() << "unsupported constant data type "
                                 << dataTypeName(t.data_type());
        llvm::Expected<ElementsAttr> value = readParameterValue(t, type);
        if (!value)
          return ctx.fail(value.takeError());
        return ctx.setResult(
            0, ConstantOp::create(ctx.getBuilder(), ctx.getLoc(), *value)
                   .getResult());
      }
      llvm::Expected<HostTensor> tensor = readTensor(t);
      if (!tensor)
        return ctx.fail(tensor.takeError());
      return ctx.setResult(0, std::move(*tensor));
    }
    HostTensor out;
    if (name == "value_float" || name == "value_floats") {
      out.dtype = onnx::TensorProto::FLOAT;
      if (name == "value_float")
        out.floats = {attr.f()};
      else
        out.floats.assign(attr.floats().begin(), attr.floats().end());
    } else if (name == "value_int" || name == "value_ints") {
      out.dtype = onnx::TensorProto::INT64;
      if (name == "value_int")
        out.ints = {attr.i()};
      else
        out.ints.assign(attr.ints().begin(), attr.ints().end());
    } else {
      return ctx.emitError()
             << "constant attribute '" << name << "' is not supported";
    }
    if (name == "value_floats" || name == "value_ints")
      out.shape = {static_cast<int64_t>(out.floats.size() + out.ints.size())};
    return ctx.setResult(0, std::move(out));
  }
  return ctx.emitError() << "has no value attribute";
}

/// Identity.
LogicalResult convertIdentity(NodeContext &ctx) {
  if (std::shared_ptr<const HostTensor> input = ctx.getConstantRef(0))
    return ctx.setResult(0, std::move(input));
  Value input = ctx.getValue(0);
  if (!input)
    return failure();
  return ctx.setResult(0, input);
}

/// Dropout: the identity in inference mode (its mask, where read, all
/// true); in training mode (a `training_mode` input known to be true) with
/// a ratio above 0, graph.dropout, whose mask is a function of its seed and
/// the element index (the same on every partition). The seed is the
/// output's name hashed, so that two dropouts draw different masks.
LogicalResult convertDropout(NodeContext &ctx) {
  double ratio = ctx.getFloat("ratio", 0.5); // opset < 12: an attribute
  if (ctx.hasInput(1)) {
    const HostTensor *r = ctx.getImportValue(1);
    if (!r || r->size() != 1)
      return ctx.emitError() << "the ratio must be a scalar known at import "
                                "time";
    ratio = r->getDouble(0);
  }
  bool training = false;
  if (ctx.hasInput(2)) {
    const HostTensor *t = ctx.getImportValue(2);
    if (!t || t->size() != 1)
      return ctx.emitError() << "training_mode must be a scalar known at "
                                "import time";
    training = t->getInt(0) != 0;
  }
  if (training && !(ratio >= 0 && ratio < 1))
    return ctx.emitError() << "ratio " << ratio << " is outside [0, 1)";
  bool drops = training && ratio > 0;
  if (ctx.isOutputUsed(1)) {
    if (drops)
      return ctx.emitError() << "the mask output of training-mode dropout "
                                "(ratio > 0) is not supported: graph.dropout "
                                "draws its mask inside the kernel";
    FailureOr<Shape> shape = getShape(ctx, 0);
    if (failed(shape))
      return failure();
    HostTensor mask = HostTensor::zeros(onnx::TensorProto::BOOL, *shape);
    if (fitsOnHost(*shape)) {
      std::fill(mask.ints.begin(), mask.ints.end(), 1);
      if (failed(ctx.setResult(1, std::move(mask))))
        return failure();
    } else if (failed(ctx.setResult(
                   1, ctx.createSplat(RankedTensorType::get(
                                          *shape, ctx.getBuilder().getI1Type()),
                                      1.0)))) {
      return failure();
    }
  }
  if (!drops)
    return convertIdentity(ctx);
  Value input = ctx.getValue(0);
  if (!input)
    return failure();
  std::string name = ctx.getNode().output(0);
  int64_t seed = static_cast<int64_t>(llvm::xxh3_64bits(name) >> 33);
  OpBuilder &b = ctx.getBuilder();
  FailureOr<DropoutOp> dropout = ctx.create<DropoutOp>(
      input, b.getF64FloatAttr(ratio), b.getI64IntegerAttr(seed));
  if (failed(dropout))
    return failure();
  return ctx.setResult(0, dropout->getResult());
}

/// HannWindow, HammingWindow and BlackmanWindow (opset 17): a constant of
/// `size` elements, computed at import. Periodic (the default) windows
/// span size samples of the cosine, symmetric ones size - 1.
LogicalResult convertWindow(NodeContext &ctx) {
  const HostTensor *size = ctx.getConstant(0);
  if (!size || size->size() != 1)
    return ctx.emitError() << "the size must be a scalar known at import time";
  int64_t n = size->getInt(0);
  if (n < 1)
    return ctx.emitError() << "the size must be positive, got " << n;
  int32_t dtype = ctx.getInt("output_datatype", onnx::TensorProto::FLOAT);
  if (!isFloatType(dtype))
    return ctx.emitError() << "output_datatype " << dtype
                           << " is not a floating-point type";
  double span = ctx.getInt("periodic", 1) ? double(n) : double(n - 1);
  HostTensor w = HostTensor::zeros(dtype, {n});
  StringRef op = ctx.getOpType();
  for (int64_t i = 0; i < n; ++i) {
    double x = span > 0 ? 2 * M_PI * double(i) / span : 0.0;
    if (op == "HannWindow")
      w.floats[i] = 0.5 - 0.5 * std::cos(x);
    else if (op == "HammingWindow") // alpha 25/46, beta 21/46
      w.floats[i] = 25.0 / 46.0 - 21.0 / 46.0 * std::cos(x);
    else // BlackmanWindow
      w.floats[i] = 0.42 - 0.5 * std::cos(x) + 0.08 * std::cos(2 * x);
  }
  return ctx.setResult(0, std::move(w));
}

LogicalResult convertShape(NodeContext &ctx) {
  FailureOr<Shape> shape = getShape(ctx, 0);
  if (failed(shape))
    return failure();
  int64_t rank = shape->size();
  auto clampAxis = [&](int64_t a) {
    return std::clamp<int64_t>(a < 0 ? a + rank : a, 0, rank);
  };
  int64_t start = clampAxis(ctx.getInt("start", 0));
  int64_t end = clampAxis(ctx.getInt("end", rank));
  Shape dims;
  for (int64_t i = start; i < end; ++i)
    dims.push_back((*shape)[i]);
  return ctx.setResult(0, HostTensor::int64Vector(dims));
}

LogicalResult convertSize(NodeContext &ctx) {
  FailureOr<Shape> shape = getShape(ctx, 0);
  if (failed(shape))
    return failure();
  HostTensor out = HostTensor::int64Vector({product(*shape)});
  out.shape.clear();
  return ctx.setResult(0, std::move(out));
}

LogicalResult castTo(NodeContext &ctx, int32_t to) {
  if (const HostTensor *input = ctx.getConstant(0)) {
    int64_t unrepresentable = 0;
    llvm::Expected<HostTensor> r = foldCast(*input, to, &unrepresentable);
    if (!r)
      return ctx.fail(r.takeError());
    if (unrepresentable)
      mlir::emitWarning(ctx.getLoc())
          << unrepresentable << " value(s) cast to " << dataTypeName(to)
          << " are NaN, infinite or out of its range: folded to the integer "
             "ONNX Runtime computes on x86-64 ("
          << (to == onnx::TensorProto::INT64 || to == onnx::TensorProto::UINT64
                  ? "INT64_MIN"
                  : "INT32_MIN")
          << ", truncated to the type), which ONNX leaves undefined";
    return ctx.setResult(0, std::move(*r));
  }
  Type target = getElementType(ctx.getContext(), to);
  if (!target)
    return ctx.emitError() << "cannot cast to " << dataTypeName(to);
  Value input = ctx.getValue(0);
  if (!input)
    return failure();
  auto type = cast<RankedTensorType>(input.getType());
  if (type.getElementType() == target)
    return ctx.setResult(0, input);
  // Every pair of float, integer and bool types: the runtime converts
  // element by element (floats to integers truncate; anything to bool is
  // "not zero"; float64 is stored and computed as float32).
  FailureOr<CastOp> op =
      ctx.create<CastOp>(RankedTensorType::get(type.getShape(), target), input);
  if (failed(op))
    return failure();
  return ctx.setResult(0, op->getResult());
}

LogicalResult convertCast(NodeContext &ctx) {
  return castTo(ctx, ctx.getInt("to", 0));
}

/// The ONNX data type of MLIR element type `e` (UNDEFINED for others).
int32_t onnxTypeOf(Type e) {
  if (auto integer = dyn_cast<IntegerType>(e)) {
    bool u = integer.isUnsigned();
    switch (integer.getWidth()) {
    case 1:
      return onnx::TensorProto::BOOL;
    case 8:
      return u ? onnx::TensorProto::UINT8 : onnx::TensorProto::INT8;
    case 16:
      return u ? onnx::TensorProto::UINT16 : onnx::TensorProto::INT16;
    case 32:
      return u ? onnx::TensorProto::UINT32 : onnx::TensorProto::INT32;
    case 64:
      return u ? onnx::TensorProto::UINT64 : onnx::TensorProto::INT64;
    default:
      return onnx::TensorProto::UNDEFINED;
    }
  }
  return e.isF32()    ? onnx::TensorProto::FLOAT
         : e.isF16()  ? onnx::TensorProto::FLOAT16
         : e.isBF16() ? onnx::TensorProto::BFLOAT16
         : e.isF64()  ? onnx::TensorProto::DOUBLE
                      : onnx::TensorProto::UNDEFINED;
}

/// Cast to the element type of input 1 (only its type is read).
LogicalResult convertCastLike(NodeContext &ctx) {
  RankedTensorType like = ctx.getType(1);
  if (!like)
    return ctx.emitError() << "the second input's type is unknown";
  int32_t to = onnxTypeOf(like.getElementType());
  if (to == onnx::TensorProto::UNDEFINED)
    return ctx.emitError() << "cannot cast like " << like;
  return castTo(ctx, to);
}

/// EyeLike: ones on the k-th diagonal of a matrix shaped like the input,
/// known at import (only the input's type is read).
LogicalResult convertEyeLike(NodeContext &ctx) {
  RankedTensorType type = ctx.getType(0);
  if (!type || type.getRank() != 2 || !type.hasStaticShape())
    return ctx.emitError() << "needs a 2-D input of known shape";
  int32_t dtype = ctx.getInt("dtype", onnxTypeOf(type.getElementType()));
  if (dtype == onnx::TensorProto::UNDEFINED)
    return ctx.emitError() << "cannot make an identity of " << type;
  int64_t rows = type.getDimSize(0), cols = type.getDimSize(1);
  int64_t k = ctx.getInt("k", 0);
  HostTensor eye = HostTensor::zeros(dtype, {rows, cols});
  for (int64_t i = 0; i < rows; ++i)
    if (i + k >= 0 && i + k < cols) {
      if (eye.isFloat())
        eye.floats[i * cols + i + k] = 1.0;
      else
        eye.ints[i * cols + i + k] = 1;
    }
  return ctx.setResult(0, std::move(eye));
}

LogicalResult convertConstantOfShape(NodeContext &ctx) {
  FailureOr<Shape> shape = ctx.getConstantInts(0, "the shape");
  if (failed(shape))
    return failure();
  if (llvm::any_of(*shape, [](int64_t d) { return d < 0; }))
    return ctx.emitError() << "negative dimension in " << shapeToString(*shape);
  HostTensor fill = HostTensor::zeros(onnx::TensorProto::FLOAT, {});
  if (const onnx::AttributeProto *attr = ctx.getAttr("value")) {
    llvm::Expected<HostTensor> value = readTensor(attr->t());
    if (!value)
      return ctx.fail(value.takeError());
    if (value->size() != 1)
      return ctx.emitError() << "value must hold one element";
    fill = std::move(*value);
  }
  if (!fitsOnHost(*shape)) {
    RankedTensorType type = RankedTensorType::get(
        *shape, getElementType(ctx.getContext(), fill.dtype));
    return ctx.setResult(0, ctx.createSplat(type, fill.getDouble(0)));
  }
  llvm::Expected<HostTensor> out = foldExpand(fill, *shape);
  if (!out)
    return ctx.fail(out.takeError());
  out->shape = *shape; // a one-element fill may have rank 1
  return ctx.setResult(0, std::move(*out));
}

LogicalResult convertRange(NodeContext &ctx) {
  // The length depends on the values: they must be known here (integers
  // are folded constants, float scalars small initializers).
  const HostTensor *start = ctx.getImportValue(0);
  const HostTensor *limit = ctx.getImportValue(1);
  const HostTensor *delta = ctx.getImportValue(2);
  if (!start || !limit || !delta)
    return ctx.emitError() << "start, limit and delta must be known at import "
                              "time";
  llvm::Expected<HostTensor> r = foldRange(*start, *limit, *delta);
  if (!r)
    return ctx.fail(r.takeError());
  return ctx.setResult(0, std::move(*r));
}

//===----------------------------------------------------------------------===//
// Reshapes
//===----------------------------------------------------------------------===//

LogicalResult convertReshape(NodeContext &ctx) {
  FailureOr<Shape> input = getShape(ctx, 0);
  if (failed(input))
    return failure();
  FailureOr<Shape> target = ctx.getConstantInts(1, "the target shape");
  if (failed(target))
    return failure();
  llvm::Expected<Shape> shape =
      computeReshape(*input, *target, ctx.getInt("allowzero", 0) != 0);
  if (!shape)
    return ctx.fail(shape.takeError());
  return setReshaped(ctx, *shape);
}

LogicalResult convertFlatten(NodeContext &ctx) {
  FailureOr<Shape> input = getShape(ctx, 0);
  if (failed(input))
    return failure();
  llvm::Expected<Shape> shape = computeFlatten(*input, ctx.getInt("axis", 1));
  if (!shape)
    return ctx.fail(shape.takeError());
  return setReshaped(ctx, *shape);
}

/// Axes of Squeeze and Unsqueeze: an input from opset 13, an attribute
/// before.
FailureOr<std::optional<Shape>> getAxes(NodeContext &ctx) {
  if (ctx.hasInput(1)) {
    FailureOr<Shape> axes = ctx.getConstantInts(1, "axes");
    if (failed(axes))
      return failure();
    return std::optional<Shape>(*axes);
  }
  return ctx.getInts("axes");
}

LogicalResult convertSqueeze(NodeContext &ctx) {
  FailureOr<Shape> input = getShape(ctx, 0);
  if (failed(input))
    return failure();
  FailureOr<std::optional<Shape>> axes = getAxes(ctx);
  if (failed(axes))
    return failure();
  llvm::Expected<Shape> shape =
      computeSqueeze(*input, *axes ? &**axes : nullptr);
  if (!shape)
    return ctx.fail(shape.takeError());
  return setReshaped(ctx, *shape);
}

LogicalResult convertUnsqueeze(NodeContext &ctx) {
  FailureOr<Shape> input = getShape(ctx, 0);
  if (failed(input))
    return failure();
  FailureOr<std::optional<Shape>> axes = getAxes(ctx);
  if (failed(axes))
    return failure();
  if (!*axes)
    return ctx.emitError() << "needs axes";
  llvm::Expected<Shape> shape = computeUnsqueeze(*input, **axes);
  if (!shape)
    return ctx.fail(shape.takeError());
  return setReshaped(ctx, *shape);
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult convertTranspose(NodeContext &ctx) {
  FailureOr<Shape> input = getShape(ctx, 0);
  if (failed(input))
    return failure();
  Shape perm(input->size());
  std::iota(perm.rbegin(), perm.rend(), 0); // default: reverse the dims
  if (std::optional<Shape> given = ctx.getInts("perm"))
    perm = *given;
  Shape sorted = perm;
  llvm::sort(sorted);
  bool valid = sorted.size() == input->size();
  for (size_t i = 0; i < sorted.size() && valid; ++i)
    valid = sorted[i] == static_cast<int64_t>(i);
  if (!valid)
    return ctx.emitError() << "invalid permutation " << shapeToString(perm)
                           << " for rank " << input->size();
  if (const HostTensor *constant = ctx.getConstant(0))
    return ctx.setResult(0, foldTranspose(*constant, perm));
  Value value = ctx.getValue(0);
  if (!value)
    return failure();
  FailureOr<TransposeOp> op =
      ctx.create<TransposeOp>(value, ArrayRef<int64_t>(perm));
  if (failed(op))
    return failure();
  return ctx.setResult(0, op->getResult());
}

LogicalResult convertConcat(NodeContext &ctx) {
  if (ctx.getNumInputs() == 0)
    return ctx.emitError() << "needs at least one input";
  FailureOr<Shape> first = getShape(ctx, 0);
  if (failed(first))
    return failure();
  FailureOr<int64_t> axis = ctx.getAxis(0, first->size());
  if (failed(axis))
    return failure();
  if (ctx.allInputsConstant()) {
    SmallVector<const HostTensor *> inputs;
    for (unsigned i = 0; i < ctx.getNumInputs(); ++i)
      inputs.push_back(ctx.getConstant(i));
    llvm::Expected<HostTensor> r = foldConcat(inputs, *axis);
    if (!r)
      return ctx.fail(r.takeError());
    if (fitsOnHost(r->shape))
      return ctx.setResult(0, std::move(*r));
  }
  SmallVector<Value> inputs;
  for (unsigned i = 0; i < ctx.getNumInputs(); ++i) {
    Value v = ctx.getValue(i);
    if (!v)
      return failure();
    inputs.push_back(v);
  }
  FailureOr<ConcatOp> op = ctx.create<ConcatOp>(ValueRange(inputs), *axis);
  if (failed(op))
    return failure();
  return ctx.setResult(0, op->getResult());
}

LogicalResult convertSplit(NodeContext &ctx) {
  FailureOr<Shape> input = getShape(ctx, 0);
  if (failed(input))
    return failure();
  FailureOr<int64_t> axis = ctx.getAxis(0, input->size());
  if (failed(axis))
    return failure();
  int64_t dim = (*input)[*axis];
  Shape sizes;
  if (ctx.hasInput(1)) {
    FailureOr<Shape> given = ctx.getConstantInts(1, "split");
    if (failed(given))
      return failure();
    sizes = *given;
  } else if (std::optional<Shape> attr = ctx.getInts("split")) {
    sizes = *attr;
  } else {
    // Equal parts, one per output (opset 18's num_outputs rule: the last
    // part is smaller when the dimension does not divide).
    int64_t n = ctx.getInt("num_outputs", ctx.getNumOutputs());
    int64_t chunk = n > 0 ? (dim + n - 1) / n : 0;
    if (n <= 0 || dim - chunk * (n - 1) < 0)
      return ctx.emitError() << "cannot split dimension " << *axis
                             << " of size " << dim << " into " << n << " parts";
    sizes.assign(n, chunk);
    sizes.back() = dim - chunk * (n - 1);
  }
  if (static_cast<int64_t>(sizes.size()) != ctx.getNumOutputs())
    return ctx.emitError() << sizes.size() << " split sizes for "
                           << ctx.getNumOutputs() << " outputs";

  if (const HostTensor *constant = ctx.getConstant(0)) {
    int64_t offset = 0;
    for (auto [i, size] : llvm::enumerate(sizes)) {
      if (size < 0 || offset + size > dim)
        return ctx.emitError() << "split sizes " << shapeToString(sizes)
                               << " do not fit dimension of size " << dim;
      Shape starts(input->size(), 0);
      starts[*axis] = offset;
      SliceSpec spec{starts, Shape(input->size(), 1), *input};
      spec.sizes[*axis] = size;
      if (failed(ctx.setResult(i, foldSlice(*constant, spec))))
        return failure();
      offset += size;
    }
    return success();
  }
  Value value = ctx.getValue(0);
  if (!value)
    return failure();
  FailureOr<SplitOp> op =
      ctx.create<SplitOp>(value, *axis, ArrayRef<int64_t>(sizes));
  if (failed(op))
    return failure();
  for (auto [i, result] : llvm::enumerate(op->getResults()))
    if (failed(ctx.setResult(i, result)))
      return failure();
  return success();
}

LogicalResult convertSlice(NodeContext &ctx) {
  FailureOr<Shape> input = getShape(ctx, 0);
  if (failed(input))
    return failure();
  FailureOr<Shape> starts = ctx.getConstantInts(1, "starts");
  if (failed(starts))
    return failure();
  FailureOr<Shape> ends = ctx.getConstantInts(2, "ends");
  if (failed(ends))
    return failure();
  Shape axes, steps;
  if (ctx.hasInput(3)) {
    FailureOr<Shape> given = ctx.getConstantInts(3, "axes");
    if (failed(given))
      return failure();
    axes = *given;
  }
  if (ctx.hasInput(4)) {
    FailureOr<Shape> given = ctx.getConstantInts(4, "steps");
    if (failed(given))
      return failure();
    steps = *given;
  }
  llvm::Expected<SliceSpec> spec =
      computeSlice(*input, *starts, *ends, axes, steps);
  if (!spec)
    return ctx.fail(spec.takeError());
  if (const HostTensor *constant = ctx.getConstant(0))
    return ctx.setResult(0, foldSlice(*constant, *spec));
  Value value = ctx.getValue(0);
  if (!value)
    return failure();
  // A negative step walks an axis backwards (torch.flip, x[::-1]): the
  // same elements taken forwards by graph.slice (from the last one it
  // reaches, step |k|), then reversed by a gather of constant indices,
  // which has its gradient and sharding rule already.
  Shape from = spec->starts, stride = spec->steps, reversed;
  for (size_t d = 0; d < input->size(); ++d) {
    if (stride[d] >= 0)
      continue;
    if (spec->sizes[d] > 0)
      from[d] += (spec->sizes[d] - 1) * stride[d];
    stride[d] = -stride[d];
    if (spec->sizes[d] > 1)
      reversed.push_back(static_cast<int64_t>(d));
  }
  Value y = value;
  if (ArrayRef<int64_t>(spec->sizes) != ArrayRef<int64_t>(*input) ||
      llvm::any_of(stride, [](int64_t k) { return k != 1; })) {
    Shape limits;
    for (size_t d = 0; d < input->size(); ++d)
      limits.push_back(spec->sizes[d] > 0
                           ? from[d] + (spec->sizes[d] - 1) * stride[d] + 1
                           : from[d]);
    FailureOr<SliceOp> op =
        ctx.create<SliceOp>(value, ArrayRef<int64_t>(from),
                            ArrayRef<int64_t>(limits), ArrayRef<int64_t>(stride));
    if (failed(op))
      return failure();
    y = op->getResult();
  }
  for (int64_t axis : reversed) {
    int64_t n = spec->sizes[axis];
    HostTensor idx = HostTensor::zeros(onnx::TensorProto::INT64, {n});
    for (int64_t i = 0; i < n; ++i)
      idx.ints[i] = n - 1 - i;
    FailureOr<GatherOp> gather =
        ctx.create<GatherOp>(y, ctx.createConstant(idx), axis);
    if (failed(gather))
      return failure();
    y = gather->getResult();
  }
  return ctx.setResult(0, y);
}

LogicalResult convertGather(NodeContext &ctx) {
  FailureOr<Shape> dataShape = getShape(ctx, 0);
  if (failed(dataShape))
    return failure();
  FailureOr<int64_t> axis = ctx.getAxis(0, dataShape->size());
  if (failed(axis))
    return failure();
  const HostTensor *data = ctx.getConstant(0);
  const HostTensor *indices = ctx.getConstant(1);
  if (data && indices) {
    llvm::Expected<HostTensor> r = foldGather(*data, *indices, *axis);
    if (!r)
      return ctx.fail(r.takeError());
    if (fitsOnHost(r->shape))
      return ctx.setResult(0, std::move(*r));
  }
  Value dataValue = ctx.getValue(0);
  if (!dataValue)
    return failure();
  if (!indices) {
    Value indexValue = ctx.getValue(1);
    if (!indexValue)
      return failure();
    // Run-time indices are taken as they are: negative ones (rare in
    // exports) are not wrapped.
    FailureOr<GatherOp> op = ctx.create<GatherOp>(dataValue, indexValue, *axis);
    if (failed(op))
      return failure();
    return ctx.setResult(0, op->getResult());
  }

  if (indices->isFloat())
    return ctx.emitError() << "indices must be integers";
  int64_t dim = (*dataShape)[*axis];
  HostTensor normalized = *indices;
  normalized.dtype = onnx::TensorProto::INT64;
  for (int64_t &index : normalized.ints) {
    if (index < -dim || index >= dim)
      return ctx.emitError()
             << "index " << index << " is out of range for dimension " << *axis
             << " of size " << dim;
    if (index < 0)
      index += dim;
  }
  // A scalar index selects one slice: a graph.slice and a reshape that
  // drops the axis move no more data than the selection itself.
  if (normalized.shape.empty()) {
    int64_t index = normalized.ints[0];
    Shape starts(dataShape->size(), 0), limits = *dataShape,
                                        strides(dataShape->size(), 1);
    starts[*axis] = index;
    limits[*axis] = index + 1;
    FailureOr<SliceOp> slice = ctx.create<SliceOp>(
        dataValue, ArrayRef<int64_t>(starts), ArrayRef<int64_t>(limits),
        ArrayRef<int64_t>(strides));
    if (failed(slice))
      return failure();
    Shape shape = *dataShape;
    shape.erase(shape.begin() + *axis);
    FailureOr<Value> reshaped = ctx.reshape(slice->getResult(), shape);
    if (failed(reshaped))
      return failure();
    return ctx.setResult(0, *reshaped);
  }
  // Evenly spaced increasing indices (position ids from Range) are a
  // strided slice, which keeps the selected rows a view of the table.
  int64_t n = normalized.size();
  int64_t step = n > 1 ? normalized.ints[1] - normalized.ints[0] : 1;
  bool strided = normalized.shape.size() == 1 && n > 0 && step > 0;
  for (int64_t k = 1; k < n && strided; ++k)
    strided = normalized.ints[k] - normalized.ints[k - 1] == step;
  if (strided) {
    Shape starts(dataShape->size(), 0), limits = *dataShape,
                                        strides(dataShape->size(), 1);
    starts[*axis] = normalized.ints[0];
    limits[*axis] = normalized.ints[n - 1] + 1;
    strides[*axis] = step;
    FailureOr<SliceOp> slice = ctx.create<SliceOp>(
        dataValue, ArrayRef<int64_t>(starts), ArrayRef<int64_t>(limits),
        ArrayRef<int64_t>(strides));
    if (failed(slice))
      return failure();
    return ctx.setResult(0, slice->getResult());
  }
  FailureOr<GatherOp> op =
      ctx.create<GatherOp>(dataValue, ctx.createConstant(normalized), *axis);
  if (failed(op))
    return failure();
  return ctx.setResult(0, op->getResult());
}

/// Expand of a run-time tensor multiplies it by ones of the target shape:
/// numpy broadcasting of graph.mul is exactly Expand's rule, x * 1 is exact
/// for every float (x + 0 would turn -0.0 into +0.0), and the splat costs
/// no memory. Integer tensors have no graph arithmetic, so they must be
/// known at import time.
LogicalResult convertExpand(NodeContext &ctx) {
  FailureOr<Shape> input = getShape(ctx, 0);
  if (failed(input))
    return failure();
  FailureOr<Shape> target = ctx.getConstantInts(1, "the target shape");
  if (failed(target))
    return failure();
  if (llvm::any_of(*target, [](int64_t d) { return d < 0; }))
    return ctx.emitError() << "negative dimension in the target shape "
                           << shapeToString(*target);
  llvm::Expected<Shape> shape = broadcast(*input, *target);
  if (!shape)
    return ctx.fail(shape.takeError());
  if (const HostTensor *constant = ctx.getConstant(0)) {
    if (fitsOnHost(*shape)) {
      llvm::Expected<HostTensor> r = foldExpand(*constant, *target);
      if (!r)
        return ctx.fail(r.takeError());
      return ctx.setResult(0, std::move(*r));
    }
  }
  Value value = ctx.getValue(0);
  if (!value)
    return failure();
  if (ArrayRef<int64_t>(*shape) == ArrayRef<int64_t>(*input))
    return ctx.setResult(0, value);
  auto type = cast<RankedTensorType>(value.getType());
  if (!isa<FloatType>(type.getElementType()))
    return ctx.emitError() << "expanding a run-time " << type
                           << " is not supported (only floating-point "
                              "tensors, or values known at import time)";
  Value ones = ctx.createSplat(
      RankedTensorType::get(*target, type.getElementType()), 1.0);
  FailureOr<MulOp> op = ctx.create<MulOp>(value, ones);
  if (failed(op))
    return failure();
  return ctx.setResult(0, op->getResult());
}

} // namespace

void addShapeConverters(ConverterTable &table) {
  table.add("Constant", convertConstant);
  table.add("Identity", convertIdentity);
  table.add("Dropout", convertDropout);
  for (const char *window : {"HannWindow", "HammingWindow", "BlackmanWindow"})
    table.add(window, convertWindow);
  table.add("Shape", convertShape);
  table.add("Size", convertSize);
  table.add("Cast", convertCast);
  table.add("CastLike", convertCastLike);
  table.add("EyeLike", convertEyeLike);
  table.add("ConstantOfShape", convertConstantOfShape);
  table.add("Range", convertRange);
  table.add("Reshape", convertReshape);
  table.add("Flatten", convertFlatten);
  table.add("Squeeze", convertSqueeze);
  table.add("Unsqueeze", convertUnsqueeze);
  table.add("Transpose", convertTranspose);
  table.add("Concat", convertConcat);
  table.add("Split", convertSplit);
  table.add("Slice", convertSlice);
  table.add("Gather", convertGather);
  table.add("Expand", convertExpand);
}

} // namespace cleave::onnx_import
