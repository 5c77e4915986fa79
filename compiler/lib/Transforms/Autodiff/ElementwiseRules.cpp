//===- ElementwiseRules.cpp - Derivatives of elementwise ops --------------===//
//
// Gradients of broadcasting ops are summed back to each operand's shape
// (reduceTo). Where a derivative is a short expression of forward ops it is
// built from them; smooth activations use activation_grad, one fused op.
//
//===----------------------------------------------------------------------===//

#include "GradientBuilders.h"

using namespace mlir;
using namespace cleave::graph;

namespace cleave::autodiff {

namespace {

template <typename OpT>
LogicalResult gradAddSub(OpT op, OpBuilder &b, ValueRange dys,
                         SmallVectorImpl<Value> &dxs) {
  Location loc = op.getLoc();
  Value dy = dys[0];
  dxs.push_back(reduceTo(b, loc, dy, op.getLhs().getType()));
  Value dr = std::is_same_v<OpT, SubOp> ? Value(NegOp::create(b, loc, dy)) : dy;
  dxs.push_back(reduceTo(b, loc, dr, op.getRhs().getType()));
  return success();
}

LogicalResult gradMul(MulOp op, OpBuilder &b, ValueRange dys,
                      SmallVectorImpl<Value> &dxs) {
  Location loc = op.getLoc();
  dxs.push_back(reduceTo(b, loc, MulOp::create(b, loc, dys[0], op.getRhs()),
                         op.getLhs().getType()));
  dxs.push_back(reduceTo(b, loc, MulOp::create(b, loc, dys[0], op.getLhs()),
                         op.getRhs().getType()));
  return success();
}

LogicalResult gradDiv(DivOp op, OpBuilder &b, ValueRange dys,
                      SmallVectorImpl<Value> &dxs) {
  Location loc = op.getLoc();
  Value da = DivOp::create(b, loc, dys[0], op.getRhs());
  dxs.push_back(reduceTo(b, loc, da, op.getLhs().getType()));
  // d(a/b)/db = -(a/b)/b, so the gradient is -dy * y / b.
  Value db = NegOp::create(
      b, loc,
      DivOp::create(b, loc, MulOp::create(b, loc, dys[0], op), op.getRhs()));
  dxs.push_back(reduceTo(b, loc, db, op.getRhs().getType()));
  return success();
}

LogicalResult gradPow(PowOp op, OpBuilder &b, ValueRange dys,
                      SmallVectorImpl<Value> &dxs) {
  Location loc = op.getLoc();
  Type et = elementTypeOf(op);
  // d(a^e)/da = e * a^(e-1); d(a^e)/de = a^e * ln a (built only when the
  // exponent needs a gradient; the pass drops unused values).
  Value exponentMinusOne =
      SubOp::create(b, loc, op.getRhs(), scalar(b, loc, et, 1.0));
  Value da = MulOp::create(
      b, loc, dys[0],
      MulOp::create(b, loc, op.getRhs(),
                    PowOp::create(b, loc, op.getLhs(), exponentMinusOne)));
  dxs.push_back(reduceTo(b, loc, da, op.getLhs().getType()));
  Value de = MulOp::create(
      b, loc, dys[0], MulOp::create(b, loc, op, LogOp::create(b, loc, op.getLhs())));
  dxs.push_back(reduceTo(b, loc, de, op.getRhs().getType()));
  return success();
}

/// max/min: the gradient goes to the operand that was chosen (lhs on ties).
template <typename OpT>
LogicalResult gradMaxMin(OpT op, OpBuilder &b, ValueRange dys,
                         SmallVectorImpl<Value> &dxs) {
  Location loc = op.getLoc();
  StringRef predicate = std::is_same_v<OpT, MaxOp> ? "ge" : "le";
  Value takeLhs =
      CompareOp::create(b, loc, predicate, op.getLhs(), op.getRhs());
  Value zero = scalar(b, loc, elementTypeOf(op), 0.0);
  dxs.push_back(reduceTo(b, loc, WhereOp::create(b, loc, takeLhs, dys[0], zero),
                         op.getLhs().getType()));
  dxs.push_back(reduceTo(b, loc, WhereOp::create(b, loc, takeLhs, zero, dys[0]),
                         op.getRhs().getType()));
  return success();
}

LogicalResult gradWhere(WhereOp op, OpBuilder &b, ValueRange dys,
                        SmallVectorImpl<Value> &dxs) {
  Location loc = op.getLoc();
  Value zero = scalar(b, loc, elementTypeOf(op), 0.0);
  Value c = op.getCondition();
  dxs.push_back(Value()); // the condition has no gradient
  dxs.push_back(reduceTo(b, loc, WhereOp::create(b, loc, c, dys[0], zero),
                         op.getLhs().getType()));
  dxs.push_back(reduceTo(b, loc, WhereOp::create(b, loc, c, zero, dys[0]),
                         op.getRhs().getType()));
  return success();
}

LogicalResult gradNeg(NegOp op, OpBuilder &b, ValueRange dys,
                      SmallVectorImpl<Value> &dxs) {
  dxs.push_back(NegOp::create(b, op.getLoc(), dys[0]));
  return success();
}

LogicalResult gradExp(ExpOp op, OpBuilder &b, ValueRange dys,
                      SmallVectorImpl<Value> &dxs) {
  dxs.push_back(MulOp::create(b, op.getLoc(), dys[0], op));
  return success();
}

LogicalResult gradLog(LogOp op, OpBuilder &b, ValueRange dys,
                      SmallVectorImpl<Value> &dxs) {
  dxs.push_back(DivOp::create(b, op.getLoc(), dys[0], op.getInput()));
  return success();
}

LogicalResult gradSqrt(SqrtOp op, OpBuilder &b, ValueRange dys,
                       SmallVectorImpl<Value> &dxs) {
  Location loc = op.getLoc();
  Value half = scalar(b, loc, elementTypeOf(op), 0.5);
  dxs.push_back(
      MulOp::create(b, loc, DivOp::create(b, loc, dys[0], op), half));
  return success();
}

LogicalResult gradRsqrt(RsqrtOp op, OpBuilder &b, ValueRange dys,
                        SmallVectorImpl<Value> &dxs) {
  Location loc = op.getLoc();
  // d(x^-1/2)/dx = -1/2 y^3
  Value y3 = MulOp::create(b, loc, op, MulOp::create(b, loc, op, op));
  Value minusHalf = scalar(b, loc, elementTypeOf(op), -0.5);
  dxs.push_back(
      MulOp::create(b, loc, MulOp::create(b, loc, dys[0], y3), minusHalf));
  return success();
}

/// Smooth activations through the fused activation_grad op.
template <typename OpT>
LogicalResult gradActivation(OpT op, OpBuilder &b, ValueRange dys,
                             SmallVectorImpl<Value> &dxs) {
  StringRef kind;
  if constexpr (std::is_same_v<OpT, ReluOp>)
    kind = "relu";
  else if constexpr (std::is_same_v<OpT, SiluOp>)
    kind = "silu";
  else if constexpr (std::is_same_v<OpT, SigmoidOp>)
    kind = "sigmoid";
  else if constexpr (std::is_same_v<OpT, TanhOp>)
    kind = "tanh";
  else if constexpr (std::is_same_v<OpT, ErfOp>)
    kind = "erf";
  else
    kind = op.getApproximateTanh() ? "gelu_tanh" : "gelu";
  dxs.push_back(ActivationGradOp::create(b, op.getLoc(), op.getType(), kind,
                                         op.getInput(), dys[0]));
  return success();
}

LogicalResult gradDropout(DropoutOp op, OpBuilder &b, ValueRange dys,
                          SmallVectorImpl<Value> &dxs) {
  // The mask depends only on (seed, index), so the same op applied to the
  // gradient multiplies it by the same mask and scale.
  dxs.push_back(DropoutOp::create(b, op.getLoc(), op.getType(), dys[0],
                                  op.getRatioAttr(), op.getSeedAttr()));
  return success();
}

LogicalResult gradCast(CastOp op, OpBuilder &b, ValueRange dys,
                       SmallVectorImpl<Value> &dxs) {
  dxs.push_back(
      CastOp::create(b, op.getLoc(), op.getInput().getType(), dys[0]));
  return success();
}

LogicalResult gradStopGradient(StopGradientOp, OpBuilder &, ValueRange,
                               SmallVectorImpl<Value> &dxs) {
  dxs.push_back(Value());
  return success();
}

/// Piecewise constant: no gradient.
LogicalResult gradFloor(FloorOp, OpBuilder &, ValueRange,
                        SmallVectorImpl<Value> &dxs) {
  dxs.push_back(Value());
  return success();
}

/// sin' = cos, cos' = -sin, atan' = 1 / (1 + x^2).
LogicalResult gradSin(SinOp op, OpBuilder &b, ValueRange dys,
                      SmallVectorImpl<Value> &dxs) {
  Location loc = op.getLoc();
  dxs.push_back(
      MulOp::create(b, loc, dys[0], CosOp::create(b, loc, op.getInput())));
  return success();
}

LogicalResult gradCos(CosOp op, OpBuilder &b, ValueRange dys,
                      SmallVectorImpl<Value> &dxs) {
  Location loc = op.getLoc();
  Value sin = SinOp::create(b, loc, op.getInput());
  dxs.push_back(NegOp::create(b, loc, MulOp::create(b, loc, dys[0], sin)));
  return success();
}

LogicalResult gradAtan(AtanOp op, OpBuilder &b, ValueRange dys,
                       SmallVectorImpl<Value> &dxs) {
  Location loc = op.getLoc();
  Value x = op.getInput();
  Value denominator = AddOp::create(b, loc, MulOp::create(b, loc, x, x),
                                    scalar(b, loc, elementTypeOf(op), 1.0));
  dxs.push_back(DivOp::create(b, loc, dys[0], denominator));
  return success();
}

} // namespace

void attachElementwiseRules(MLIRContext *ctx) {
  attach<StopGradientOp, gradStopGradient>(ctx);
  attach<AddOp, gradAddSub<AddOp>>(ctx);
  attach<SubOp, gradAddSub<SubOp>>(ctx);
  attach<MulOp, gradMul>(ctx);
  attach<DivOp, gradDiv>(ctx);
  attach<PowOp, gradPow>(ctx);
  attach<MaxOp, gradMaxMin<MaxOp>>(ctx);
  attach<MinOp, gradMaxMin<MinOp>>(ctx);
  attach<WhereOp, gradWhere>(ctx);
  attach<NegOp, gradNeg>(ctx);
  attach<ExpOp, gradExp>(ctx);
  attach<LogOp, gradLog>(ctx);
  attach<SqrtOp, gradSqrt>(ctx);
  attach<RsqrtOp, gradRsqrt>(ctx);
  attach<ReluOp, gradActivation<ReluOp>>(ctx);
  attach<SiluOp, gradActivation<SiluOp>>(ctx);
  attach<SigmoidOp, gradActivation<SigmoidOp>>(ctx);
  attach<TanhOp, gradActivation<TanhOp>>(ctx);
  attach<ErfOp, gradActivation<ErfOp>>(ctx);
  attach<GeluOp, gradActivation<GeluOp>>(ctx);
  attach<DropoutOp, gradDropout>(ctx);
  attach<FloorOp, gradFloor>(ctx);
  attach<SinOp, gradSin>(ctx);
  attach<CosOp, gradCos>(ctx);
  attach<AtanOp, gradAtan>(ctx);
  attach<CastOp, gradCast>(ctx);
}

} // namespace cleave::autodiff
