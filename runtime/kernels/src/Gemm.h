//===- Gemm.h - The one entry point to the GEMM library ---------*- C++ -*-===//
//
// Internal to the kernel library.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_KERNELS_GEMM_H
#define CLEAVE_RUNTIME_KERNELS_GEMM_H

#include "Support.h"

#include "cleave/runtime/kernels/GemmLibrary.h"

#include <cblas.h>

namespace cleave::kernels::detail {

/// c[m, n] = op(a)[m, k] * op(b)[k, n] + beta * c, all dense row-major; a
/// is stored [k, m] when `ta`, b is stored [n, k] when `tb`.
inline void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                 const float *a, const float *b, float beta, float *c) {
  if (m == 0 || n == 0)
    return;
  if (k == 0) {
    // BLAS rejects a zero leading dimension; the empty sum is zero.
    if (beta == 0.0f)
      zero(c, m * n);
    return;
  }
  if (DnnlSgemm dnnl = detail::activeDnnlSgemm()) {
    dnnl(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.0f, a, ta ? m : k, b,
         tb ? k : n, beta, c, n);
    return;
  }
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
              tb ? CblasTrans : CblasNoTrans, m, n, k, 1.0f, a, ta ? m : k, b,
              tb ? k : n, beta, c, n);
}

} // namespace cleave::kernels::detail

#endif // CLEAVE_RUNTIME_KERNELS_GEMM_H
