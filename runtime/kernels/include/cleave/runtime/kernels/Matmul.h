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

/// A linear layer: out[..., N] = x[..., K] op(w) + bias[N], as one GEMM
/// accumulating onto the broadcast bias (w is [K, N], [N, K] transposed).
void linear(ConstTensorRef x, ConstTensorRef w, bool transposeW,
            ConstTensorRef bias, TensorRef out);

/// out[K, N] = sum over b... and m of a[b..., m, k] d[b..., m, n]: the
/// batched a^T d summed over its (equal, unbroadcast) batches, as one GEMM
/// contracting B...*M (a weight gradient over a batch of sequences).
void matmulBatchContract(ConstTensorRef a, ConstTensorRef d, TensorRef out);

/// Gradients w.r.t. both operands (either may be null), each summed over the
/// batch dimensions its operand was broadcast along.
void matmulBackward(ConstTensorRef lhs, ConstTensorRef rhs, bool transposeLhs,
                    bool transposeRhs, ConstTensorRef dOut, TensorRef dLhs,
                    TensorRef dRhs);

} // namespace cleave::kernels

#endif // CLEAVE_RUNTIME_KERNELS_MATMUL_H
