//===- OnnxCompose.h - Writing one ONNX node as several graph ops -*- C++ -*-===//
//
// Internal to the ONNX importer: the helpers of the converters that write
// an operator as a chain of graph ops (OnnxActivationConverters.cpp,
// OnnxLayoutConverters.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_IMPORTERS_ONNX_ONNXCOMPOSE_H
#define CLEAVE_IMPORTERS_ONNX_ONNXCOMPOSE_H

#include "OnnxGraphImporter.h"

#include "cleave/Dialect/Graph/IR/GraphOps.h"

namespace cleave::onnx_import {

/// Input `i` of the node as a run-time value, which must be floating point
/// (else an error naming `what`); null after an error.
inline mlir::Value floatOperand(NodeContext &ctx, unsigned i,
                                const char *what) {
  mlir::Value x = ctx.getValue(i);
  if (!x)
    return {};
  if (!mlir::isa<mlir::FloatType>(
          mlir::cast<mlir::RankedTensorType>(x.getType()).getElementType())) {
    ctx.emitError() << what << " must be floating point";
    return {};
  }
  return x;
}

/// Whether values of element type `e` are numbers graph arithmetic takes:
/// floats, or integers that are not bool.
inline bool isNumeric(mlir::Type e) {
  return mlir::isa<mlir::FloatType>(e) ||
         (mlir::isa<mlir::IntegerType>(e) && !e.isInteger(1));
}

/// Input `i` of the node as a run-time value of numbers (add, sub, mul,
/// div, max, min, mod, compare and where take integers as well as floats),
/// or null after an error.
inline mlir::Value numericOperand(NodeContext &ctx, unsigned i,
                                  const char *what) {
  mlir::Value x = ctx.getValue(i, ParamUse::Frozen);
  if (!x)
    return {};
  auto type = mlir::cast<mlir::RankedTensorType>(x.getType());
  if (!isNumeric(type.getElementType())) {
    ctx.emitError() << what << " must be a number tensor, got " << type;
    return {};
  }
  return x;
}

/// The static shape of a ranked tensor value.
inline Shape shapeOf(mlir::Value v) {
  auto type = mlir::cast<mlir::RankedTensorType>(v.getType());
  return Shape(type.getShape().begin(), type.getShape().end());
}

/// The result of a new graph op, or null when an operand is null (an
/// earlier step failed) or the op does not verify (diagnosed).
namespace detail {
inline bool isNull(mlir::Value v) { return !v; }
template <typename T> bool isNull(const T &) { return false; }
} // namespace detail

template <typename OpTy, typename... Args>
mlir::Value compose(NodeContext &ctx, Args... args) {
  if ((detail::isNull(args) || ...))
    return {};
  llvm::FailureOr<OpTy> op = ctx.create<OpTy>(args...);
  return mlir::succeeded(op) ? (*op)->getResult(0) : mlir::Value();
}

/// `v` converted to element type `element` (itself if it has it; null if
/// it is null).
inline mlir::Value castTo(NodeContext &ctx, mlir::Value v,
                          mlir::Type element) {
  if (!v)
    return {};
  auto type = mlir::cast<mlir::RankedTensorType>(v.getType());
  if (type.getElementType() == element)
    return v;
  return compose<graph::CastOp>(ctx, type.clone(element), v);
}

/// `parts` joined along `axis` (the one part itself; null if any is null).
inline mlir::Value concat(NodeContext &ctx, llvm::SmallVector<mlir::Value> parts,
                          int64_t axis) {
  if (llvm::any_of(parts, [](mlir::Value v) { return !v; }))
    return {};
  if (parts.size() == 1)
    return parts.front();
  return compose<graph::ConcatOp>(ctx, mlir::ValueRange(parts), axis);
}

/// out[e] = flat(src)[map[e]], out of `shape`: one gather of the flattened
/// source by a constant map.
inline mlir::Value gatherByMap(NodeContext &ctx, mlir::Value src,
                               const std::vector<int64_t> &map,
                               llvm::ArrayRef<int64_t> shape) {
  auto type = mlir::cast<mlir::RankedTensorType>(src.getType());
  llvm::FailureOr<mlir::Value> flat =
      ctx.reshape(src, {type.getNumElements()});
  if (mlir::failed(flat))
    return {};
  HostTensor indices;
  indices.dtype = onnx::TensorProto::INT64;
  indices.shape.assign(shape.begin(), shape.end());
  indices.ints = map;
  return compose<graph::GatherOp>(ctx, *flat, ctx.createConstant(indices),
                                  int64_t(0));
}

/// A 1-D, 2-D or 3-D convolution of `image` by `filter` (plus `bias`,
/// which may be null) with the node's Conv attributes (strides, dilations,
/// pads, auto_pad, group), as Conv imports it; null after an error
/// (OnnxConvConverters.cpp).
mlir::Value convolve(NodeContext &ctx, mlir::Value image, mlir::Value filter,
                     mlir::Value bias);

/// The same for 3-D (NCDHW) data (OnnxConv3d.cpp).
mlir::Value convolve3d(NodeContext &ctx, mlir::Value image, mlir::Value filter,
                       mlir::Value bias);
/// A 3-D (NCDHW) ConvTranspose node (OnnxConv3d.cpp).
llvm::LogicalResult convertConvTranspose3d(NodeContext &ctx);

/// The spatial output sizes of a transposed convolution of spatial input
/// `in` by a `kernel`: per axis stride (in - 1) + output_padding +
/// dilation (kernel - 1) + 1 less the pads, where output_shape (or auto_pad
/// SAME's input x stride) sets the pads it implies. `pads` ([begins...,
/// ends...]) and `outputPadding` are updated (a negative end pad becomes
/// output padding). Fails after a diagnostic (OnnxConvConverters.cpp).
llvm::FailureOr<Shape> transposedExtents(
    NodeContext &ctx, llvm::ArrayRef<int64_t> in, llvm::ArrayRef<int64_t> kernel,
    llvm::ArrayRef<int64_t> strides, llvm::ArrayRef<int64_t> dilations,
    std::optional<Shape> outputShape, llvm::StringRef autoPad,
    Shape &outputPadding, Shape &pads);

/// Builds a chain of graph ops for one node: each step returns null once
/// one failed (its diagnostic already given).
class Chain {
public:
  explicit Chain(NodeContext &ctx) : ctx(ctx) {}

  mlir::Value input() { return floatOperand(ctx, 0, "the input"); }
  mlir::Value scalar(mlir::Value like, double value) {
    if (!like)
      return {};
    auto type = mlir::cast<mlir::RankedTensorType>(like.getType());
    return ctx.createSplat(mlir::RankedTensorType::get({}, type.getElementType()),
                           value);
  }
  template <typename OpTy, typename... Args> mlir::Value op(Args... args) {
    return compose<OpTy>(ctx, args...);
  }
  mlir::Value add(mlir::Value a, mlir::Value b) { return op<graph::AddOp>(a, b); }
  mlir::Value mul(mlir::Value a, mlir::Value b) { return op<graph::MulOp>(a, b); }
  mlir::Value max(mlir::Value a, mlir::Value b) { return op<graph::MaxOp>(a, b); }
  mlir::Value min(mlir::Value a, mlir::Value b) { return op<graph::MinOp>(a, b); }
  /// max(0, min(1, alpha x + beta)).
  mlir::Value hardSigmoid(mlir::Value x, double alpha, double beta) {
    mlir::Value lin = add(mul(x, scalar(x, alpha)), scalar(x, beta));
    return max(min(lin, scalar(x, 1.0)), scalar(x, 0.0));
  }
  /// relu(x) + slope min(x, 0): x where x >= 0, slope x elsewhere, for any
  /// slope (max(x, slope x) would need slope <= 1).
  mlir::Value leaky(mlir::Value x, mlir::Value slope) {
    return add(op<graph::ReluOp>(x), mul(min(x, scalar(x, 0.0)), slope));
  }
  /// log(1 + e^x) = relu(x) + log(1 + e^-|x|).
  mlir::Value softplus(mlir::Value x) {
    mlir::Value abs = max(x, op<graph::NegOp>(x));
    mlir::Value tail = op<graph::LogOp>(add(scalar(x, 1.0), op<graph::ExpOp>(op<graph::NegOp>(abs))));
    return add(op<graph::ReluOp>(x), tail);
  }
  /// The nearest integer, halves to the even one (ONNX's Round, numpy's):
  /// r = floor(x + 1/2), less 1 where x was a half and r is odd.
  mlir::Value roundHalfEven(mlir::Value x) {
    mlir::MLIRContext *m = ctx.getContext();
    mlir::Value half = scalar(x, 0.5), one = scalar(x, 1.0);
    mlir::Value r = op<graph::FloorOp>(add(x, half));
    mlir::Value tie = op<graph::CompareOp>(mlir::StringAttr::get(m, "eq"),
                                           op<graph::SubOp>(r, x), half);
    mlir::Value halfR = mul(r, half);
    mlir::Value odd = op<graph::CompareOp>(mlir::StringAttr::get(m, "ne"),
                                           op<graph::FloorOp>(halfR), halfR);
    mlir::Value down = op<graph::WhereOp>(odd, op<graph::SubOp>(r, one), r);
    return op<graph::WhereOp>(tie, down, r);
  }
  llvm::LogicalResult result(mlir::Value v) {
    return v ? ctx.setResult(0, v) : mlir::failure();
  }

  NodeContext &ctx;
};

} // namespace cleave::onnx_import

#endif // CLEAVE_IMPORTERS_ONNX_ONNXCOMPOSE_H
