//===- Gemm.h - Row-major fp32 GEMMs on the compute stream ------*- C++ -*-===//

#ifndef CLEAVE_RUNTIME_CUDA_SRC_GEMM_H
#define CLEAVE_RUNTIME_CUDA_SRC_GEMM_H

#include <cstdint>

namespace cleave::cuda {

/// Row-major C[m,n] = op(A)[m,k] op(B)[k,n] + beta C, where A is stored
/// [m,k] ([k,m] with transA) and B [k,n] ([n,k] with transB); fp32, on
/// TF32 tensor cores when the context asks. `batch` products with element
/// strides between them (0: the operand is shared). k == 0 gives zeros
/// (times beta C).
void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
          const float *a, const float *b, float beta, float *c,
          int64_t batch = 1, int64_t strideA = 0, int64_t strideB = 0,
          int64_t strideC = 0);

} // namespace cleave::cuda

#endif // CLEAVE_RUNTIME_CUDA_SRC_GEMM_H
