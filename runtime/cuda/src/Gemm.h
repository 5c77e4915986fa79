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

/// How a GEMM operand or result is stored.
enum class GemmStorage : uint8_t { F32, Bf16, F16 };

/// gemm on operands and a result as they are stored: a product with a
/// 16-bit operand runs on the tensor cores in that type (an fp32 operand
/// beside it is rounded into a 16-bit copy; the two 16-bit types do not
/// mix), accumulates in fp32 and rounds once into a 16-bit result (a bf16
/// plan's activations: no fp32 copies of the operands or the result, as a
/// widened fp32 kernel would need). Strides are in elements.
void gemmStored(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                const void *a, GemmStorage aStorage, const void *b,
                GemmStorage bStorage, float beta, void *c,
                GemmStorage cStorage, int64_t batch = 1, int64_t strideA = 0,
                int64_t strideB = 0, int64_t strideC = 0);

/// What cuBLASLt does to the product before it stores it (row-major
/// terms; see Gemm.cpp for the column-major mapping).
enum class Epilogue : uint8_t {
  None,
  /// c[i, j] += bias[j].
  Bias,
  /// c = relu(product + bias).
  BiasRelu,
  /// c = gelu_tanh(product + bias).
  BiasGelu,
  /// The same, also storing product + bias into `aux` (the gradient's
  /// input).
  BiasGeluAux,
  /// c = gelu_tanh'(aux) * product (aux: the activation's input).
  DGelu,
};

struct EpilogueArgs {
  Epilogue kind = Epilogue::None;
  /// Bias*: n values.
  const float *bias = nullptr;
  /// BiasGeluAux (written), DGelu (read): m x n like c.
  float *aux = nullptr;
};

/// A single (unbatched) gemm with an epilogue, beta 0. Returns false,
/// having written nothing, when cuBLASLt has no algorithm for it (an
/// epilogue needs n % 8 == 0 for its auxiliary matrix, and some layouts
/// have none): the caller then runs the ops apart.
bool gemmEpilogue(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                  const float *a, const float *b, float *c,
                  const EpilogueArgs &epilogue);

} // namespace cleave::cuda

#endif // CLEAVE_RUNTIME_CUDA_SRC_GEMM_H
