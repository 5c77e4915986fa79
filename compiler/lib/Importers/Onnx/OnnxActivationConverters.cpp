//===- OnnxActivationConverters.cpp - Activations as graph ops ------------===//
//
// The activations of vision, OCR and speech exports (Clip, HardSigmoid,
// HardSwish, LeakyRelu, PRelu, Elu, Softplus, LogSoftmax), each written in
// the graph ops it is made of: every one of those has its shape rule, FLOP
// count, CPU and CUDA kernels, gradient and sharding rule, so these
// activations train and shard like any element-wise chain. The
// compositions are the numerically stable forms (Softplus as
// relu(x) + log(1 + exp(-|x|)), LogSoftmax shifted by the maximum). Mish
// is opset 18, past what libonnx 1.12 checks; exporters below it write it
// as x * tanh(softplus(x)), which imports so.
//
//===----------------------------------------------------------------------===//

#include "OnnxCompose.h"

#include "cleave/Dialect/Graph/IR/GraphOps.h"

using namespace mlir;
using namespace cleave::graph;

namespace cleave::onnx_import {
namespace {


LogicalResult convertClip(NodeContext &ctx) {
  Chain c(ctx);
  Value x = c.input();
  if (!x)
    return failure();
  // Bounds: optional inputs since opset 11 (attributes before; the version
  // converter has made them inputs). Either may be absent.
  Value y = x;
  if (ctx.hasInput(1))
    y = c.max(y, ctx.getValue(1, ParamUse::Frozen));
  if (ctx.hasInput(2))
    y = c.min(y, ctx.getValue(2, ParamUse::Frozen));
  return c.result(y);
}

LogicalResult convertHardSigmoid(NodeContext &ctx) {
  Chain c(ctx);
  Value x = c.input();
  return c.result(c.hardSigmoid(x, ctx.getFloat("alpha", 0.2),
                                ctx.getFloat("beta", 0.5)));
}

LogicalResult convertHardSwish(NodeContext &ctx) {
  Chain c(ctx);
  Value x = c.input();
  return c.result(c.mul(x, c.hardSigmoid(x, 1.0 / 6.0, 0.5)));
}

LogicalResult convertLeakyRelu(NodeContext &ctx) {
  Chain c(ctx);
  Value x = c.input();
  return c.result(c.leaky(x, c.scalar(x, ctx.getFloat("alpha", 0.01))));
}

LogicalResult convertPRelu(NodeContext &ctx) {
  Chain c(ctx);
  Value x = c.input();
  // The slope is learned (an initializer of the model: a parameter),
  // broadcast against x.
  return c.result(c.leaky(x, ctx.getValue(1)));
}

LogicalResult convertElu(NodeContext &ctx) {
  Chain c(ctx);
  Value x = c.input();
  if (!x)
    return failure();
  // relu(x) + alpha (e^min(x, 0) - 1).
  double alpha = ctx.getFloat("alpha", 1.0);
  Value negative = c.op<ExpOp>(c.min(x, c.scalar(x, 0.0)));
  Value tail = c.mul(c.add(negative, c.scalar(x, -1.0)), c.scalar(x, alpha));
  return c.result(c.add(c.op<ReluOp>(x), tail));
}

LogicalResult convertSoftplus(NodeContext &ctx) {
  Chain c(ctx);
  return c.result(c.softplus(c.input()));
}

LogicalResult convertLogSoftmax(NodeContext &ctx) {
  Chain c(ctx);
  Value x = c.input();
  if (!x)
    return failure();
  int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
  int64_t axis = ctx.getInt("axis", -1);
  if (axis < -rank || axis >= rank)
    return ctx.emitError() << "axis " << axis << " is out of range for rank "
                           << rank;
  if (axis < 0)
    axis += rank;
  // x - m - log(sum(e^(x - m))), m the row's maximum: no e^x overflows and
  // no log of an underflowed probability (log(softmax(x)) would give -inf
  // far from the maximum). m's gradient cancels exactly.
  ArrayRef<int64_t> axes(axis);
  Value m = c.op<ReduceMaxOp>(x, axes, true);
  Value shifted = c.op<SubOp>(x, m);
  Value sum = c.op<ReduceSumOp>(c.op<ExpOp>(shifted), axes, true);
  return c.result(c.op<SubOp>(shifted, c.op<LogOp>(sum)));
}

} // namespace

void addActivationConverters(ConverterTable &table) {
  table.add("LogSoftmax", convertLogSoftmax);
  table.add("Clip", convertClip);
  table.add("HardSigmoid", convertHardSigmoid);
  table.add("HardSwish", convertHardSwish);
  table.add("LeakyRelu", convertLeakyRelu);
  table.add("PRelu", convertPRelu);
  table.add("Elu", convertElu);
  table.add("Softplus", convertSoftplus);
}

} // namespace cleave::onnx_import
