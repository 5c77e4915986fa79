//===- IntegerElementwise.cpp - Integer arithmetic, compare and where -----===//

#include "cleave/runtime/kernels/IntegerElementwise.h"

#include "Broadcast.h"

#include <algorithm>
#include <limits>
#include <type_traits>

namespace cleave::kernels {
namespace {

using detail::BroadcastPlan;
using detail::forEachRow;
using detail::planBroadcast;

/// a op b with the type's wrap-around: signed overflow is computed in the
/// unsigned type of the same width (defined, modular) and converted back.
template <typename T> T wrapping(IntegerOp op, T a, T b) {
  using U = std::make_unsigned_t<T>;
  switch (op) {
  case IntegerOp::Add:
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  case IntegerOp::Sub:
    return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
  case IntegerOp::Mul:
    // uint16 * uint16 promotes to int and could overflow it; widen first.
    return static_cast<T>(static_cast<uint64_t>(static_cast<U>(a)) *
                          static_cast<uint64_t>(static_cast<U>(b)));
  default:
    break;
  }
  return T();
}

template <typename T> T divide(IntegerOp op, T a, T b) {
  if (b == 0)
    throwInvalid(op == IntegerOp::Div ? "integer division by zero"
                                      : "integer modulo by zero");
  if constexpr (std::is_signed_v<T>) {
    // The one signed quotient that overflows: the minimum over -1 wraps
    // to itself (numpy's result), and its remainder is 0.
    if (b == -1 && a == std::numeric_limits<T>::min())
      return op == IntegerOp::Div ? a : T(0);
  }
  if (op == IntegerOp::Div)
    return static_cast<T>(a / b);
  T r = static_cast<T>(a % b);
  if constexpr (std::is_signed_v<T>)
    if (op == IntegerOp::Mod && r != 0 && ((r < 0) != (b < 0)))
      r = static_cast<T>(r + b);
  return r;
}

template <typename T> T shifted(IntegerOp op, T a, T b) {
  using U = std::make_unsigned_t<T>;
  constexpr int bits = 8 * sizeof(T);
  if (b < 0 || static_cast<uint64_t>(b) >= bits)
    return T(0);
  int n = static_cast<int>(b);
  if (op == IntegerOp::ShiftLeft)
    return static_cast<T>(static_cast<U>(a) << n);
  return static_cast<T>(a >> n);
}

template <typename T> T apply(IntegerOp op, T a, T b) {
  switch (op) {
  case IntegerOp::Add:
  case IntegerOp::Sub:
  case IntegerOp::Mul:
    return wrapping(op, a, b);
  case IntegerOp::Div:
  case IntegerOp::Mod:
  case IntegerOp::FMod:
    return divide(op, a, b);
  case IntegerOp::Max:
    return std::max(a, b);
  case IntegerOp::Min:
    return std::min(a, b);
  case IntegerOp::ShiftLeft:
  case IntegerOp::ShiftRight:
    return shifted(op, a, b);
  }
  return T();
}

template <typename T> bool holds(ComparePredicate predicate, T a, T b) {
  switch (predicate) {
  case ComparePredicate::Eq:
    return a == b;
  case ComparePredicate::Ne:
    return a != b;
  case ComparePredicate::Lt:
    return a < b;
  case ComparePredicate::Le:
    return a <= b;
  case ComparePredicate::Gt:
    return a > b;
  case ComparePredicate::Ge:
    return a >= b;
  }
  return false;
}

} // namespace

std::optional<IntegerOp> integerOpOf(BinaryOp op) {
  switch (op) {
  case BinaryOp::Add:
    return IntegerOp::Add;
  case BinaryOp::Sub:
    return IntegerOp::Sub;
  case BinaryOp::Mul:
    return IntegerOp::Mul;
  case BinaryOp::Div:
    return IntegerOp::Div;
  case BinaryOp::Max:
    return IntegerOp::Max;
  case BinaryOp::Min:
    return IntegerOp::Min;
  default:
    return std::nullopt;
  }
}

template <typename T>
void integerBinary(IntegerOp op, View<const T> lhs, View<const T> rhs,
                   View<T> out) {
  detail::checkShape(out, broadcastShape(lhs.shape, rhs.shape),
                     "integerBinary", "result");
  BroadcastPlan<3> plan = planBroadcast<3>(
      out.shape, {&out.shape, &lhs.shape, &rhs.shape}, "integerBinary");
  int64_t n = plan.inner();
  int64_t sa = plan.strides[1].back(), sb = plan.strides[2].back();
  forEachRow(plan, [&](const std::array<int64_t, 3> &off) {
    T *o = out.data + off[0];
    const T *a = lhs.data + off[1];
    const T *b = rhs.data + off[2];
    for (int64_t i = 0; i < n; ++i)
      o[i] = apply(op, a[i * sa], b[i * sb]);
  });
}

template <typename T>
void compareValues(ComparePredicate predicate, View<const T> lhs,
                   View<const T> rhs, View<uint8_t> out) {
  detail::checkShape(out, broadcastShape(lhs.shape, rhs.shape), "compare",
                     "result");
  BroadcastPlan<3> plan = planBroadcast<3>(
      out.shape, {&out.shape, &lhs.shape, &rhs.shape}, "compare");
  int64_t n = plan.inner();
  int64_t sa = plan.strides[1].back(), sb = plan.strides[2].back();
  forEachRow(plan, [&](const std::array<int64_t, 3> &off) {
    uint8_t *o = out.data + off[0];
    const T *a = lhs.data + off[1];
    const T *b = rhs.data + off[2];
    for (int64_t i = 0; i < n; ++i)
      o[i] = holds(predicate, a[i * sa], b[i * sb]) ? 1 : 0;
  });
}

template <typename T>
void whereValues(MaskRef condition, View<const T> lhs, View<const T> rhs,
                 View<T> out) {
  detail::checkShape(
      out,
      broadcastShape(condition.shape, broadcastShape(lhs.shape, rhs.shape)),
      "where", "result");
  BroadcastPlan<4> plan = planBroadcast<4>(
      out.shape, {&out.shape, &condition.shape, &lhs.shape, &rhs.shape},
      "where");
  int64_t n = plan.inner();
  int64_t sc = plan.strides[1].back(), sa = plan.strides[2].back(),
          sb = plan.strides[3].back();
  forEachRow(plan, [&](const std::array<int64_t, 4> &off) {
    T *o = out.data + off[0];
    const uint8_t *c = condition.data + off[1];
    const T *a = lhs.data + off[2];
    const T *b = rhs.data + off[3];
    for (int64_t i = 0; i < n; ++i)
      o[i] = c[i * sc] ? a[i * sa] : b[i * sb];
  });
}

#define CLEAVE_INTEGER_KERNELS(T)                                              \
  template void integerBinary<T>(IntegerOp, View<const T>, View<const T>,      \
                                 View<T>);                                     \
  template void compareValues<T>(ComparePredicate, View<const T>,              \
                                 View<const T>, View<uint8_t>);                \
  template void whereValues<T>(MaskRef, View<const T>, View<const T>, View<T>);
CLEAVE_INTEGER_KERNELS(int8_t)
CLEAVE_INTEGER_KERNELS(int16_t)
CLEAVE_INTEGER_KERNELS(int32_t)
CLEAVE_INTEGER_KERNELS(int64_t)
CLEAVE_INTEGER_KERNELS(uint8_t)
CLEAVE_INTEGER_KERNELS(uint16_t)
CLEAVE_INTEGER_KERNELS(uint32_t)
CLEAVE_INTEGER_KERNELS(uint64_t)
#undef CLEAVE_INTEGER_KERNELS

template void compareValues<float>(ComparePredicate, View<const float>,
                                   View<const float>, View<uint8_t>);
template void whereValues<float>(MaskRef, View<const float>,
                                 View<const float>, View<float>);

void compare(ComparePredicate predicate, ConstTensorRef lhs,
             ConstTensorRef rhs, View<uint8_t> out) {
  compareValues<float>(predicate, lhs, rhs, out);
}

void where(MaskRef condition, ConstTensorRef lhs, ConstTensorRef rhs,
           TensorRef out) {
  whereValues<float>(condition, lhs, rhs, out);
}

} // namespace cleave::kernels
