//===- DataMovement.cpp - gather, transpose, slice, concat, split ---------===//

#include "cleave/runtime/kernels/DataMovement.h"

#include "Parallel.h"
#include "Support.h"

#include <algorithm>

namespace cleave::kernels {
namespace {

/// Copies the box `dims` from `src` (strides srcStrides) to `dst` (strides
/// dstStrides), merging dimensions that are contiguous in both so that the
/// innermost loop is long; unit-stride rows are copied with memcpy.
template <typename T>
void copyStrided(Shape dims, Shape srcStrides, Shape dstStrides, const T *src,
                 T *dst) {
  // Drop size-1 dimensions and merge neighbours.
  Shape sizes, ss, ds;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] == 1)
      continue;
    if (dims[d] == 0)
      return;
    if (!sizes.empty() && ss.back() == srcStrides[d] * dims[d] &&
        ds.back() == dstStrides[d] * dims[d]) {
      sizes.back() *= dims[d];
      ss.back() = srcStrides[d];
      ds.back() = dstStrides[d];
      continue;
    }
    sizes.push_back(dims[d]);
    ss.push_back(srcStrides[d]);
    ds.push_back(dstStrides[d]);
  }
  if (sizes.empty()) {
    *dst = *src;
    return;
  }
  size_t outer = sizes.size() - 1;
  int64_t n = sizes.back(), sIn = ss.back(), dIn = ds.back();
  auto copyRow = [&](const T *s, T *t, int64_t i0, int64_t i1) {
    if (sIn == 1 && dIn == 1)
      std::memcpy(t + i0, s + i0, sizeof(T) * (i1 - i0));
    else
      for (int64_t i = i0; i < i1; ++i)
        t[i * dIn] = s[i * sIn];
  };
  // One long row (a contiguous or simply strided copy): split along it.
  if (outer == 0) {
    detail::parallelFor(n, n, [&](int64_t i0, int64_t i1) {
      copyRow(src, dst, i0, i1);
    });
    return;
  }
  // Rows [r0, r1) of the outer dimensions, a thread's share.
  int64_t rows = 1;
  for (size_t d = 0; d < outer; ++d)
    rows *= sizes[d];
  detail::parallelFor(rows, rows * n, [&](int64_t r0, int64_t r1) {
    Shape index(outer, 0);
    int64_t so = 0, dOff = 0, rest = r0;
    for (size_t d = outer; d-- > 0;) {
      index[d] = rest % sizes[d];
      rest /= sizes[d];
      so += index[d] * ss[d];
      dOff += index[d] * ds[d];
    }
    for (int64_t r = r0; r < r1; ++r) {
      copyRow(src + so, dst + dOff, 0, n);
      for (size_t d = outer; d-- > 0;) {
        so += ss[d];
        dOff += ds[d];
        if (++index[d] < sizes[d])
          break;
        so -= ss[d] * sizes[d];
        dOff -= ds[d] * sizes[d];
        index[d] = 0;
      }
    }
  });
}

struct SliceBox {
  Shape dims, strides;
  int64_t offset = 0;
};

/// The sliced elements of a tensor of `shape` as a strided box.
SliceBox sliceBox(const Shape &shape, const std::vector<int64_t> &starts,
                  const std::vector<int64_t> &limits,
                  const std::vector<int64_t> &strides) {
  Shape rowMajor = rowMajorStrides(shape);
  SliceBox box;
  box.dims = sliceShape(shape, starts, limits, strides);
  for (size_t d = 0; d < shape.size(); ++d) {
    box.offset += starts[d] * rowMajor[d];
    box.strides.push_back(rowMajor[d] * strides[d]);
  }
  return box;
}

void checkPermutation(const Shape &in, const std::vector<int64_t> &perm,
                      const char *kernel) {
  CLEAVE_CHECK_IN(kernel, perm.size() == in.size(),
                  "permutation has " + std::to_string(perm.size()) +
                      " entries for rank " + std::to_string(in.size()));
  std::vector<bool> seen(perm.size(), false);
  for (int64_t p : perm) {
    CLEAVE_CHECK_IN(kernel,
                    p >= 0 && p < static_cast<int64_t>(perm.size()) && !seen[p],
                    "invalid permutation " + shapeString(perm));
    seen[p] = true;
  }
}

/// [outer, axis, inner] sizes around `axis` of `shape`.
void splitAround(const Shape &shape, int64_t axis, int64_t &outer,
                 int64_t &inner) {
  outer = detail::product(shape, 0, axis);
  inner = detail::product(shape, axis + 1, shape.size());
}

/// Resolves negative indices and checks bounds once, before any copying.
std::vector<int64_t> resolveIndices(IndexRef indices, int64_t size,
                                    const char *kernel) {
  std::vector<int64_t> resolved(indices.numElements());
  for (size_t i = 0; i < resolved.size(); ++i) {
    int64_t index = indices.data[i];
    CLEAVE_CHECK_IN(kernel, index >= -size && index < size,
                    "index " + std::to_string(index) +
                        " is out of range for size " + std::to_string(size));
    resolved[i] = index < 0 ? index + size : index;
  }
  return resolved;
}

} // namespace

Shape gatherShape(const Shape &data, const Shape &indices, int64_t axis) {
  detail::checkAxis(axis, static_cast<int64_t>(data.size()), "gather");
  Shape out(data.begin(), data.begin() + axis);
  out.insert(out.end(), indices.begin(), indices.end());
  out.insert(out.end(), data.begin() + axis + 1, data.end());
  return out;
}

template <typename T>
void gatherValues(View<const T> data, IndexRef indices, int64_t axis,
                  View<T> out) {
  detail::checkShape(out, gatherShape(data.shape, indices.shape, axis),
                     "gather", "result");
  int64_t outer, inner, size = data.shape[axis];
  splitAround(data.shape, axis, outer, inner);
  std::vector<int64_t> rows = resolveIndices(indices, size, "gather");
  int64_t count = static_cast<int64_t>(rows.size());
  // Each output row is one copy: threads take rows.
  detail::parallelFor(
      outer * count, outer * count * inner, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          int64_t o = r / count, j = r % count;
          std::memcpy(out.data + r * inner,
                      data.data + (o * size + rows[j]) * inner,
                      sizeof(T) * inner);
        }
      });
}

void gatherBackward(IndexRef indices, int64_t axis, ConstTensorRef dOut,
                    TensorRef dData) {
  detail::checkShape(dOut, gatherShape(dData.shape, indices.shape, axis),
                     "gatherBackward", "dOut");
  int64_t outer, inner, size = dData.shape[axis];
  splitAround(dData.shape, axis, outer, inner);
  std::vector<int64_t> rows = resolveIndices(indices, size, "gatherBackward");
  int64_t count = static_cast<int64_t>(rows.size());
  detail::zero(dData);
  // Rows read twice add into one row: threads take columns, each column's
  // sums in row order whatever the threads, so the bits never change.
  detail::parallelFor(
      inner, outer * count * inner, [&](int64_t i0, int64_t i1) {
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t j = 0; j < count; ++j) {
            const float *g = dOut.data + (o * count + j) * inner;
            float *d = dData.data + (o * size + rows[j]) * inner;
            for (int64_t i = i0; i < i1; ++i)
              d[i] += g[i];
          }
      });
}

Shape transposeShape(const Shape &in, const std::vector<int64_t> &perm) {
  checkPermutation(in, perm, "transpose");
  Shape out;
  for (int64_t p : perm)
    out.push_back(in[p]);
  return out;
}

template <typename T>
void transposeValues(View<const T> in, const std::vector<int64_t> &perm,
                     View<T> out) {
  detail::checkShape(out, transposeShape(in.shape, perm), "transpose",
                     "result");
  Shape inStrides = rowMajorStrides(in.shape), src;
  for (int64_t p : perm)
    src.push_back(inStrides[p]);
  copyStrided(out.shape, src, rowMajorStrides(out.shape), in.data, out.data);
}

void transposeBackward(ConstTensorRef dOut, const std::vector<int64_t> &perm,
                       TensorRef dIn) {
  checkPermutation(dIn.shape, perm, "transposeBackward");
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    inverse[perm[i]] = static_cast<int64_t>(i);
  transpose(dOut, inverse, dIn);
}

Shape sliceShape(const Shape &in, const std::vector<int64_t> &starts,
                 const std::vector<int64_t> &limits,
                 const std::vector<int64_t> &strides) {
  size_t rank = in.size();
  CLEAVE_CHECK_IN("slice",
                  starts.size() == rank && limits.size() == rank &&
                      strides.size() == rank,
                  "needs one start, limit and stride per dimension (rank " +
                      std::to_string(rank) + ")");
  Shape out;
  for (size_t d = 0; d < rank; ++d) {
    CLEAVE_CHECK_IN("slice", strides[d] > 0, "strides must be positive");
    CLEAVE_CHECK_IN(
        "slice", starts[d] >= 0 && starts[d] <= limits[d] && limits[d] <= in[d],
        "[" + std::to_string(starts[d]) + ", " + std::to_string(limits[d]) +
            ") is out of bounds for dimension " + std::to_string(d) +
            " of size " + std::to_string(in[d]));
    out.push_back((limits[d] - starts[d] + strides[d] - 1) / strides[d]);
  }
  return out;
}

template <typename T>
void sliceValues(View<const T> in, const std::vector<int64_t> &starts,
                 const std::vector<int64_t> &limits,
                 const std::vector<int64_t> &strides, View<T> out) {
  SliceBox box = sliceBox(in.shape, starts, limits, strides);
  detail::checkShape(out, box.dims, "slice", "result");
  copyStrided(box.dims, box.strides, rowMajorStrides(box.dims),
              in.data + box.offset, out.data);
}

void sliceBackward(ConstTensorRef dOut, const std::vector<int64_t> &starts,
                   const std::vector<int64_t> &limits,
                   const std::vector<int64_t> &strides, TensorRef dIn) {
  SliceBox box = sliceBox(dIn.shape, starts, limits, strides);
  detail::checkShape(dOut, box.dims, "sliceBackward", "dOut");
  detail::zero(dIn);
  copyStrided(box.dims, rowMajorStrides(box.dims), box.strides, dOut.data,
              dIn.data + box.offset);
}

void sliceBackward(ConstTensorRef dOut, const std::vector<int64_t> &starts,
                   const std::vector<int64_t> &strides, TensorRef dIn) {
  CLEAVE_CHECK(starts.size() == dOut.shape.size() &&
                   strides.size() == dOut.shape.size(),
               "needs one start and stride per dimension of dOut " +
                   shapeString(dOut.shape));
  // The tightest limits that give dOut's shape.
  std::vector<int64_t> limits(starts.size());
  for (size_t d = 0; d < starts.size(); ++d)
    limits[d] = dOut.shape[d] == 0
                    ? starts[d]
                    : starts[d] + (dOut.shape[d] - 1) * strides[d] + 1;
  sliceBackward(dOut, starts, limits, strides, dIn);
}

Shape concatShape(const std::vector<Shape> &inputs, int64_t axis) {
  CLEAVE_CHECK_IN("concat", !inputs.empty(), "needs at least one input");
  const Shape &first = inputs.front();
  detail::checkAxis(axis, static_cast<int64_t>(first.size()), "concat");
  Shape out = first;
  for (size_t k = 1; k < inputs.size(); ++k) {
    const Shape &s = inputs[k];
    bool same = s.size() == first.size();
    for (size_t d = 0; same && d < s.size(); ++d)
      same = static_cast<int64_t>(d) == axis || s[d] == first[d];
    CLEAVE_CHECK_IN("concat", same,
                    "inputs " + shapeString(first) + " and " + shapeString(s) +
                        " differ outside axis " + std::to_string(axis));
    out[axis] += s[axis];
  }
  return out;
}

template <typename T>
void concatValues(const std::vector<View<const T>> &inputs, int64_t axis,
                  View<T> out) {
  std::vector<Shape> shapes;
  for (const View<const T> &in : inputs)
    shapes.push_back(in.shape);
  detail::checkShape(out, concatShape(shapes, axis), "concat", "result");
  int64_t outer, inner;
  splitAround(out.shape, axis, outer, inner);
  int64_t rowOut = out.shape[axis] * inner;
  int64_t at = 0;
  for (const View<const T> &in : inputs) {
    int64_t row = in.shape[axis] * inner;
    for (int64_t o = 0; o < outer; ++o) {
      T *dst = out.data + o * rowOut + at;
      if (in.data)
        std::memcpy(dst, in.data + o * row, sizeof(T) * row);
      else
        std::fill(dst, dst + row, T(0));
    }
    at += row;
  }
}

template <typename T>
void splitValues(View<const T> in, int64_t axis,
                 const std::vector<View<T>> &outs) {
  std::vector<Shape> shapes;
  for (const View<T> &o : outs)
    shapes.push_back(o.shape);
  CLEAVE_CHECK(concatShape(shapes, axis) == in.shape,
               "the results do not add up to the input " +
                   shapeString(in.shape) + " along axis " +
                   std::to_string(axis));
  int64_t outer, inner;
  splitAround(in.shape, axis, outer, inner);
  int64_t rowIn = in.shape[axis] * inner;
  int64_t at = 0;
  for (const View<T> &out : outs) {
    int64_t row = out.shape[axis] * inner;
    if (out.data)
      for (int64_t o = 0; o < outer; ++o)
        std::memcpy(out.data + o * row, in.data + o * rowIn + at,
                    sizeof(T) * row);
    at += row;
  }
}

// Data movement moves elements of any type alike: float, and the integer
// and bool tensors of imported models (by their width).
#define CLEAVE_DATA_MOVEMENT(T)                                                \
  template void gatherValues<T>(View<const T>, IndexRef, int64_t, View<T>);    \
  template void transposeValues<T>(View<const T>, const std::vector<int64_t> &, \
                                   View<T>);                                   \
  template void sliceValues<T>(View<const T>, const std::vector<int64_t> &,    \
                               const std::vector<int64_t> &,                   \
                               const std::vector<int64_t> &, View<T>);         \
  template void concatValues<T>(const std::vector<View<const T>> &, int64_t,   \
                                View<T>);                                      \
  template void splitValues<T>(View<const T>, int64_t,                         \
                               const std::vector<View<T>> &);
CLEAVE_DATA_MOVEMENT(float)
CLEAVE_DATA_MOVEMENT(int64_t)
CLEAVE_DATA_MOVEMENT(uint8_t)
CLEAVE_DATA_MOVEMENT(uint16_t)
CLEAVE_DATA_MOVEMENT(uint32_t)
CLEAVE_DATA_MOVEMENT(uint64_t)
#undef CLEAVE_DATA_MOVEMENT

void gather(ConstTensorRef data, IndexRef indices, int64_t axis,
            TensorRef out) {
  gatherValues<float>(data, indices, axis, out);
}

void transpose(ConstTensorRef in, const std::vector<int64_t> &perm,
               TensorRef out) {
  transposeValues<float>(in, perm, out);
}

void slice(ConstTensorRef in, const std::vector<int64_t> &starts,
           const std::vector<int64_t> &limits,
           const std::vector<int64_t> &strides, TensorRef out) {
  sliceValues<float>(in, starts, limits, strides, out);
}

void concat(const std::vector<ConstTensorRef> &inputs, int64_t axis,
            TensorRef out) {
  concatValues<float>(inputs, axis, out);
}

void split(ConstTensorRef in, int64_t axis,
           const std::vector<TensorRef> &outs) {
  splitValues<float>(in, axis, outs);
}

} // namespace cleave::kernels
