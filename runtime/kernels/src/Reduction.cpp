//===- Reduction.cpp - reduce_sum, reduce_mean, reduce_max ----------------===//
//
// A reduction walks its input with the result broadcast to it (the reduced
// axes kept as size 1), so it shares the elementwise kernels' walk.
//
//===----------------------------------------------------------------------===//

#include "cleave/runtime/kernels/Reduction.h"

#include "Broadcast.h"

#include <limits>

namespace cleave::kernels {
namespace {

using detail::BroadcastPlan;
using detail::forEachRow;
using detail::planBroadcast;

/// Validates the axes and returns the result shape with kept dimensions.
Shape keptShape(const Shape &in, const std::vector<int64_t> &axes,
                const char *kernel) {
  Shape kept = in;
  std::vector<bool> seen(in.size(), false);
  for (int64_t axis : axes) {
    detail::checkAxis(axis, static_cast<int64_t>(in.size()), kernel);
    CLEAVE_CHECK_IN(kernel, !seen[axis],
                    "axis " + std::to_string(axis) + " is repeated");
    seen[axis] = true;
    kept[axis] = 1;
  }
  return kept;
}

} // namespace

Shape reduceShape(const Shape &in, const std::vector<int64_t> &axes,
                  bool keepdims) {
  Shape kept = keptShape(in, axes, "reduceShape");
  if (keepdims)
    return kept;
  Shape out;
  std::vector<bool> reduced(in.size(), false);
  for (int64_t axis : axes)
    reduced[axis] = true;
  for (size_t d = 0; d < in.size(); ++d)
    if (!reduced[d])
      out.push_back(in[d]);
  return out;
}

void reduce(ReduceOp op, ConstTensorRef in, const std::vector<int64_t> &axes,
            bool keepdims, TensorRef out) {
  Shape kept = keptShape(in.shape, axes, "reduce");
  detail::checkShape(out, reduceShape(in.shape, axes, keepdims), "reduce",
                     "result");
  int64_t outN = out.numElements();
  float init =
      op == ReduceOp::Max ? -std::numeric_limits<float>::infinity() : 0.0f;
  std::fill(out.data, out.data + outN, init);
  BroadcastPlan<2> plan =
      planBroadcast<2>(in.shape, {&in.shape, &kept}, "reduce");
  int64_t n = plan.inner();
  bool outContiguous = plan.innerContiguous(1);
  forEachRow(plan, [&](const std::array<int64_t, 2> &off) {
    const float *x = in.data + off[0];
    float *o = out.data + off[1];
    if (op == ReduceOp::Max) {
      if (outContiguous) {
        for (int64_t i = 0; i < n; ++i)
          o[i] = x[i] > o[i] ? x[i] : o[i];
      } else {
        float m = o[0];
        for (int64_t i = 0; i < n; ++i)
          m = x[i] > m ? x[i] : m;
        o[0] = m;
      }
    } else if (outContiguous) {
      for (int64_t i = 0; i < n; ++i)
        o[i] += x[i];
    } else {
      float sum = 0.0f;
      for (int64_t i = 0; i < n; ++i)
        sum += x[i];
      o[0] += sum;
    }
  });
  if (op == ReduceOp::Mean) {
    int64_t count = outN ? in.numElements() / outN : 0;
    float inv = 1.0f / static_cast<float>(count);
    for (int64_t i = 0; i < outN; ++i)
      out.data[i] =
          count ? out.data[i] * inv : std::numeric_limits<float>::quiet_NaN();
  }
}

void reduceBackward(ReduceOp op, ConstTensorRef in,
                    const std::vector<int64_t> &axes, bool keepdims,
                    ConstTensorRef dOut, TensorRef dIn) {
  Shape kept = keptShape(in.shape, axes, "reduceBackward");
  detail::checkShape(dOut, reduceShape(in.shape, axes, keepdims),
                     "reduceBackward", "dOut");
  detail::checkShape(dIn, in.shape, "reduceBackward", "dIn");
  int64_t outN = dOut.numElements();
  BroadcastPlan<2> plan =
      planBroadcast<2>(in.shape, {&in.shape, &kept}, "reduceBackward");
  int64_t n = plan.inner();
  int64_t so = plan.strides[1].back();

  if (op != ReduceOp::Max) {
    float factor = 1.0f;
    if (op == ReduceOp::Mean && outN && in.numElements())
      factor = static_cast<float>(outN) / static_cast<float>(in.numElements());
    forEachRow(plan, [&](const std::array<int64_t, 2> &off) {
      const float *g = dOut.data + off[1];
      float *d = dIn.data + off[0];
      if (so)
        for (int64_t i = 0; i < n; ++i)
          d[i] = g[i] * factor;
      else
        for (int64_t i = 0; i < n; ++i)
          d[i] = g[0] * factor;
    });
    return;
  }

  // Recompute the maxima, then hand each group's gradient to the first
  // element equal to its maximum in row-major order.
  std::vector<float> maxima(outN);
  reduce(ReduceOp::Max, in, axes, keepdims, {maxima.data(), dOut.shape});
  std::vector<uint8_t> taken(outN, 0);
  forEachRow(plan, [&](const std::array<int64_t, 2> &off) {
    const float *x = in.data + off[0];
    float *d = dIn.data + off[0];
    for (int64_t i = 0; i < n; ++i) {
      int64_t o = off[1] + i * so;
      bool first = !taken[o] && x[i] == maxima[o];
      d[i] = first ? dOut.data[o] : 0.0f;
      taken[o] |= first;
    }
  });
}

} // namespace cleave::kernels
