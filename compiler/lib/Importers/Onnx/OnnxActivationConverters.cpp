//===- OnnxActivationConverters.cpp - Activations as graph ops ------------===//
//
// The activations of vision, OCR and speech exports (Clip, HardSigmoid,
// HardSwish, LeakyRelu, PRelu, Elu, Celu, Selu, Softplus, Softsign, Sign,
// LogSoftmax, ThresholdedRelu, Shrink, and the hyperbolic functions and
// their inverses), each written in
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
  // Integers too (the clamps of quantised pre-processing): max and min
  // compute on them.
  Value x = numericOperand(ctx, 0, "the input");
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

/// relu(x) + alpha (e^(min(x, 0) / width) - 1): Elu (width 1), Celu
/// (width alpha), and Selu's body. min keeps e^x from overflowing where
/// the branch is not taken.
Value exponentialUnit(Chain &c, Value x, double alpha, double width) {
  Value negative = c.min(x, c.scalar(x, 0.0));
  if (width != 1.0)
    negative = c.mul(negative, c.scalar(x, 1.0 / width));
  Value tail = c.mul(c.add(c.op<ExpOp>(negative), c.scalar(x, -1.0)),
                     c.scalar(x, alpha));
  return c.add(c.op<ReluOp>(x), tail);
}

/// Elu, Celu (its exponential over x / alpha) and Selu (gamma times Elu,
/// with the self-normalising constants of Klambauer et al. (2017) as
/// ONNX's defaults).
enum class ExponentialUnit { Elu, Celu, Selu };

template <ExponentialUnit F>
LogicalResult convertExponentialUnit(NodeContext &ctx) {
  Chain c(ctx);
  Value x = c.input();
  if (!x)
    return failure();
  bool selu = F == ExponentialUnit::Selu;
  double alpha = ctx.getFloat("alpha", selu ? 1.67326319217681884765625 : 1.0);
  if (F == ExponentialUnit::Celu && !(alpha > 0))
    return ctx.emitError() << "alpha must be positive, got " << alpha;
  Value y = exponentialUnit(c, x, alpha,
                            F == ExponentialUnit::Celu ? alpha : 1.0);
  if (selu)
    y = c.mul(y, c.scalar(x, ctx.getFloat("gamma", 1.05070102214813232421875)));
  return c.result(y);
}

/// x / (1 + |x|).
LogicalResult convertSoftsign(NodeContext &ctx) {
  Chain c(ctx);
  Value x = c.input();
  if (!x)
    return failure();
  Value abs = c.max(x, c.op<NegOp>(x));
  return c.result(c.op<DivOp>(x, c.add(abs, c.scalar(x, 1.0))));
}

/// 1 where x > 0, -1 where x < 0, else 0 (no gradient).
LogicalResult convertSign(NodeContext &ctx) {
  Chain c(ctx);
  Value x = c.input();
  if (!x)
    return failure();
  MLIRContext *m = ctx.getContext();
  Value zero = c.scalar(x, 0.0);
  Value positive = c.op<CompareOp>(StringAttr::get(m, "gt"), x, zero);
  Value negative = c.op<CompareOp>(StringAttr::get(m, "lt"), x, zero);
  Value y = c.op<WhereOp>(negative, c.scalar(x, -1.0), zero);
  return c.result(c.op<WhereOp>(positive, c.scalar(x, 1.0), y));
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

/// The hyperbolic functions and their inverses, in exp, log and sqrt:
/// sinh = (e^x - e^-x) / 2, cosh = (e^x + e^-x) / 2,
/// asinh = log(x + sqrt(x^2 + 1)) (odd: taken on |x| and given x's sign,
/// so that large negative x does not cancel), acosh = log(x + sqrt(x^2 - 1)),
/// atanh = log((1 + x) / (1 - x)) / 2.
enum class Hyperbolic { Sinh, Cosh, Asinh, Acosh, Atanh };

template <Hyperbolic F> LogicalResult convertHyperbolic(NodeContext &ctx) {
  Chain c(ctx);
  Value x = c.input();
  if (!x)
    return failure();
  Value half = c.scalar(x, 0.5), one = c.scalar(x, 1.0);
  switch (F) {
  case Hyperbolic::Sinh:
  case Hyperbolic::Cosh: {
    Value up = c.op<ExpOp>(x), down = c.op<ExpOp>(c.op<NegOp>(x));
    Value sum = F == Hyperbolic::Sinh ? c.op<SubOp>(up, down) : c.add(up, down);
    return c.result(c.mul(sum, half));
  }
  case Hyperbolic::Asinh: {
    Value abs = c.max(x, c.op<NegOp>(x));
    Value root = c.op<SqrtOp>(c.add(c.mul(abs, abs), one));
    Value magnitude = c.op<LogOp>(c.add(abs, root));
    Value negative = c.op<CompareOp>(StringAttr::get(ctx.getContext(), "lt"),
                                     x, c.scalar(x, 0.0));
    return c.result(
        c.op<WhereOp>(negative, c.op<NegOp>(magnitude), magnitude));
  }
  case Hyperbolic::Acosh: {
    Value root = c.op<SqrtOp>(c.op<SubOp>(c.mul(x, x), one));
    return c.result(c.op<LogOp>(c.add(x, root)));
  }
  case Hyperbolic::Atanh: {
    Value ratio = c.op<DivOp>(c.add(one, x), c.op<SubOp>(one, x));
    return c.result(c.mul(c.op<LogOp>(ratio), half));
  }
  }
  return failure();
}

/// x where x > alpha, else 0.
LogicalResult convertThresholdedRelu(NodeContext &ctx) {
  Chain c(ctx);
  Value x = c.input();
  Value above = c.op<CompareOp>(StringAttr::get(ctx.getContext(), "gt"), x,
                                c.scalar(x, ctx.getFloat("alpha", 1.0)));
  return c.result(c.op<WhereOp>(above, x, c.scalar(x, 0.0)));
}

/// x + bias where x < -lambd, x - bias where x > lambd, else 0.
LogicalResult convertShrink(NodeContext &ctx) {
  Chain c(ctx);
  Value x = c.input();
  double lambd = ctx.getFloat("lambd", 0.5), bias = ctx.getFloat("bias", 0.0);
  MLIRContext *m = ctx.getContext();
  Value low = c.op<CompareOp>(StringAttr::get(m, "lt"), x, c.scalar(x, -lambd));
  Value high = c.op<CompareOp>(StringAttr::get(m, "gt"), x, c.scalar(x, lambd));
  Value zero = c.scalar(x, 0.0);
  Value y = c.op<WhereOp>(high, c.add(x, c.scalar(x, -bias)), zero);
  return c.result(c.op<WhereOp>(low, c.add(x, c.scalar(x, bias)), y));
}

} // namespace

void addActivationConverters(ConverterTable &table) {
  table.add("Sinh", convertHyperbolic<Hyperbolic::Sinh>);
  table.add("Cosh", convertHyperbolic<Hyperbolic::Cosh>);
  table.add("Asinh", convertHyperbolic<Hyperbolic::Asinh>);
  table.add("Acosh", convertHyperbolic<Hyperbolic::Acosh>);
  table.add("Atanh", convertHyperbolic<Hyperbolic::Atanh>);
  table.add("ThresholdedRelu", convertThresholdedRelu);
  table.add("Shrink", convertShrink);
  table.add("LogSoftmax", convertLogSoftmax);
  table.add("Clip", convertClip);
  table.add("HardSigmoid", convertHardSigmoid);
  table.add("HardSwish", convertHardSwish);
  table.add("LeakyRelu", convertLeakyRelu);
  table.add("PRelu", convertPRelu);
  table.add("Elu", convertExponentialUnit<ExponentialUnit::Elu>);
  table.add("Celu", convertExponentialUnit<ExponentialUnit::Celu>);
  table.add("Selu", convertExponentialUnit<ExponentialUnit::Selu>);
  table.add("Softsign", convertSoftsign);
  table.add("Sign", convertSign);
  table.add("Softplus", convertSoftplus);
}

} // namespace cleave::onnx_import
