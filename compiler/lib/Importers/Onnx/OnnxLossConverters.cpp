//===- OnnxLossConverters.cpp - Training losses as graph ops --------------===//
//
// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss, the losses of
// ONNX training graphs, written in graph ops that all have kernels on both
// backends, shape rules, gradients and sharding rules: the target class of
// every element is picked by comparing the targets (cast to floats, exact
// below 2^24 classes) with an iota over the class axis, which also gives
// each element its class weight; the loss is minus the weighted sum of the
// picked log-probabilities, reduced as `reduction` says ("mean" divides by
// the weight of the elements counted, as ONNX specifies). `ignore_index`
// drops a class by giving it weight zero (a target outside [0, C) matches
// no class and drops its element the same way). The input's gradient
// follows from the ops (the targets have none), so these losses train.
//
//===----------------------------------------------------------------------===//

#include "OnnxCompose.h"

#include "OnnxTensors.h"

using namespace mlir;
using namespace cleave::graph;

namespace cleave::onnx_import {
namespace {

/// A float constant of `shape` holding `values`, in `like`'s element type.
Value floatConstant(NodeContext &ctx, Chain &c, Value like, Shape shape,
                    std::vector<double> values) {
  HostTensor t;
  t.dtype = onnx::TensorProto::FLOAT;
  t.shape = std::move(shape);
  t.floats = std::move(values);
  Value v = ctx.createConstant(t);
  Type element = cast<RankedTensorType>(like.getType()).getElementType();
  if (v && cast<RankedTensorType>(v.getType()).getElementType() != element)
    v = c.op<CastOp>(RankedTensorType::get(t.shape, element), v);
  return v;
}

/// The loss of log-probabilities `logp` [N, C, d...] against integer
/// `target` [N, d...] (NegativeLogLikelihoodLoss); `weightInput`: the
/// node's input holding class weights, or -1.
Value negativeLogLikelihood(NodeContext &ctx, Chain &c, Value logp,
                            Value target, int weightInput) {
  if (!logp || !target)
    return {};
  auto type = cast<RankedTensorType>(logp.getType());
  auto targetType = cast<RankedTensorType>(target.getType());
  int64_t rank = type.getRank();
  if (rank < 2) {
    ctx.emitError() << "the input must be [N, C, d...], got " << type;
    return {};
  }
  if (!isa<IntegerType>(targetType.getElementType())) {
    ctx.emitError() << "the target must hold integer classes, got "
                    << targetType;
    return {};
  }
  Shape expected{type.getDimSize(0)};
  for (int64_t d = 2; d < rank; ++d)
    expected.push_back(type.getDimSize(d));
  if (Shape(targetType.getShape()) != expected) {
    ctx.emitError() << "the target " << targetType << " must be "
                    << shapeToString(expected) << " for the input " << type;
    return {};
  }
  int64_t classes = type.getDimSize(1);
  // The targets as floats [N, 1, d...] against the classes [1, C, 1...].
  Type element = type.getElementType();
  Value t = c.op<CastOp>(RankedTensorType::get(expected, element), target);
  Shape withClass = expected;
  withClass.insert(withClass.begin() + 1, 1);
  if (t) {
    FailureOr<Value> reshaped = ctx.reshape(t, withClass);
    t = succeeded(reshaped) ? *reshaped : Value();
  }
  Shape classShape(rank, 1);
  classShape[1] = classes;
  std::vector<double> iota;
  for (int64_t k = 0; k < classes; ++k)
    iota.push_back(double(k));
  Value hit = c.op<CompareOp>(StringAttr::get(ctx.getContext(), "eq"), t,
                              floatConstant(ctx, c, logp, classShape, iota));
  // Class weights [1, C, 1...], the ignored class's zero.
  std::vector<double> keep(classes, 1.0);
  int64_t ignore = ctx.getInt("ignore_index", -1);
  bool ignores = ctx.getAttr("ignore_index") && ignore >= 0 && ignore < classes;
  if (ignores)
    keep[ignore] = 0.0;
  Value weight = floatConstant(ctx, c, logp, classShape, keep);
  if (weightInput >= 0 && ctx.hasInput(weightInput)) {
    Value given = ctx.getValue(weightInput, ParamUse::Frozen);
    if (!given)
      return {};
    auto givenType = cast<RankedTensorType>(given.getType());
    if (givenType.getRank() != 1 || givenType.getDimSize(0) != classes) {
      ctx.emitError() << "the weights must be [" << classes << "], got "
                      << givenType;
      return {};
    }
    FailureOr<Value> shaped = ctx.reshape(given, classShape);
    if (failed(shaped))
      return {};
    weight = c.mul(*shaped, weight);
  }
  // Each element's weight at its target class, zero elsewhere.
  Value picked = c.op<WhereOp>(hit, weight, c.scalar(logp, 0.0));
  SmallVector<int64_t> classAxis{1};
  Value loss = c.op<NegOp>(c.op<ReduceSumOp>(
      c.mul(logp, picked), ArrayRef<int64_t>(classAxis), false));
  std::string reduction = ctx.getString("reduction", "mean");
  if (reduction == "none")
    return loss;
  if (!loss)
    return {};
  auto all = [](int64_t n) {
    SmallVector<int64_t> axes;
    for (int64_t d = 0; d < n; ++d)
      axes.push_back(d);
    return axes;
  };
  Value sum = c.op<ReduceSumOp>(loss, ArrayRef<int64_t>(all(rank - 1)), false);
  if (reduction == "sum")
    return sum;
  if (reduction != "mean") {
    ctx.emitError() << "reduction '" << reduction
                    << "' is not none, sum or mean";
    return {};
  }
  Value counted =
      c.op<ReduceSumOp>(picked, ArrayRef<int64_t>(all(rank)), false);
  return c.op<DivOp>(sum, counted);
}

LogicalResult convertNegativeLogLikelihoodLoss(NodeContext &ctx) {
  Chain c(ctx);
  Value logp = floatOperand(ctx, 0, "the input");
  Value target = ctx.getValue(1);
  return c.result(negativeLogLikelihood(ctx, c, logp, target, 2));
}

LogicalResult convertSoftmaxCrossEntropyLoss(NodeContext &ctx) {
  Chain c(ctx);
  Value scores = floatOperand(ctx, 0, "the scores");
  if (!scores)
    return failure();
  if (cast<RankedTensorType>(scores.getType()).getRank() < 2)
    return ctx.emitError() << "the scores must be [N, C, d...], got "
                           << scores.getType();
  // log_softmax over the classes, shifted by their maximum (as LogSoftmax).
  SmallVector<int64_t> classAxis{1};
  ArrayRef<int64_t> axes(classAxis);
  Value shifted = c.op<SubOp>(scores, c.op<ReduceMaxOp>(scores, axes, true));
  Value logp = c.op<SubOp>(
      shifted, c.op<LogOp>(c.op<ReduceSumOp>(c.op<ExpOp>(shifted), axes, true)));
  Value loss = negativeLogLikelihood(ctx, c, logp, ctx.getValue(1), 2);
  if (!loss)
    return failure();
  if (ctx.getNumOutputs() > 1 && ctx.isOutputUsed(1) &&
      failed(ctx.setResult(1, logp)))
    return failure();
  return c.result(loss);
}

} // namespace

void addLossConverters(ConverterTable &table) {
  table.add("NegativeLogLikelihoodLoss", convertNegativeLogLikelihoodLoss);
  table.add("SoftmaxCrossEntropyLoss", convertSoftmaxCrossEntropyLoss);
}

} // namespace cleave::onnx_import
