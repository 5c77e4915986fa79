//===- OnnxMathConverters.cpp - Trigonometry, rounding and Mod ------------===//
//
// Sin, Cos and Atan are graph ops of their own (kernels, gradients); Tan,
// Asin and Acos are written in them (tan = sin / cos, asin(x) =
// atan(x / sqrt(1 - x^2)), acos = pi/2 - asin). Floor is a graph op; Ceil
// (-floor(-x)), Round (half to even) and a run-time Mod (x - y floor(x / y),
// or with fmod = 1 the dividend's sign: x - y trunc(x / y)) are written in
// floor. IsInf is one comparison. Values known at import are folded there
// instead (shape arithmetic: Swin's window shifts, paddle2onnx's sizes).
// Det is a cofactor expansion over column subsets (below).
//
//===----------------------------------------------------------------------===//

#include "OnnxCompose.h"
#include "OnnxConstantFolding.h"

#include "cleave/Dialect/Graph/IR/GraphOps.h"
#include "llvm/ADT/bit.h"

#include <limits>
#include <optional>

using namespace mlir;
using namespace cleave::graph;

namespace cleave::onnx_import {
namespace {

/// The folded result when every input is known at import, else nullopt
/// with nothing reported (the caller then builds graph ops).
std::optional<LogicalResult> foldIfKnown(NodeContext &ctx,
                                         std::optional<HostUnaryOp> unary,
                                         std::optional<HostBinaryOp> binary) {
  const HostTensor *a = ctx.getConstant(0);
  const HostTensor *b = binary ? ctx.getConstant(1) : nullptr;
  if (!a || (binary && !b))
    return std::nullopt;
  llvm::Expected<HostTensor> r =
      unary ? foldUnary(*unary, *a) : foldBinary(*binary, *a, *b);
  if (!r)
    return ctx.fail(r.takeError());
  return ctx.setResult(0, std::move(*r));
}

/// The node's floating-point input `i`, or null after an error.
Value floatInput(NodeContext &ctx, unsigned i) {
  Value v = ctx.getValue(i);
  auto type = v ? dyn_cast<RankedTensorType>(v.getType()) : nullptr;
  if (v && (!type || !isa<FloatType>(type.getElementType()))) {
    ctx.emitError() << "input " << i
                    << " must be floating point at run time, got "
                    << v.getType();
    return {};
  }
  return v;
}

enum class Trig { Sin, Cos, Tan, Atan, Asin, Acos };

template <Trig F> LogicalResult convertTrig(NodeContext &ctx) {
  Chain c(ctx);
  Value x = floatInput(ctx, 0);
  if (!x)
    return failure();
  auto asin = [&] {
    Value one = c.scalar(x, 1.0);
    Value root = c.op<SqrtOp>(c.op<SubOp>(one, c.mul(x, x)));
    return c.op<AtanOp>(c.op<DivOp>(x, root));
  };
  switch (F) {
  case Trig::Sin:
    return c.result(c.op<SinOp>(x));
  case Trig::Cos:
    return c.result(c.op<CosOp>(x));
  case Trig::Tan:
    return c.result(c.op<DivOp>(c.op<SinOp>(x), c.op<CosOp>(x)));
  case Trig::Atan:
    return c.result(c.op<AtanOp>(x));
  case Trig::Asin:
    return c.result(asin());
  case Trig::Acos:
    return c.result(
        c.op<SubOp>(c.scalar(x, 1.57079632679489661923), asin()));
  }
  return failure();
}

/// Floor, and Ceil as -floor(-x).
template <HostUnaryOp F> LogicalResult convertFloorOrCeil(NodeContext &ctx) {
  if (std::optional<LogicalResult> folded =
          foldIfKnown(ctx, F, std::nullopt))
    return *folded;
  Chain c(ctx);
  Value x = floatInput(ctx, 0);
  if (!x)
    return failure();
  if (F == HostUnaryOp::Floor)
    return c.result(c.op<FloorOp>(x));
  return c.result(c.op<NegOp>(c.op<FloorOp>(c.op<NegOp>(x))));
}

/// Nearest integer, halves to the even one (ONNX's, numpy's).
LogicalResult convertRound(NodeContext &ctx) {
  Chain c(ctx);
  Value x = floatInput(ctx, 0);
  if (!x)
    return failure();
  return c.result(c.roundHalfEven(x));
}

/// x mod y: y's sign (x - y floor(x / y)), or with fmod = 1 x's sign
/// (C's fmod: x - y trunc(x / y)).
LogicalResult convertMod(NodeContext &ctx) {
  bool fmod = ctx.getInt("fmod", 0) != 0;
  if (std::optional<LogicalResult> folded = foldIfKnown(
          ctx, std::nullopt, fmod ? HostBinaryOp::FMod : HostBinaryOp::Mod))
    return *folded;
  Chain c(ctx);
  // Integers: one graph.mod, exact at every width.
  if (RankedTensorType type = ctx.getType(0);
      type && isNumeric(type.getElementType()) &&
      !isa<FloatType>(type.getElementType())) {
    Value x = numericOperand(ctx, 0, "input 0");
    Value y = x ? numericOperand(ctx, 1, "input 1") : Value();
    if (!x || !y)
      return failure();
    FailureOr<ModOp> mod = ctx.create<ModOp>(x, y);
    if (failed(mod))
      return failure();
    if (fmod)
      mod->setFmod(true);
    return ctx.setResult(0, mod->getResult());
  }
  Value x = floatInput(ctx, 0), y = x ? floatInput(ctx, 1) : Value();
  if (!x || !y)
    return failure();
  Value q = c.op<DivOp>(x, y);
  Value whole = c.op<FloorOp>(q);
  if (fmod) {
    Value negative = c.op<CompareOp>(StringAttr::get(ctx.getContext(), "lt"),
                                     q, c.scalar(q, 0.0));
    Value up = c.op<NegOp>(c.op<FloorOp>(c.op<NegOp>(q)));
    whole = c.op<WhereOp>(negative, up, whole);
  }
  return c.result(c.op<SubOp>(x, c.mul(y, whole)));
}

/// BitShift on unsigned integers: one graph.bit_shift (the ONNX type
/// constraint; the dialect verifies it).
LogicalResult convertBitShift(NodeContext &ctx) {
  std::string direction = ctx.getString("direction", "");
  if (direction != "LEFT" && direction != "RIGHT")
    return ctx.emitError() << "direction must be LEFT or RIGHT, got '"
                           << direction << "'";
  Value x = numericOperand(ctx, 0, "input 0");
  Value y = x ? numericOperand(ctx, 1, "input 1") : Value();
  if (!x || !y)
    return failure();
  FailureOr<BitShiftOp> shift = ctx.create<BitShiftOp>(x, y);
  if (failed(shift))
    return failure();
  if (direction == "RIGHT")
    shift->setRight(true);
  return ctx.setResult(0, shift->getResult());
}

/// x == +inf (detect_positive) or -inf (detect_negative); both: |x| ==
/// inf. One comparison at run time (a bool tensor, as ONNX's).
LogicalResult convertIsInf(NodeContext &ctx) {
  bool positive = ctx.getInt("detect_positive", 1) != 0;
  bool negative = ctx.getInt("detect_negative", 1) != 0;
  Chain c(ctx);
  Value x = floatInput(ctx, 0);
  if (!x)
    return failure();
  double inf = std::numeric_limits<double>::infinity();
  MLIRContext *m = ctx.getContext();
  if (!positive && !negative) // nothing is detected: x < -inf, all false
    return c.result(
        c.op<CompareOp>(StringAttr::get(m, "lt"), x, c.scalar(x, -inf)));
  Value v = positive && negative ? c.max(x, c.op<NegOp>(x)) : x;
  return c.result(c.op<CompareOp>(StringAttr::get(m, "eq"), v,
                                  c.scalar(x, negative && !positive ? -inf
                                                                    : inf)));
}

/// IsNaN: NaN is the one value unequal to itself (the kernels compare as
/// IEEE 754 says; nothing folds x != x).
LogicalResult convertIsNaN(NodeContext &ctx) {
  Chain c(ctx);
  Value x = floatInput(ctx, 0);
  if (!x)
    return failure();
  return c.result(
      c.op<CompareOp>(StringAttr::get(ctx.getContext(), "ne"), x, x));
}

/// Det of [..., M, M] by Laplace expansion along rows, sharing the minors:
/// D(S), the determinant of rows 0..|S|-1 and the columns in S, is the sum
/// over j in S of (-1)^(|S|-1 + position of j in S) a[|S|-1, j] D(S - j).
/// All 2^M minors are built once (M 2^(M-1) products), exact and
/// differentiable through element-wise ops, with no pivot to divide by, so
/// singular matrices give 0 and their gradients stay finite. The minors
/// grow as 2^M, so M is capped at 6 (192 products; the 2x2 to 4x4 of
/// geometry and normalising flows are far below it).
LogicalResult convertDet(NodeContext &ctx) {
  Chain c(ctx);
  Value x = c.input();
  if (!x)
    return failure();
  Shape shape = shapeOf(x);
  int64_t rank = int64_t(shape.size());
  constexpr int64_t maxOrder = 6;
  if (rank < 2 || shape[rank - 1] != shape[rank - 2] || shape[rank - 1] < 1)
    return ctx.emitError() << "needs square matrices [..., M, M], got "
                           << shapeToString(shape);
  int64_t m = shape[rank - 1];
  if (m > maxOrder)
    return ctx.emitError() << "Det of " << m << "x" << m
                           << " matrices is not supported: its cofactor "
                              "expansion is built up to "
                           << maxOrder << "x" << maxOrder;
  Shape batch(shape.begin(), shape.end() - 2);
  auto element = [&](int64_t i, int64_t j) -> Value {
    Shape start(rank, 0), end = shape, step(rank, 1);
    start[rank - 2] = i;
    end[rank - 2] = i + 1;
    start[rank - 1] = j;
    end[rank - 1] = j + 1;
    Value v = compose<SliceOp>(ctx, x, ArrayRef<int64_t>(start),
                               ArrayRef<int64_t>(end), ArrayRef<int64_t>(step));
    return v ? ctx.reshape(v, batch).value_or(Value()) : Value();
  };
  std::vector<Value> minor(size_t(1) << m);
  for (uint32_t set = 1; set < minor.size(); ++set) {
    int64_t row = llvm::popcount(set) - 1, position = 0;
    Value sum;
    for (int64_t j = 0; j < m; ++j) {
      if (!(set & (1u << j)))
        continue;
      uint32_t rest = set & ~(1u << j);
      Value term = rest ? c.mul(element(row, j), minor[rest]) : element(row, j);
      if (!term)
        return failure();
      if (!sum)
        sum = (row + position) % 2 ? c.op<NegOp>(term) : term;
      else
        sum = (row + position) % 2 ? c.op<SubOp>(sum, term) : c.add(sum, term);
      ++position;
    }
    minor[set] = sum;
  }
  return c.result(minor.back());
}

} // namespace

void addMathConverters(ConverterTable &table) {
  table.add("Sin", convertTrig<Trig::Sin>);
  table.add("Cos", convertTrig<Trig::Cos>);
  table.add("Tan", convertTrig<Trig::Tan>);
  table.add("Atan", convertTrig<Trig::Atan>);
  table.add("Asin", convertTrig<Trig::Asin>);
  table.add("Acos", convertTrig<Trig::Acos>);
  table.add("Floor", convertFloorOrCeil<HostUnaryOp::Floor>);
  table.add("Ceil", convertFloorOrCeil<HostUnaryOp::Ceil>);
  table.add("Round", convertRound);
  table.add("Mod", convertMod);
  table.add("BitShift", convertBitShift);
  table.add("IsInf", convertIsInf);
  table.add("IsNaN", convertIsNaN);
  table.add("Det", convertDet);
}

} // namespace cleave::onnx_import
