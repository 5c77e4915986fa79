//===- Broadcast.h - Walking operands broadcast to a shape ------*- C++ -*-===//
//
// Elementwise kernels, their gradients and the reductions all walk a full
// shape together with operands broadcast to it (a reduction's result is its
// input's shape with the reduced dimensions broadcast). The walk collapses
// dimensions that are contiguous in every operand, so the innermost loop is
// as long as possible and its strides are always 0 or 1: the kernels
// specialise on those two cases to get loops g++ vectorises.
//
// Internal to the kernel library.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_KERNELS_BROADCAST_H
#define CLEAVE_RUNTIME_KERNELS_BROADCAST_H

#include "Support.h"

#include <algorithm>
#include <array>

namespace cleave::kernels::detail {

/// `shape` with the dimensions of `operands` broadcast to it; operand k has
/// strides[k][d] elements between neighbours along collapsed dimension d
/// (0 where it is broadcast).
template <size_t N> struct BroadcastPlan {
  Shape dims;
  std::array<Shape, N> strides;

  int64_t inner() const { return dims.back(); }
  /// Whether operand k advances along the innermost dimension (stride 1) or
  /// repeats one element (stride 0).
  bool innerContiguous(size_t k) const { return strides[k].back() != 0; }
};

/// Plans a walk over `shape`. Each operand's rank is at most the shape's and
/// its dimensions must equal the shape's or be 1 (numpy broadcasting).
template <size_t N>
BroadcastPlan<N> planBroadcast(const Shape &shape,
                               const std::array<const Shape *, N> &operands,
                               const char *kernel) {
  size_t rank = shape.size();
  std::array<Shape, N> full;
  for (size_t k = 0; k < N; ++k) {
    const Shape &s = *operands[k];
    if (s.size() > rank)
      throwInvalid(std::string(kernel) + ": operand " + shapeString(s) +
                   " does not broadcast to " + shapeString(shape));
    Shape padded(rank - s.size(), 1);
    padded.insert(padded.end(), s.begin(), s.end());
    Shape strides = rowMajorStrides(padded);
    for (size_t d = 0; d < rank; ++d) {
      if (padded[d] == shape[d])
        continue;
      if (padded[d] != 1)
        throwInvalid(std::string(kernel) + ": operand " + shapeString(s) +
                     " does not broadcast to " + shapeString(shape));
      strides[d] = 0;
    }
    // Size-1 dimensions move nothing; zero them so that they never block
    // merging.
    for (size_t d = 0; d < rank; ++d)
      if (padded[d] == 1)
        strides[d] = 0;
    full[k] = std::move(strides);
  }

  // Merge from the innermost dimension outwards: dimension d joins the
  // collapsed dimension inside it when every operand steps over it exactly
  // as if the two were one.
  BroadcastPlan<N> plan;
  std::vector<int64_t> dimsRev;
  std::array<Shape, N> stridesRev;
  for (size_t d = rank; d-- > 0;) {
    if (shape[d] == 1)
      continue;
    bool merge = !dimsRev.empty();
    for (size_t k = 0; k < N && merge; ++k)
      merge = full[k][d] == stridesRev[k].back() * dimsRev.back();
    if (merge) {
      dimsRev.back() *= shape[d];
      continue;
    }
    dimsRev.push_back(shape[d]);
    for (size_t k = 0; k < N; ++k)
      stridesRev[k].push_back(full[k][d]);
  }
  if (dimsRev.empty()) {
    dimsRev.push_back(1);
    for (size_t k = 0; k < N; ++k)
      stridesRev[k].push_back(0);
  }
  plan.dims.assign(dimsRev.rbegin(), dimsRev.rend());
  for (size_t k = 0; k < N; ++k)
    plan.strides[k].assign(stridesRev[k].rbegin(), stridesRev[k].rend());
  return plan;
}

/// The elements the plan walks (rows x inner).
template <size_t N> int64_t numElements(const BroadcastPlan<N> &plan) {
  int64_t n = 1;
  for (int64_t d : plan.dims)
    n *= d;
  return n;
}

/// Calls `row(offsets, i0, i1)` for elements [e0, e1) of the plan in
/// row-major order, a call per row they touch: `offsets[k]` is operand k's
/// element offset at the row's start and [i0, i1) the part of the row.
/// A thread's share of a walk that parallelFor split by elements (a whole
/// tensor of one shape is a single row, split anywhere).
template <size_t N, typename RowFn>
void forEachRowSegment(const BroadcastPlan<N> &plan, int64_t e0, int64_t e1,
                       RowFn &&row) {
  int64_t inner = plan.inner();
  if (inner <= 0 || e0 >= e1)
    return;
  size_t outerRank = plan.dims.size() - 1;
  std::array<int64_t, N> offsets{};
  Shape index(outerRank, 0);
  int64_t rest = e0 / inner;
  for (size_t d = outerRank; d-- > 0;) {
    index[d] = rest % plan.dims[d];
    rest /= plan.dims[d];
    for (size_t k = 0; k < N; ++k)
      offsets[k] += index[d] * plan.strides[k][d];
  }
  int64_t i0 = e0 % inner;
  for (int64_t e = e0;;) {
    int64_t i1 = std::min(inner, i0 + (e1 - e));
    row(offsets, i0, i1);
    e += i1 - i0;
    i0 = 0;
    if (e >= e1)
      return;
    for (size_t d = outerRank; d-- > 0;) {
      ++index[d];
      for (size_t k = 0; k < N; ++k)
        offsets[k] += plan.strides[k][d];
      if (index[d] < plan.dims[d])
        break;
      for (size_t k = 0; k < N; ++k)
        offsets[k] -= plan.strides[k][d] * plan.dims[d];
      index[d] = 0;
    }
  }
}

/// Calls `row(offsets)` once per innermost row of the plan, `offsets[k]`
/// being operand k's element offset at the row's start. Nothing is called
/// when the shape has no elements.
template <size_t N, typename RowFn>
void forEachRow(const BroadcastPlan<N> &plan, RowFn &&row) {
  forEachRowSegment(plan, 0, numElements(plan),
                    [&](const std::array<int64_t, N> &offsets, int64_t,
                        int64_t) { row(offsets); });
}

} // namespace cleave::kernels::detail

#endif // CLEAVE_RUNTIME_KERNELS_BROADCAST_H
