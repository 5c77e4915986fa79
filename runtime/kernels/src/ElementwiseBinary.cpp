//===- ElementwiseBinary.cpp - Broadcasting binary ops and where ----------===//

#include "cleave/runtime/kernels/Elementwise.h"

#include "Broadcast.h"
#include "Parallel.h"
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

/// Elements [e0, e1) of the walk `plan` (out, lhs, rhs): a thread's share.
template <typename F>
CLEAVE_CLONE_INLINE void binaryLoop(const BroadcastPlan<3> &plan, int64_t e0,
                                    int64_t e1, const float *lhs,
                                    const float *rhs, float *out, F f) {
  withContiguity(plan.innerContiguous(1), plan.innerContiguous(2),
                 [&](auto ac, auto bc) {
                   forEachRowSegment(
                       plan, e0, e1,
                       [&](const std::array<int64_t, 3> &off, int64_t i0,
                           int64_t i1) {
                         float *o = out + off[0];
                         const float *a = lhs + off[1];
                         const float *b = rhs + off[2];
                         for (int64_t i = i0; i < i1; ++i)
                           o[i] = f(a[ac ? i : 0], b[bc ? i : 0]);
                       });
                 });
}

/// One operand's gradient over elements [e0, e1) of the walk: `target` 1
/// for lhs, 2 for rhs. `assign`: the target has the full shape, so every
/// element is visited once and the gradient is assigned (threads may take
/// any elements); otherwise the target is broadcast, zeroed before, and
/// its rows add into the same elements (the whole walk on one thread).
struct GradTask {
  const BroadcastPlan<3> *plan;
  int64_t e0, e1;
  int target;
  bool assign;
  const float *lhs, *rhs, *dOut;
  float *d;
};

/// Accumulates f(a, b, g) into the gradient of the task's target. Where
/// the target is broadcast along the row the row is summed first.
template <typename F>
CLEAVE_CLONE_INLINE void gradLoop(const GradTask &t, F f) {
  const BroadcastPlan<3> &plan = *t.plan;
  bool targetContiguous = plan.innerContiguous(t.target);
  withContiguity(
      plan.innerContiguous(1), plan.innerContiguous(2), [&](auto ac, auto bc) {
        forEachRowSegment(
            plan, t.e0, t.e1,
            [&](const std::array<int64_t, 3> &off, int64_t i0, int64_t i1) {
              const float *g = t.dOut + off[0];
              const float *a = t.lhs + off[1];
              const float *b = t.rhs + off[2];
              float *dd = t.d + off[t.target];
              if (t.assign) {
                for (int64_t i = i0; i < i1; ++i)
                  dd[i] = f(a[ac ? i : 0], b[bc ? i : 0], g[i]);
              } else if (targetContiguous) {
                for (int64_t i = i0; i < i1; ++i)
                  dd[i] += f(a[ac ? i : 0], b[bc ? i : 0], g[i]);
              } else {
                float sum = 0.0f;
                for (int64_t i = i0; i < i1; ++i)
                  sum += f(a[ac ? i : 0], b[bc ? i : 0], g[i]);
                dd[0] += sum;
              }
            });
      });
}

template <typename FA, typename FB>
CLEAVE_CLONE_INLINE void gradients(const GradTask &t, FA fa, FB fb) {
  if (t.target == 1)
    gradLoop(t, fa);
  else
    gradLoop(t, fb);
}

float tieShare(float self, float other, float g) {
  return self > other ? g : (self == other ? 0.5f * g : 0.0f);
}


/// Elements [e0, e1) of binary()'s walk: a thread's share.
CLEAVE_VECTOR_CLONES void binaryElements(BinaryOp op,
                                         const BroadcastPlan<3> &plan,
                                         int64_t e0, int64_t e1,
                                         const float *lhs, const float *rhs,
                                         float *out) {
  auto loop = [&](auto f) { binaryLoop(plan, e0, e1, lhs, rhs, out, f); };
  switch (op) {
  case BinaryOp::Add:
    return loop([](float a, float b) { return a + b; });
  case BinaryOp::Sub:
    return loop([](float a, float b) { return a - b; });
  case BinaryOp::Mul:
    return loop([](float a, float b) { return a * b; });
  case BinaryOp::Div:
    return loop([](float a, float b) { return a / b; });
  case BinaryOp::Pow:
    return loop([](float a, float b) { return std::pow(a, b); });
  case BinaryOp::Max:
    return loop([](float a, float b) { return a > b ? a : b; });
  case BinaryOp::Min:
    return loop([](float a, float b) { return a < b ? a : b; });
  }
}

/// One operand's gradient over a share of binaryBackward()'s walk.
CLEAVE_VECTOR_CLONES void binaryGradElements(BinaryOp op, const GradTask &t) {
  switch (op) {
  case BinaryOp::Add:
    return gradients(
        t, [](float, float, float g) { return g; },
        [](float, float, float g) { return g; });
  case BinaryOp::Sub:
    return gradients(
        t, [](float, float, float g) { return g; },
        [](float, float, float g) { return -g; });
  case BinaryOp::Mul:
    return gradients(
        t,
        [](float, float b, float g) { return g * b; },
        [](float a, float, float g) { return g * a; });
  case BinaryOp::Div:
    return gradients(
        t,
        [](float, float b, float g) { return g / b; },
        [](float a, float b, float g) { return -g * a / (b * b); });
  case BinaryOp::Pow:
    return gradients(
        t,
        [](float a, float b, float g) {
          return b == 0.0f ? 0.0f : g * b * std::pow(a, b - 1.0f);
        },
        [](float a, float b, float g) {
          return a > 0.0f ? g * std::pow(a, b) * std::log(a) : 0.0f;
        });
  case BinaryOp::Max:
    return gradients(
        t,
        [](float a, float b, float g) { return tieShare(a, b, g); },
        [](float a, float b, float g) { return tieShare(b, a, g); });
  case BinaryOp::Min:
    return gradients(
        t,
        [](float a, float b, float g) { return tieShare(-a, -b, g); },
        [](float a, float b, float g) { return tieShare(-b, -a, g); });
  }
}

} // namespace

// Element-wise: any split over the threads gives the same bits.
void binary(BinaryOp op, ConstTensorRef lhs, ConstTensorRef rhs,
            TensorRef out) {
  detail::checkShape(out, broadcastShape(lhs.shape, rhs.shape), "binary",
                     "result");
  BroadcastPlan<3> plan = planBroadcast<3>(
      out.shape, {&out.shape, &lhs.shape, &rhs.shape}, "binary");
  int64_t n = detail::numElements(plan);
  detail::parallelFor(n, n, [&](int64_t e0, int64_t e1) {
    binaryElements(op, plan, e0, e1, lhs.data, rhs.data, out.data);
  });
}

void binaryBackward(BinaryOp op, ConstTensorRef lhs, ConstTensorRef rhs,
                    ConstTensorRef dOut, TensorRef dLhs, TensorRef dRhs) {
  detail::checkShape(dOut, broadcastShape(lhs.shape, rhs.shape),
                     "binaryBackward", "dOut");
  detail::checkOptionalShape(dLhs, lhs.shape, "binaryBackward", "dLhs");
  detail::checkOptionalShape(dRhs, rhs.shape, "binaryBackward", "dRhs");
  BroadcastPlan<3> plan = planBroadcast<3>(
      dOut.shape, {&dOut.shape, &lhs.shape, &rhs.shape}, "binaryBackward");
  int64_t n = detail::numElements(plan);
  for (int target = 1; target <= 2; ++target) {
    TensorRef d = target == 1 ? dLhs : dRhs;
    if (!d)
      continue;
    GradTask task{&plan,    0,        n,         target,
                  d.numElements() == dOut.numElements(),
                  lhs.data, rhs.data, dOut.data, d.data};
    if (!task.assign) {
      detail::zero(d);
      binaryGradElements(op, task);
      continue;
    }
    detail::parallelFor(n, n, [&](int64_t e0, int64_t e1) {
      GradTask share = task;
      share.e0 = e0;
      share.e1 = e1;
      binaryGradElements(op, share);
    });
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
