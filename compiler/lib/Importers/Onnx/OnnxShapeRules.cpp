//===- OnnxShapeRules.cpp - Shape rules of ONNX operators -----------------===//

#include "OnnxShapeRules.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Twine.h"

#include <algorithm>
#include <limits>

using llvm::ArrayRef;
using llvm::Twine;

namespace cleave::onnx_import {

static llvm::Error error(const Twine &message) {
  return llvm::createStringError(message);
}

llvm::Expected<int64_t> normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return error("axis " + Twine(axis) + " is out of range for rank " +
                 Twine(rank));
  return axis < 0 ? axis + rank : axis;
}

llvm::Expected<Shape> normalizeAxes(ArrayRef<int64_t> axes, int64_t rank) {
  Shape out;
  for (int64_t axis : axes) {
    llvm::Expected<int64_t> a = normalizeAxis(axis, rank);
    if (!a)
      return a.takeError();
    if (llvm::is_contained(out, *a))
      return error("axis " + Twine(axis) + " is repeated");
    out.push_back(*a);
  }
  return out;
}

llvm::Expected<Shape> computeReshape(ArrayRef<int64_t> input,
                                     ArrayRef<int64_t> target, bool allowZero) {
  Shape out;
  int64_t inferred = -1;
  int64_t known = 1;
  for (size_t i = 0; i < target.size(); ++i) {
    int64_t d = target[i];
    if (d == -1) {
      if (inferred >= 0)
        return error("reshape target " + shapeToString(target) +
                     " has more than one -1");
      inferred = i;
      out.push_back(1);
      continue;
    }
    if (d < -1)
      return error("reshape target " + shapeToString(target) +
                   " has a negative dimension");
    if (d == 0 && !allowZero) {
      if (i >= input.size())
        return error("reshape target " + shapeToString(target) +
                     " copies dimension " + Twine(i) + " of a rank-" +
                     Twine(input.size()) + " input");
      d = input[i];
    }
    out.push_back(d);
    known *= d;
  }
  int64_t total = product(input);
  if (inferred >= 0) {
    if (known == 0 || total % known)
      return error("cannot infer the -1 of reshape target " +
                   shapeToString(target) + " for input " +
                   shapeToString(input));
    out[inferred] = total / known;
  } else if (known != total) {
    return error("cannot reshape " + shapeToString(input) + " (" +
                 Twine(total) + " elements) to " + shapeToString(out) + " (" +
                 Twine(known) + " elements)");
  }
  return out;
}

llvm::Expected<Shape> computeSqueeze(ArrayRef<int64_t> input,
                                     const Shape *axes) {
  int64_t rank = input.size();
  llvm::SmallVector<bool> drop(rank, false);
  if (axes) {
    llvm::Expected<Shape> normalized = normalizeAxes(*axes, rank);
    if (!normalized)
      return normalized.takeError();
    for (int64_t a : *normalized) {
      if (input[a] != 1)
        return error("cannot squeeze dimension " + Twine(a) + " of size " +
                     Twine(input[a]) + " in " + shapeToString(input));
      drop[a] = true;
    }
  } else {
    for (int64_t i = 0; i < rank; ++i)
      drop[i] = input[i] == 1;
  }
  Shape out;
  for (int64_t i = 0; i < rank; ++i)
    if (!drop[i])
      out.push_back(input[i]);
  return out;
}

llvm::Expected<Shape> computeUnsqueeze(ArrayRef<int64_t> input,
                                       ArrayRef<int64_t> axes) {
  int64_t rank = input.size() + axes.size();
  llvm::Expected<Shape> normalized = normalizeAxes(axes, rank);
  if (!normalized)
    return normalized.takeError();
  Shape out;
  size_t next = 0;
  for (int64_t i = 0; i < rank; ++i) {
    if (llvm::is_contained(*normalized, i))
      out.push_back(1);
    else
      out.push_back(input[next++]);
  }
  return out;
}

llvm::Expected<Shape> computeFlatten(ArrayRef<int64_t> input, int64_t axis) {
  int64_t rank = input.size();
  if (axis < -rank || axis > rank)
    return error("flatten axis " + Twine(axis) + " is out of range for rank " +
                 Twine(rank));
  if (axis < 0)
    axis += rank;
  return Shape{product(input.take_front(axis)),
               product(input.drop_front(axis))};
}

llvm::Expected<Shape> broadcast(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return error("shapes " + shapeToString(a) + " and " + shapeToString(b) +
                   " do not broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

llvm::Expected<SliceSpec> computeSlice(ArrayRef<int64_t> input,
                                       ArrayRef<int64_t> starts,
                                       ArrayRef<int64_t> ends,
                                       ArrayRef<int64_t> axes,
                                       ArrayRef<int64_t> steps) {
  int64_t rank = input.size();
  if (starts.size() != ends.size() ||
      (!axes.empty() && axes.size() != starts.size()) ||
      (!steps.empty() && steps.size() != starts.size()))
    return error("slice starts, ends, axes and steps differ in length");
  Shape defaultAxes;
  if (axes.empty()) {
    for (size_t i = 0; i < starts.size(); ++i)
      defaultAxes.push_back(i);
    axes = defaultAxes;
  }
  llvm::Expected<Shape> normalized = normalizeAxes(axes, rank);
  if (!normalized)
    return normalized.takeError();

  SliceSpec spec;
  spec.starts.assign(rank, 0);
  spec.steps.assign(rank, 1);
  spec.sizes.assign(input.begin(), input.end());
  for (size_t i = 0; i < normalized->size(); ++i) {
    int64_t axis = (*normalized)[i];
    int64_t dim = input[axis];
    int64_t step = steps.empty() ? 1 : steps[i];
    if (step == 0)
      return error("slice step must not be 0");
    // Exporters write INT64_MAX / INT64_MIN for "to the end"; adding a
    // dimension to a negative value cannot overflow.
    int64_t start = starts[i] < 0 ? starts[i] + dim : starts[i];
    int64_t end = ends[i] < 0 ? ends[i] + dim : ends[i];
    int64_t size;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      size = start < end ? (end - start + step - 1) / step : 0;
    } else if (dim == 0) {
      start = 0;
      size = 0;
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      size = start > end ? (start - end - step - 1) / -step : 0;
    }
    spec.starts[axis] = start;
    spec.steps[axis] = step;
    spec.sizes[axis] = size;
  }
  return spec;
}

} // namespace cleave::onnx_import
