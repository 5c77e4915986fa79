//===- Matmul.h - Batched matrix products (graph.matmul) --------*- C++ -*-===//
//
// lhs is [B..., M, K] ([B..., K, M] with transposeLhs), rhs is [B..., K, N]
// ([B..., N, K] with transposeRhs); the batch dimensions broadcast like
// numpy. The products go through cblas_sgemm, one call per batch, or a
// single call when one operand has no batch (a linear layer).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_KERNELS_MATMUL_H
#define CLEAVE_RUNTIME_KERNELS_MATMUL_H

#include "cleave/runtime/kernels/Tensor.h"

namespace cleave::kernels {

/// The result shape [broadcast(B...), M, N]; throws on mismatched operands.
Shape matmulShape(const Shape &lhs, const Shape &rhs, bool transposeLhs,
                  bool transposeRhs);

void matmul(ConstTensorRef lhs, ConstTensorRef rhs, bool transposeLhs,
            bool transposeRhs, TensorRef out);

/// Gradients w.r.t. both operands (either may be null), each summed over the
/// batch dimensions its operand was broadcast along.
void matmulBackward(ConstTensorRef lhs, ConstTensorRef rhs, bool transposeLhs,
                    bool transposeRhs, ConstTensorRef dOut, TensorRef dLhs,
                    TensorRef dRhs);

} // namespace cleave::kernels

#endif // CLEAVE_RUNTIME_KERNELS_MATMUL_H
