//===- ElementwiseBinary.cpp - Broadcasting binary ops and where ----------===//

#include "cleave/runtime/kernels/Elementwise.h"

#include "Broadcast.h"
#include "VectorClones.h"

#include <cmath>
#include <type_traits>

namespace cleave::kernels {
namespace {

using detail::BroadcastPlan;
using detail::forEachRow;
using detail::planBroadcast;

template <bool B> using Bool = std::integral_constant<bool, B>;

/// Calls f(Bool<a>, Bool<b>) so that row loops are compiled once per
/// combination of inner strides (0 or 1) and vectorise.
template <typename F>
CLEAVE_CLONE_INLINE void withContiguity(bool a, bool b, F &&f) {
  if (a && b)
    f(Bool<true>(), Bool<true>());
  else if (a)
    f(Bool<true>(), Bool<false>());
  else if (b)
    f(Bool<false>(), Bool<true>());
  else
    f(Bool<false>(), Bool<false>());
}

template <typename F>
CLEAVE_CLONE_INLINE void binaryLoop(ConstTensorRef lhs, ConstTensorRef rhs,
                                    TensorRef out, F f) {
  BroadcastPlan<3> plan = planBroadcast<3>(
      out.shape, {&out.shape, &lhs.shape, &rhs.shape}, "binary");
  int64_t n = plan.inner();
  withContiguity(plan.innerContiguous(1), plan.innerContiguous(2),
                 [&](auto ac, auto bc) {
                   forEachRow(plan, [&](const std::array<int64_t, 3> &off) {
                     float *o = out.data + off[0];
                     const float *a = lhs.data + off[1];
                     const float *b = rhs.data + off[2];
                     for (int64_t i = 0; i < n; ++i)
                       o[i] = f(a[ac ? i : 0], b[bc ? i : 0]);
                   });
                 });
}

/// Accumulates f(a, b, g) into the gradient `d` of operand `target` (1 for
/// lhs, 2 for rhs). Where the target is broadcast the row is summed first.
/// When the target has the full shape every element is visited once, so
/// the gradient is assigned instead and needs no zeroing.
template <typename F>
CLEAVE_CLONE_INLINE void gradLoop(int target, ConstTensorRef lhs,
                                  ConstTensorRef rhs, ConstTensorRef dOut,
                                  TensorRef d, F f) {
  BroadcastPlan<3> plan = planBroadcast<3>(
      dOut.shape, {&dOut.shape, &lhs.shape, &rhs.shape}, "binaryBackward");
  int64_t n = plan.inner();
  bool assign = d.numElements() == dOut.numElements();
  if (!assign)
    detail::zero(d);
  bool targetContiguous = plan.innerContiguous(target);
  withContiguity(plan.innerContiguous(1), plan.innerContiguous(2),
                 [&](auto ac, auto bc) {
                   forEachRow(plan, [&](const std::array<int64_t, 3> &off) {
                     const float *g = dOut.data + off[0];
                     const float *a = lhs.data + off[1];
                     const float *b = rhs.data + off[2];
                     float *dd = d.data + off[target];
                     if (assign) {
                       for (int64_t i = 0; i < n; ++i)
                         dd[i] = f(a[ac ? i : 0], b[bc ? i : 0], g[i]);
                     } else if (targetContiguous) {
                       for (int64_t i = 0; i < n; ++i)
                         dd[i] += f(a[ac ? i : 0], b[bc ? i : 0], g[i]);
                     } else {
                       float sum = 0.0f;
                       for (int64_t i = 0; i < n; ++i)
                         sum += f(a[ac ? i : 0], b[bc ? i : 0], g[i]);
                       dd[0] += sum;
                     }
                   });
                 });
}

template <typename FA, typename FB>
CLEAVE_CLONE_INLINE void gradients(ConstTensorRef lhs, ConstTensorRef rhs,
                                   ConstTensorRef dOut, TensorRef dLhs,
                                   TensorRef dRhs, FA fa, FB fb) {
  if (dLhs)
    gradLoop(1, lhs, rhs, dOut, dLhs, fa);
  if (dRhs)
    gradLoop(2, lhs, rhs, dOut, dRhs, fb);
}

float tieShare(float self, float other, float g) {
  return self > other ? g : (self == other ? 0.5f * g : 0.0f);
}

} // namespace

CLEAVE_VECTOR_CLONES void binary(BinaryOp op, ConstTensorRef lhs,
                                 ConstTensorRef rhs, TensorRef out) {
  detail::checkShape(out, broadcastShape(lhs.shape, rhs.shape), "binary",
                     "result");
  switch (op) {
  case BinaryOp::Add:
    return binaryLoop(lhs, rhs, out, [](float a, float b) { return a + b; });
  case BinaryOp::Sub:
    return binaryLoop(lhs, rhs, out, [](float a, float b) { return a - b; });
  case BinaryOp::Mul:
    return binaryLoop(lhs, rhs, out, [](float a, float b) { return a * b; });
  case BinaryOp::Div:
    return binaryLoop(lhs, rhs, out, [](float a, float b) { return a / b; });
  case BinaryOp::Pow:
    return binaryLoop(lhs, rhs, out,
                      [](float a, float b) { return std::pow(a, b); });
  case BinaryOp::Max:
    return binaryLoop(lhs, rhs, out,
                      [](float a, float b) { return a > b ? a : b; });
  case BinaryOp::Min:
    return binaryLoop(lhs, rhs, out,
                      [](float a, float b) { return a < b ? a : b; });
  }
}

CLEAVE_VECTOR_CLONES void binaryBackward(BinaryOp op, ConstTensorRef lhs,
                                         ConstTensorRef rhs,
                                         ConstTensorRef dOut, TensorRef dLhs,
                                         TensorRef dRhs) {
  detail::checkShape(dOut, broadcastShape(lhs.shape, rhs.shape),
                     "binaryBackward", "dOut");
  detail::checkOptionalShape(dLhs, lhs.shape, "binaryBackward", "dLhs");
  detail::checkOptionalShape(dRhs, rhs.shape, "binaryBackward", "dRhs");
  switch (op) {
  case BinaryOp::Add:
    return gradients(
        lhs, rhs, dOut, dLhs, dRhs, [](float, float, float g) { return g; },
        [](float, float, float g) { return g; });
  case BinaryOp::Sub:
    return gradients(
        lhs, rhs, dOut, dLhs, dRhs, [](float, float, float g) { return g; },
        [](float, float, float g) { return -g; });
  case BinaryOp::Mul:
    return gradients(
        lhs, rhs, dOut, dLhs, dRhs,
        [](float, float b, float g) { return g * b; },
        [](float a, float, float g) { return g * a; });
  case BinaryOp::Div:
    return gradients(
        lhs, rhs, dOut, dLhs, dRhs,
        [](float, float b, float g) { return g / b; },
        [](float a, float b, float g) { return -g * a / (b * b); });
  case BinaryOp::Pow:
    return gradients(
        lhs, rhs, dOut, dLhs, dRhs,
        [](float a, float b, float g) {
          return b == 0.0f ? 0.0f : g * b * std::pow(a, b - 1.0f);
        },
        [](float a, float b, float g) {
          return a > 0.0f ? g * std::pow(a, b) * std::log(a) : 0.0f;
        });
  case BinaryOp::Max:
    return gradients(
        lhs, rhs, dOut, dLhs, dRhs,
        [](float a, float b, float g) { return tieShare(a, b, g); },
        [](float a, float b, float g) { return tieShare(b, a, g); });
  case BinaryOp::Min:
    return gradients(
        lhs, rhs, dOut, dLhs, dRhs,
        [](float a, float b, float g) { return tieShare(-a, -b, g); },
        [](float a, float b, float g) { return tieShare(-b, -a, g); });
  }
}

ComparePredicate comparePredicate(const std::string &name) {
  for (auto [text, p] : {std::pair{"eq", ComparePredicate::Eq},
                         std::pair{"ne", ComparePredicate::Ne},
                         std::pair{"lt", ComparePredicate::Lt},
                         std::pair{"le", ComparePredicate::Le},
                         std::pair{"gt", ComparePredicate::Gt},
                         std::pair{"ge", ComparePredicate::Ge}})
    if (name == text)
      return p;
  throwInvalid("compare: unknown predicate '" + name + "'");
}

void whereBackward(MaskRef condition, ConstTensorRef dOut, TensorRef dLhs,
                   TensorRef dRhs) {
  for (int side = 0; side < 2; ++side) {
    TensorRef d = side == 0 ? dLhs : dRhs;
    if (!d)
      continue;
    // planBroadcast checks that the condition and the operand broadcast to
    // dOut.
    detail::zero(d);
    BroadcastPlan<3> plan = planBroadcast<3>(
        dOut.shape, {&dOut.shape, &condition.shape, &d.shape}, "whereBackward");
    int64_t n = plan.inner();
    int64_t sc = plan.strides[1].back(), sd = plan.strides[2].back();
    uint8_t taken = side == 0 ? 1 : 0;
    forEachRow(plan, [&](const std::array<int64_t, 3> &off) {
      const float *g = dOut.data + off[0];
      const uint8_t *c = condition.data + off[1];
      float *dd = d.data + off[2];
      for (int64_t i = 0; i < n; ++i)
        if ((c[i * sc] != 0) == (taken != 0))
          dd[i * sd] += g[i];
    });
  }
}

} // namespace cleave::kernels
