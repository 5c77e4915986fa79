//===- DataMovement.h - gather, transpose, slice, concat, split -*- C++ -*-===//
//
// The data-movement ops and their gradients. concat and split are each
// other's gradient: the gradient of concat is split(dOut) into the inputs'
// shapes, that of split is concat(dOuts), where a null dOut (an unused
// result) counts as zeros.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_KERNELS_DATAMOVEMENT_H
#define CLEAVE_RUNTIME_KERNELS_DATAMOVEMENT_H

#include "cleave/runtime/kernels/Tensor.h"

namespace cleave::kernels {

/// data.shape[:axis] + indices.shape + data.shape[axis+1:].
Shape gatherShape(const Shape &data, const Shape &indices, int64_t axis);

/// Selects slices of `data` along `axis`. An index i < 0 means i + size
/// (ONNX Gather); indices outside [-size, size) throw.
void gather(ConstTensorRef data, IndexRef indices, int64_t axis, TensorRef out);

/// dData: zeros, with each gathered slice's gradient added back to the
/// slice it came from (repeated indices accumulate).
void gatherBackward(IndexRef indices, int64_t axis, ConstTensorRef dOut,
                    TensorRef dData);

/// result.shape[i] = in.shape[permutation[i]].
Shape transposeShape(const Shape &in, const std::vector<int64_t> &permutation);

void transpose(ConstTensorRef in, const std::vector<int64_t> &permutation,
               TensorRef out);

/// The transpose by the inverse permutation.
void transposeBackward(ConstTensorRef dOut,
                       const std::vector<int64_t> &permutation, TensorRef dIn);

/// ceil((limit - start) / stride) per dimension; starts and limits must be
/// in [0, size] with start <= limit, strides positive.
Shape sliceShape(const Shape &in, const std::vector<int64_t> &starts,
                 const std::vector<int64_t> &limits,
                 const std::vector<int64_t> &strides);

void slice(ConstTensorRef in, const std::vector<int64_t> &starts,
           const std::vector<int64_t> &limits,
           const std::vector<int64_t> &strides, TensorRef out);

/// dIn: zeros except the sliced elements, which get dOut.
void sliceBackward(ConstTensorRef dOut, const std::vector<int64_t> &starts,
                   const std::vector<int64_t> &limits,
                   const std::vector<int64_t> &strides, TensorRef dIn);

/// graph.slice_grad, which has no limits: dOut's shape fixes the slice.
void sliceBackward(ConstTensorRef dOut, const std::vector<int64_t> &starts,
                   const std::vector<int64_t> &strides, TensorRef dIn);

/// The inputs joined along `axis`; they must agree on every other dimension.
Shape concatShape(const std::vector<Shape> &inputs, int64_t axis);

/// Joins the inputs along `axis`. An input with null data is read as zeros
/// of its shape (so concat also serves as split's gradient).
void concat(const std::vector<ConstTensorRef> &inputs, int64_t axis,
            TensorRef out);

/// Splits `in` along `axis` into `outs`, whose sizes along the axis must add
/// up to the input's; an output with null data is skipped.
void split(ConstTensorRef in, int64_t axis, const std::vector<TensorRef> &outs);

/// The same moves for elements of any type (instantiated for float, int64
/// and the unsigned types of 1, 2, 4 and 8 bytes, which carry any element
/// of that width): the integer and bool tensors of imported models.
template <typename T>
void gatherValues(View<const T> data, IndexRef indices, int64_t axis,
                  View<T> out);
template <typename T>
void transposeValues(View<const T> in, const std::vector<int64_t> &permutation,
                     View<T> out);
template <typename T>
void sliceValues(View<const T> in, const std::vector<int64_t> &starts,
                 const std::vector<int64_t> &limits,
                 const std::vector<int64_t> &strides, View<T> out);
template <typename T>
void concatValues(const std::vector<View<const T>> &inputs, int64_t axis,
                  View<T> out);
template <typename T>
void splitValues(View<const T> in, int64_t axis,
                 const std::vector<View<T>> &outs);

} // namespace cleave::kernels

#endif // CLEAVE_RUNTIME_KERNELS_DATAMOVEMENT_H
