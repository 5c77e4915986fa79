//===- Reduction.h - reduce_sum, reduce_mean, reduce_max --------*- C++ -*-===//

#ifndef CLEAVE_RUNTIME_KERNELS_REDUCTION_H
#define CLEAVE_RUNTIME_KERNELS_REDUCTION_H

#include "cleave/runtime/kernels/Tensor.h"

namespace cleave::kernels {

enum class ReduceOp { Sum, Mean, Max };

/// The input shape without the reduced axes, or with them set to 1 when
/// `keepdims`. Axes must be distinct and in [0, rank).
Shape reduceShape(const Shape &in, const std::vector<int64_t> &axes,
                  bool keepdims);

/// Reduces `in` over `axes`. An empty reduction gives 0 for a sum, NaN for
/// a mean and -inf for a max, as numpy does.
void reduce(ReduceOp op, ConstTensorRef in, const std::vector<int64_t> &axes,
            bool keepdims, TensorRef out);

/// The gradient w.r.t. the input: dOut broadcast back over the reduced axes
/// (divided by their size for a mean). For a max it goes to the first
/// maximum of each reduced group in row-major order, the others get 0.
void reduceBackward(ReduceOp op, ConstTensorRef in,
                    const std::vector<int64_t> &axes, bool keepdims,
                    ConstTensorRef dOut, TensorRef dIn);

} // namespace cleave::kernels

#endif // CLEAVE_RUNTIME_KERNELS_REDUCTION_H
