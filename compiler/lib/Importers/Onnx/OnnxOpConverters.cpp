//===- OnnxOpConverters.cpp - ONNX compute operators ----------------------===//
//
// Elementwise arithmetic, activations, matrix products, softmax and
// normalisation, reductions. Each converter first folds on the host when
// every input is known at import time (shape arithmetic, masks), and
// otherwise emits the graph op; graph ops compute on floating-point tensors
// only, so integer arithmetic on run-time values is an error.
//
//===----------------------------------------------------------------------===//

#include "OnnxConstantFolding.h"
#include "OnnxCompose.h"
#include "OnnxGraphImporter.h"
#include "OnnxShapeRules.h"

#include "cleave/Dialect/Graph/IR/GraphOps.h"

using namespace mlir;
using namespace cleave::graph;

namespace cleave::onnx_import {
namespace {

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// Checks that `value` is a floating-point tensor: graph compute ops take
/// nothing else.
LogicalResult requireFloat(NodeContext &ctx, Value value, StringRef what) {
  auto type = cast<RankedTensorType>(value.getType());
  if (isa<FloatType>(type.getElementType()))
    return success();
  return ctx.emitError()
         << what << " must be floating point, got " << type
         << " (integer and bool tensors are computed only when they are "
            "known at import time)";
}

/// Checks that `value` holds numbers: floats, or integers for the ops that
/// compute on them at run time (add, sub, mul, div, max, min, where).
LogicalResult requireNumeric(NodeContext &ctx, Value value, StringRef what) {
  auto type = cast<RankedTensorType>(value.getType());
  if (isNumeric(type.getElementType()))
    return success();
  return ctx.emitError() << what << " must be a number tensor, got " << type
                         << " (bool tensors are computed only when they are "
                            "known at import time, or through And, Or, Not "
                            "and Where)";
}

/// The ONNX data type of a floating-point MLIR element type.
int32_t onnxFloatType(Type element) {
  if (element.isF64())
    return onnx::TensorProto::DOUBLE;
  if (element.isF16())
    return onnx::TensorProto::FLOAT16;
  if (element.isBF16())
    return onnx::TensorProto::BFLOAT16;
  return onnx::TensorProto::FLOAT;
}

/// Input `i` as a value of element type `element`: a constant of another
/// type (Pow's int exponent, a double scalar) is converted first.
Value getValueAs(NodeContext &ctx, unsigned i, Type element) {
  const HostTensor *constant = ctx.getConstant(i);
  if (!constant || !isa<FloatType>(element) ||
      getElementType(ctx.getContext(), constant->dtype) == element)
    return ctx.getValue(i);
  llvm::Expected<HostTensor> cast = foldCast(*constant, onnxFloatType(element));
  if (!cast) {
    (void)ctx.fail(cast.takeError());
    return {};
  }
  return ctx.createConstant(*cast);
}

/// Gets the operands of an elementwise node, converting constants to the
/// element type of the first run-time operand. Integers are accepted where
/// `integers` is set (the ops the graph dialect computes on them).
LogicalResult getElementwiseOperands(NodeContext &ctx,
                                     SmallVectorImpl<Value> &operands,
                                     bool integers) {
  Type element;
  for (unsigned i = 0; i < ctx.getNumInputs() && !element; ++i)
    if (ctx.hasInput(i) && !ctx.getConstant(i))
      if (RankedTensorType type = ctx.getType(i))
        element = type.getElementType();
  for (unsigned i = 0; i < ctx.getNumInputs(); ++i) {
    Value v = element ? getValueAs(ctx, i, element) : ctx.getValue(i);
    // Pow alone lets its exponent's type differ from the base's: a run-time
    // integer exponent of a float base is converted to the base's type.
    if (v && !integers && i == 1 && element && isa<FloatType>(element))
      if (auto type = cast<RankedTensorType>(v.getType());
          isNumeric(type.getElementType()) &&
          !isa<FloatType>(type.getElementType())) {
        FailureOr<CastOp> cast = ctx.create<CastOp>(type.clone(element), v);
        if (failed(cast))
          return failure();
        v = cast->getResult();
      }
    std::string what = "operand " + std::to_string(i);
    if (!v || failed(integers ? requireNumeric(ctx, v, what)
                              : requireFloat(ctx, v, what)))
      return failure();
    operands.push_back(v);
  }
  return success();
}

/// A scalar constant of the element type of `like`.
Value scalarLike(NodeContext &ctx, Value like, double value) {
  auto type = cast<RankedTensorType>(like.getType());
  return ctx.createSplat(RankedTensorType::get({}, type.getElementType()),
                         value);
}

template <typename OpTy>
LogicalResult setCreated(NodeContext &ctx, FailureOr<OpTy> op) {
  if (failed(op))
    return failure();
  return ctx.setResult(0, (*op)->getResult(0));
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

/// Add, Sub, Mul, Div, Pow; Max and Min (variadic) fold left to right.
template <HostBinaryOp HostOp, typename OpTy>
LogicalResult convertBinary(NodeContext &ctx) {
  for (unsigned i = 0; i < ctx.getNumInputs(); ++i)
    if (!ctx.hasInput(i))
      return ctx.emitError() << "input " << i << " is missing";
  if (ctx.getNumInputs() < 1)
    return ctx.emitError() << "needs at least one input";
  if (ctx.allInputsConstant()) {
    // Fold when the result is small; a large constant result is computed
    // by graph ops like any other.
    HostTensor acc = *ctx.getConstant(0);
    bool folded = true;
    for (unsigned i = 1; i < ctx.getNumInputs() && folded; ++i) {
      HostTensor rhs = *ctx.getConstant(i);
      if (HostOp == HostBinaryOp::Pow && rhs.isFloat() != acc.isFloat()) {
        // Pow alone lets the exponent's type differ from the base's.
        llvm::Expected<HostTensor> cast = foldCast(rhs, acc.dtype);
        if (!cast)
          return ctx.fail(cast.takeError());
        rhs = std::move(*cast);
      }
      llvm::Expected<Shape> shape = broadcast(acc.shape, rhs.shape);
      if (!shape)
        return ctx.fail(shape.takeError());
      if (!fitsOnHost(*shape)) {
        folded = false;
        break;
      }
      llvm::Expected<HostTensor> r = foldBinary(HostOp, acc, rhs);
      if (!r)
        return ctx.fail(r.takeError());
      acc = std::move(*r);
    }
    if (folded)
      return ctx.setResult(0, std::move(acc));
  }
  SmallVector<Value> operands;
  constexpr bool pow = HostOp == HostBinaryOp::Pow;
  if (failed(getElementwiseOperands(ctx, operands, /*integers=*/!pow)))
    return failure();
  Value acc = operands.front();
  for (Value rhs : ArrayRef(operands).drop_front()) {
    FailureOr<OpTy> op = ctx.create<OpTy>(acc, rhs);
    if (failed(op))
      return failure();
    acc = op->getResult();
  }
  // Pow's result has its base's type: an integer base raised to a float
  // exponent (computed in floats here) is truncated back.
  if (HostOp == HostBinaryOp::Pow)
    if (RankedTensorType base = ctx.getType(0);
        base && isa<IntegerType>(base.getElementType())) {
      FailureOr<CastOp> truncated = ctx.create<CastOp>(
          cast<RankedTensorType>(acc.getType()).clone(base.getElementType()),
          acc);
      if (failed(truncated))
        return failure();
      acc = truncated->getResult();
    }
  return ctx.setResult(0, acc);
}


/// Equal, Less, Greater, Not, And, Or: masks, computed on the host only.
template <HostBinaryOp HostOp>
LogicalResult convertHostBinary(NodeContext &ctx) {
  const HostTensor *lhs = ctx.getConstant(0), *rhs = ctx.getConstant(1);
  if (!lhs || !rhs)
    return ctx.emitError()
           << "is supported only on values known at import time (shape "
              "arithmetic, masks): the graph dialect computes no logic or "
              "modulo, and compares only floating-point values, at run time";
  llvm::Expected<HostTensor> r = foldBinary(HostOp, *lhs, *rhs);
  if (!r)
    return ctx.fail(r.takeError());
  return ctx.setResult(0, std::move(*r));
}

template <HostUnaryOp HostOp, typename OpTy>
LogicalResult convertUnary(NodeContext &ctx);

/// Bool input `i` as 0/1 in f32 (a where); null after an error.
Value boolAsFloat(NodeContext &ctx, unsigned i) {
  Value v = ctx.getValue(i, ParamUse::Frozen);
  if (!v)
    return {};
  auto type = cast<RankedTensorType>(v.getType());
  if (!type.getElementType().isInteger(1)) {
    ctx.emitError() << "operand " << i << " must be bool, got " << type;
    return {};
  }
  auto scalar =
      RankedTensorType::get({}, Builder(ctx.getContext()).getF32Type());
  return compose<WhereOp>(ctx, v, ctx.createSplat(scalar, 1.0),
                          ctx.createSplat(scalar, 0.0));
}

/// And, Or, Xor and Not: folded when every operand is known at import
/// (masks, shape arithmetic); on run-time bool tensors, each read as 0/1 in
/// floats (a where), combined arithmetically (and: a b, or: max, xor:
/// (a - b)^2, not: 1 - a) and compared with 1/2 back into a bool tensor.
template <HostBinaryOp HostOp>
LogicalResult convertLogic(NodeContext &ctx) {
  if (ctx.getConstant(0) && ctx.getConstant(1))
    return convertHostBinary<HostOp>(ctx);
  Chain c(ctx);
  Value a = boolAsFloat(ctx, 0), b = boolAsFloat(ctx, 1);
  Value r = HostOp == HostBinaryOp::And ? c.mul(a, b)
            : HostOp == HostBinaryOp::Or ? c.max(a, b)
                                         : [&] {
                                             Value d = c.op<SubOp>(a, b);
                                             return c.mul(d, d);
                                           }();
  return c.result(c.op<CompareOp>(StringAttr::get(ctx.getContext(), "gt"), r,
                                  c.scalar(r, 0.5)));
}

LogicalResult convertNot(NodeContext &ctx) {
  if (ctx.getConstant(0))
    return convertUnary<HostUnaryOp::Not, void>(ctx);
  Chain c(ctx);
  Value a = boolAsFloat(ctx, 0);
  return c.result(c.op<CompareOp>(StringAttr::get(ctx.getContext(), "lt"), a,
                                  c.scalar(a, 0.5)));
}

/// A comparison: folded when both sides are known at import (shape
/// arithmetic), else graph.compare on floating-point values (a bool
/// tensor, as ONNX's).
template <HostBinaryOp HostOp>
LogicalResult convertComparison(NodeContext &ctx, StringRef predicate) {
  if (ctx.getConstant(0) && ctx.getConstant(1))
    return convertHostBinary<HostOp>(ctx);
  RankedTensorType lhs = ctx.getType(0), rhs = ctx.getType(1);
  if (!lhs || !rhs || !isNumeric(lhs.getElementType()) ||
      lhs.getElementType() != rhs.getElementType())
    return convertHostBinary<HostOp>(ctx);
  Chain c(ctx);
  return c.result(c.op<CompareOp>(StringAttr::get(ctx.getContext(), predicate),
                                  ctx.getValue(0), ctx.getValue(1)));
}

/// Abs: folded when known at import, else max(x, -x).
LogicalResult convertAbs(NodeContext &ctx) {
  if (ctx.getConstant(0))
    return convertUnary<HostUnaryOp::Abs, void>(ctx);
  Chain c(ctx);
  Value x = c.input();
  return c.result(c.max(x, c.op<NegOp>(x)));
}

template <HostUnaryOp HostOp, typename OpTy>
LogicalResult convertUnary(NodeContext &ctx) {
  if (const HostTensor *input = ctx.getConstant(0)) {
    llvm::Expected<HostTensor> r = foldUnary(HostOp, *input);
    if (!r)
      return ctx.fail(r.takeError());
    return ctx.setResult(0, std::move(*r));
  }
  if constexpr (std::is_same_v<OpTy, void>) {
    return ctx.emitError()
           << "is supported only on values known at import time";
  } else {
    Value input = ctx.getValue(0);
    if (!input || failed(requireFloat(ctx, input, "the input")))
      return failure();
    return setCreated(ctx, ctx.create<OpTy>(input));
  }
}

LogicalResult convertReciprocal(NodeContext &ctx) {
  if (const HostTensor *input = ctx.getConstant(0)) {
    llvm::Expected<HostTensor> r = foldUnary(HostUnaryOp::Reciprocal, *input);
    if (!r)
      return ctx.fail(r.takeError());
    return ctx.setResult(0, std::move(*r));
  }
  Value input = ctx.getValue(0);
  if (!input || failed(requireFloat(ctx, input, "the input")))
    return failure();
  return setCreated(ctx, ctx.create<DivOp>(scalarLike(ctx, input, 1.0), input));
}

LogicalResult convertWhere(NodeContext &ctx) {
  if (ctx.allInputsConstant()) {
    const HostTensor &c = *ctx.getConstant(0), &a = *ctx.getConstant(1),
                     &b = *ctx.getConstant(2);
    llvm::Expected<Shape> ab = broadcast(a.shape, b.shape);
    if (!ab)
      return ctx.fail(ab.takeError());
    llvm::Expected<Shape> shape = broadcast(c.shape, *ab);
    if (!shape)
      return ctx.fail(shape.takeError());
    if (fitsOnHost(*shape)) {
      llvm::Expected<HostTensor> r = foldWhere(c, a, b);
      if (!r)
        return ctx.fail(r.takeError());
      return ctx.setResult(0, std::move(*r));
    }
  }
  Value cond = ctx.getValue(0);
  if (!cond)
    return failure();
  if (!cast<RankedTensorType>(cond.getType()).getElementType().isInteger(1))
    return ctx.emitError() << "condition must be bool, got " << cond.getType();
  // Fold the condition's operand types like any elementwise op.
  Type element;
  for (unsigned i = 1; i < 3 && !element; ++i)
    if (!ctx.getConstant(i))
      if (RankedTensorType type = ctx.getType(i))
        element = type.getElementType();
  SmallVector<Value> operands;
  for (unsigned i = 1; i < 3; ++i) {
    Value v = element ? getValueAs(ctx, i, element) : ctx.getValue(i);
    if (!v || failed(requireNumeric(ctx, v, "operand " + std::to_string(i))))
      return failure();
    operands.push_back(v);
  }
  return setCreated(ctx, ctx.create<WhereOp>(cond, operands[0], operands[1]));
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

/// numpy matmul: 1-D operands become matrices and lose that dimension in
/// the result again.
LogicalResult convertMatMul(NodeContext &ctx) {
  Value a = ctx.getValue(0), b = ctx.getValue(1);
  if (!a || !b || failed(requireFloat(ctx, a, "operand A")) ||
      failed(requireFloat(ctx, b, "operand B")))
    return failure();
  auto aType = cast<RankedTensorType>(a.getType());
  auto bType = cast<RankedTensorType>(b.getType());
  if (aType.getRank() == 0 || bType.getRank() == 0)
    return ctx.emitError() << "operands must not be scalars";
  Value lhs = a, rhs = b;
  // B a weight matrix read through a transpose (a parameter the exporter
  // had folded transposed, restored by OnnxFoldedParameters.h): the GEMM
  // reads it transposed instead of copying it.
  bool transposeRhs = false;
  if (auto t = b.getDefiningOp<TransposeOp>();
      t && bType.getRank() == 2 &&
      t.getPermutation() == ArrayRef<int64_t>{1, 0} &&
      t.getInput().getDefiningOp<ParamOp>()) {
    rhs = t.getInput();
    transposeRhs = true;
  }
  if (aType.getRank() == 1) {
    FailureOr<Value> r = ctx.reshape(a, {1, aType.getDimSize(0)});
    if (failed(r))
      return failure();
    lhs = *r;
  }
  if (bType.getRank() == 1) {
    FailureOr<Value> r = ctx.reshape(b, {bType.getDimSize(0), 1});
    if (failed(r))
      return failure();
    rhs = *r;
  }
  FailureOr<MatmulOp> op =
      ctx.create<MatmulOp>(lhs, rhs, false, transposeRhs);
  if (failed(op))
    return failure();
  Value result = op->getResult();
  if (aType.getRank() == 1 || bType.getRank() == 1) {
    Shape shape(op->getType().getShape());
    if (bType.getRank() == 1)
      shape.pop_back();
    if (aType.getRank() == 1)
      shape.erase(shape.end() - (bType.getRank() == 1 ? 1 : 2));
    FailureOr<Value> r = ctx.reshape(result, shape);
    if (failed(r))
      return failure();
    result = *r;
  }
  return ctx.setResult(0, result);
}

/// Y = alpha * op(A) op(B) + beta * C.
LogicalResult convertGemm(NodeContext &ctx) {
  Value a = ctx.getValue(0), b = ctx.getValue(1);
  if (!a || !b || failed(requireFloat(ctx, a, "operand A")) ||
      failed(requireFloat(ctx, b, "operand B")))
    return failure();
  if (cast<RankedTensorType>(a.getType()).getRank() != 2 ||
      cast<RankedTensorType>(b.getType()).getRank() != 2)
    return ctx.emitError() << "operands must be matrices, got " << a.getType()
                           << " and " << b.getType();
  FailureOr<MatmulOp> product = ctx.create<MatmulOp>(
      a, b, ctx.getInt("transA", 0) != 0, ctx.getInt("transB", 0) != 0);
  if (failed(product))
    return failure();
  Value y = product->getResult();
  double alpha = ctx.getFloat("alpha", 1.0), beta = ctx.getFloat("beta", 1.0);
  if (alpha != 1.0) {
    FailureOr<MulOp> scaled = ctx.create<MulOp>(y, scalarLike(ctx, y, alpha));
    if (failed(scaled))
      return failure();
    y = scaled->getResult();
  }
  if (ctx.hasInput(2) && beta != 0.0) {
    Value c = getValueAs(ctx, 2,
                         cast<RankedTensorType>(y.getType()).getElementType());
    if (!c || failed(requireFloat(ctx, c, "operand C")))
      return failure();
    if (beta != 1.0) {
      FailureOr<MulOp> scaled = ctx.create<MulOp>(c, scalarLike(ctx, c, beta));
      if (failed(scaled))
        return failure();
      c = scaled->getResult();
    }
    Type productType = y.getType();
    FailureOr<AddOp> sum = ctx.create<AddOp>(y, c);
    if (failed(sum))
      return failure();
    if (sum->getType() != productType)
      return ctx.emitError() << "C of type " << c.getType()
                             << " does not broadcast to " << productType;
    y = sum->getResult();
  }
  return ctx.setResult(0, y);
}

//===----------------------------------------------------------------------===//
// Softmax and normalisation
//===----------------------------------------------------------------------===//

LogicalResult convertSoftmax(NodeContext &ctx) {
  Value input = ctx.getValue(0);
  if (!input || failed(requireFloat(ctx, input, "the input")))
    return failure();
  auto type = cast<RankedTensorType>(input.getType());
  FailureOr<int64_t> axis = ctx.getAxis(-1, type.getRank());
  if (failed(axis))
    return failure();
  OpBuilder &b = ctx.getBuilder();
  return setCreated(ctx, ctx.create<SoftmaxOp>(
                             input, b.getI64IntegerAttr(*axis), UnitAttr()));
}

/// Scale and bias of a normalisation as tensors of `shape`: ONNX lets them
/// broadcast, the graph dialect wants the exact shape.
Value getNormParam(NodeContext &ctx, unsigned i, ArrayRef<int64_t> shape,
                   Type element) {
  Value v = getValueAs(ctx, i, element);
  if (!v)
    return {};
  auto type = cast<RankedTensorType>(v.getType());
  if (type.getShape() == shape)
    return v;
  if (type.getNumElements() != product(shape)) {
    ctx.emitError() << "input " << i << " of type " << type
                    << " does not have the normalized shape "
                    << shapeToString(shape);
    return {};
  }
  FailureOr<Value> r = ctx.reshape(v, shape);
  return failed(r) ? Value() : *r;
}

/// LayerNormalization's optional outputs, the statistics over the
/// normalized axes [axis, rank) kept as 1s: Mean, and InvStdDev =
/// 1 / sqrt(mean((x - Mean)^2) + epsilon), in graph ops.
LogicalResult setLayerNormStatistics(NodeContext &ctx, Value x, int64_t axis,
                                     double epsilon) {
  Chain c(ctx);
  int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
  SmallVector<int64_t> axes;
  for (int64_t d = axis; d < rank; ++d)
    axes.push_back(d);
  Value mean = c.op<ReduceMeanOp>(x, ArrayRef<int64_t>(axes), true);
  Value centered = c.op<SubOp>(x, mean);
  Value variance = c.op<ReduceMeanOp>(c.mul(centered, centered),
                                      ArrayRef<int64_t>(axes), true);
  Value inv = c.op<RsqrtOp>(c.add(variance, c.scalar(x, epsilon)));
  if (!mean || !inv)
    return failure();
  if (ctx.isOutputUsed(1) && failed(ctx.setResult(1, mean)))
    return failure();
  if (ctx.isOutputUsed(2) && failed(ctx.setResult(2, inv)))
    return failure();
  return success();
}

LogicalResult convertLayerNormalization(NodeContext &ctx) {
  Value x = ctx.getValue(0);
  if (!x || failed(requireFloat(ctx, x, "the input")))
    return failure();
  auto type = cast<RankedTensorType>(x.getType());
  FailureOr<int64_t> axis = ctx.getAxis(-1, type.getRank());
  if (failed(axis))
    return failure();
  ArrayRef<int64_t> normalized = type.getShape().drop_front(*axis);
  Value scale = getNormParam(ctx, 1, normalized, type.getElementType());
  if (!scale)
    return failure();
  Value bias;
  if (ctx.hasInput(2) &&
      !(bias = getNormParam(ctx, 2, normalized, type.getElementType())))
    return failure();
  OpBuilder &b = ctx.getBuilder();
  double epsilon = ctx.getFloat("epsilon", 1e-5);
  if ((ctx.isOutputUsed(1) || ctx.isOutputUsed(2)) &&
      failed(setLayerNormStatistics(ctx, x, *axis, epsilon)))
    return failure();
  return setCreated(ctx, ctx.create<LayerNormOp>(x, scale, bias,
                                                 b.getI64IntegerAttr(*axis),
                                                 b.getF64FloatAttr(epsilon)));
}

/// Training-mode batch norm's updated running statistics (outputs 1 and
/// 2): running x momentum + the batch's (mean, biased variance over every
/// axis but the channels) x (1 - momentum).
LogicalResult setRunningStatistics(NodeContext &ctx, Value x, Value mean,
                                   Value variance) {
  auto type = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> axes = {0};
  for (int64_t d = 2; d < type.getRank(); ++d)
    axes.push_back(d);
  double momentum = ctx.getFloat("momentum", 0.9);
  Chain c(ctx);
  Value batchMean = c.op<ReduceMeanOp>(x, ArrayRef<int64_t>(axes), true);
  Value centred = batchMean ? c.op<SubOp>(x, batchMean) : Value();
  Value batchVar =
      centred ? c.op<ReduceMeanOp>(c.mul(centred, centred),
                                   ArrayRef<int64_t>(axes), false)
              : Value();
  FailureOr<Value> flatMean =
      batchMean ? ctx.reshape(batchMean, {type.getDimSize(1)})
                : FailureOr<Value>(failure());
  if (!batchVar || failed(flatMean))
    return failure();
  auto blend = [&](Value running, Value batch) {
    return c.add(c.mul(running, c.scalar(x, momentum)),
                 c.mul(batch, c.scalar(x, 1.0 - momentum)));
  };
  if (ctx.isOutputUsed(1)) {
    Value out = blend(mean, *flatMean);
    if (!out || failed(ctx.setResult(1, out)))
      return failure();
  }
  if (ctx.isOutputUsed(2)) {
    Value out = blend(variance, batchVar);
    if (!out || failed(ctx.setResult(2, out)))
      return failure();
  }
  return success();
}

/// Batch norm: scale and bias are trained, the running mean and variance
/// frozen statistics. In inference mode the statistics normalise; in
/// training mode (training_mode = 1) the batch's own do (graph.batch_norm
/// `training`), and the updated running statistics are outputs 1 and 2.
LogicalResult convertBatchNormalization(NodeContext &ctx) {
  bool training = ctx.getInt("training_mode", 0) != 0;
  if (!training)
    for (unsigned i = 1; i < ctx.getNumOutputs(); ++i)
      if (ctx.isOutputUsed(i))
        return ctx.emitError() << "running-statistics outputs are only "
                                  "defined in training mode";
  Value x = ctx.getValue(0);
  if (!x || failed(requireFloat(ctx, x, "the input")))
    return failure();
  Value scale = ctx.getValue(1), bias = ctx.getValue(2);
  Value mean = ctx.getValue(3, ParamUse::Frozen);
  Value variance = ctx.getValue(4, ParamUse::Frozen);
  if (!scale || !bias || !mean || !variance)
    return failure();
  OpBuilder &b = ctx.getBuilder();
  if (training && failed(setRunningStatistics(ctx, x, mean, variance)))
    return failure();
  return setCreated(ctx, ctx.create<BatchNormOp>(
                             x, scale, bias, mean, variance,
                             b.getF64FloatAttr(ctx.getFloat("epsilon", 1e-5)),
                             training ? b.getUnitAttr() : UnitAttr()));
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

/// What a reduction applies around its graph reduction: SumSquare and L2
/// square first (L2 takes the root after), L1 takes |x| first, Min negates
/// before and after a maximum, LogSum takes the log after, LogSumExp is
/// m + log(sum(e^(x - m))) with m the maximum (no e^x overflows).
enum class ReduceForm { Plain, SumSquare, L2, L1, Min, LogSum, LogSumExp, Prod };

template <typename OpTy, ReduceForm Form = ReduceForm::Plain>
LogicalResult convertReduce(NodeContext &ctx) {
  Value input = ctx.getValue(0);
  if (!input || failed(requireFloat(ctx, input, "the input")))
    return failure();
  int64_t rank = cast<RankedTensorType>(input.getType()).getRank();
  // Axes are an attribute up to opset 17 (ReduceSum: 12) and an input
  // after; no axes reduce everything unless noop_with_empty_axes.
  Shape axes;
  if (ctx.hasInput(1)) {
    FailureOr<Shape> given = ctx.getConstantInts(1, "axes");
    if (failed(given))
      return failure();
    axes = *given;
  } else if (std::optional<Shape> attr = ctx.getInts("axes")) {
    axes = *attr;
  }
  if (axes.empty()) {
    if (ctx.getInt("noop_with_empty_axes", 0))
      return ctx.setResult(0, input);
    for (int64_t i = 0; i < rank; ++i)
      axes.push_back(i);
  }
  llvm::Expected<Shape> normalized = normalizeAxes(axes, rank);
  if (!normalized)
    return ctx.fail(normalized.takeError());
  llvm::sort(*normalized);
  ArrayRef<int64_t> reduceAxes(*normalized);
  bool keepdims = ctx.getInt("keepdims", 1) != 0;
  Chain c(ctx);
  switch (Form) {
  case ReduceForm::SumSquare:
  case ReduceForm::L2:
    input = c.mul(input, input);
    break;
  case ReduceForm::L1:
    input = c.max(input, c.op<NegOp>(input));
    break;
  case ReduceForm::Min:
    input = c.op<NegOp>(input);
    break;
  case ReduceForm::Prod: {
    // |prod| = e^(sum log|x|) over the nonzero x; 0 if any x is 0; the
    // sign from the parity of the negative count (n - 2 floor(n/2)).
    auto predicate = [&](StringRef p) {
      return StringAttr::get(ctx.getContext(), p);
    };
    auto indicator = [&](Value mask) {
      return c.op<WhereOp>(mask, c.scalar(input, 1.0), c.scalar(input, 0.0));
    };
    Value zero = c.scalar(input, 0.0);
    Value isZero = c.op<CompareOp>(predicate("eq"), input, zero);
    Value magnitude = c.max(input, c.op<NegOp>(input));
    Value safe = c.op<WhereOp>(isZero, c.scalar(input, 1.0), magnitude);
    Value product = c.op<ExpOp>(
        c.op<ReduceSumOp>(c.op<LogOp>(safe), reduceAxes, keepdims));
    Value anyZero = c.op<ReduceMaxOp>(indicator(isZero), reduceAxes, keepdims);
    Value negatives = c.op<ReduceSumOp>(
        indicator(c.op<CompareOp>(predicate("lt"), input, zero)), reduceAxes,
        keepdims);
    Value half = c.op<FloorOp>(c.mul(negatives, c.scalar(input, 0.5)));
    Value odd = c.op<SubOp>(negatives, c.mul(half, c.scalar(input, 2.0)));
    Value sign = c.op<SubOp>(c.scalar(input, 1.0), c.mul(odd, c.scalar(input, 2.0)));
    Value nonzero = c.op<SubOp>(c.scalar(input, 1.0), anyZero);
    return c.result(c.mul(c.mul(product, nonzero), sign));
  }
  case ReduceForm::LogSumExp: {
    Value m = c.op<ReduceMaxOp>(input, reduceAxes, true);
    Value sum = c.op<ReduceSumOp>(c.op<ExpOp>(c.op<SubOp>(input, m)),
                                  reduceAxes, keepdims);
    return c.result(c.add(c.op<LogOp>(sum),
                          c.op<ReduceMaxOp>(input, reduceAxes, keepdims)));
  }
  default:
    break;
  }
  Value reduced = c.op<OpTy>(input, reduceAxes, keepdims);
  switch (Form) {
  case ReduceForm::L2:
    return c.result(c.op<SqrtOp>(reduced));
  case ReduceForm::Min:
    return c.result(c.op<NegOp>(reduced));
  case ReduceForm::LogSum:
    return c.result(c.op<LogOp>(reduced));
  default:
    return c.result(reduced);
  }
}

/// Sum and Mean of any number of inputs, broadcasting.
template <bool Mean> LogicalResult convertVariadicSum(NodeContext &ctx) {
  Chain c(ctx);
  Value total = floatOperand(ctx, 0, "input 0");
  for (unsigned i = 1; i < ctx.getNumInputs(); ++i)
    total = c.add(total, floatOperand(ctx, i, "every input"));
  if (Mean && ctx.getNumInputs() > 1)
    total = c.mul(total, c.scalar(total, 1.0 / ctx.getNumInputs()));
  return c.result(total);
}

} // namespace

void addComputeConverters(ConverterTable &table) {
  table.add("Add", convertBinary<HostBinaryOp::Add, AddOp>);
  table.add("Sub", convertBinary<HostBinaryOp::Sub, SubOp>);
  table.add("Mul", convertBinary<HostBinaryOp::Mul, MulOp>);
  table.add("Div", convertBinary<HostBinaryOp::Div, DivOp>);
  table.add("Pow", convertBinary<HostBinaryOp::Pow, PowOp>);
  table.add("Max", convertBinary<HostBinaryOp::Max, MaxOp>);
  table.add("Min", convertBinary<HostBinaryOp::Min, MinOp>);
  table.add("Equal", [](NodeContext &ctx) {
    return convertComparison<HostBinaryOp::Equal>(ctx, "eq");
  });
  table.add("Less", [](NodeContext &ctx) {
    return convertComparison<HostBinaryOp::Less>(ctx, "lt");
  });
  table.add("Greater", [](NodeContext &ctx) {
    return convertComparison<HostBinaryOp::Greater>(ctx, "gt");
  });
  table.add("LessOrEqual", [](NodeContext &ctx) {
    return convertComparison<HostBinaryOp::LessOrEqual>(ctx, "le");
  });
  table.add("GreaterOrEqual", [](NodeContext &ctx) {
    return convertComparison<HostBinaryOp::GreaterOrEqual>(ctx, "ge");
  });
  table.add("And", convertLogic<HostBinaryOp::And>);
  table.add("Or", convertLogic<HostBinaryOp::Or>);
  table.add("Xor", convertLogic<HostBinaryOp::Xor>);
  table.add("Not", convertNot);
  table.add("Abs", convertAbs);
  table.add("Neg", convertUnary<HostUnaryOp::Neg, NegOp>);
  table.add("Relu", convertUnary<HostUnaryOp::Relu, ReluOp>);
  table.add("Sqrt", convertUnary<HostUnaryOp::Sqrt, SqrtOp>);
  table.add("Exp", convertUnary<HostUnaryOp::Exp, ExpOp>);
  table.add("Log", convertUnary<HostUnaryOp::Log, LogOp>);
  table.add("Erf", convertUnary<HostUnaryOp::Erf, ErfOp>);
  table.add("Sigmoid", convertUnary<HostUnaryOp::Sigmoid, SigmoidOp>);
  table.add("Tanh", convertUnary<HostUnaryOp::Tanh, TanhOp>);
  table.add("Reciprocal", convertReciprocal);
  table.add("Where", convertWhere);
  table.add("MatMul", convertMatMul);
  table.add("Gemm", convertGemm);
  table.add("Softmax", convertSoftmax);
  table.add("LayerNormalization", convertLayerNormalization);
  table.add("BatchNormalization", convertBatchNormalization);
  table.add("ReduceMean", convertReduce<ReduceMeanOp>);
  table.add("ReduceSum", convertReduce<ReduceSumOp>);
  table.add("ReduceMax", convertReduce<ReduceMaxOp>);
  table.add("ReduceSumSquare", convertReduce<ReduceSumOp, ReduceForm::SumSquare>);
  table.add("ReduceL2", convertReduce<ReduceSumOp, ReduceForm::L2>);
  table.add("ReduceL1", convertReduce<ReduceSumOp, ReduceForm::L1>);
  table.add("ReduceMin", convertReduce<ReduceMaxOp, ReduceForm::Min>);
  table.add("ReduceLogSum", convertReduce<ReduceSumOp, ReduceForm::LogSum>);
  table.add("ReduceProd", convertReduce<ReduceSumOp, ReduceForm::Prod>);
  table.add("ReduceLogSumExp",
            convertReduce<ReduceSumOp, ReduceForm::LogSumExp>);
  table.add("Sum", convertVariadicSum<false>);
  table.add("Mean", convertVariadicSum<true>);
  addConvolutionConverters(table);
}

} // namespace cleave::onnx_import
