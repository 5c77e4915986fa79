//===- GemmLibrary.h - Which library runs the kernels' GEMMs ----*- C++ -*-===//
//
// Every GEMM of the CPU kernels goes through one entry point (src/Gemm.h),
// which calls OpenBLAS (linked, its OpenMP build) or oneDNN's dnnl_sgemm
// (Debian's libdnnl2, loaded at run time where installed: no build
// dependency, and it threads on the same libgomp pool). Which one is chosen
// by measurement: `cleave profile` times both on the shapes a
// transformer's layers run and stores the faster with the OpenBLAS kernel
// choice (BlasKernels.h, the choice "onednn"); CLEAVE_GEMM=openblas or
// =onednn overrides it. On the 2-core AVX-512 EPYC this was built on,
// oneDNN ran a small GPT's GEMM shapes 3-10% faster than OpenBLAS and BLIS
// at two threads, and within 1% of OpenBLAS's Haswell kernels at one
// (docs/dependencies.md).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_KERNELS_GEMMLIBRARY_H
#define CLEAVE_RUNTIME_KERNELS_GEMMLIBRARY_H

#include <cstdint>
#include <string>

namespace cleave::kernels {

enum class GemmLibrary { OpenBlas, OneDnn };

/// "openblas" or "onednn".
const char *gemmLibraryName(GemmLibrary library);

/// Whether oneDNN can be loaded (libdnnl.so.2 with dnnl_sgemm).
bool oneDnnAvailable();

/// The library the GEMMs run on, settled at the first call: CLEAVE_GEMM
/// when set ("onednn" falls back to OpenBLAS, with a warning on stderr,
/// where oneDNN cannot be loaded; another value is an error: it throws
/// std::invalid_argument naming it), else OpenBLAS.
GemmLibrary gemmLibrary();

namespace detail {
/// oneDNN's row-major sgemm, when it is the active library; else null.
using DnnlSgemm = int (*)(char transA, char transB, int64_t m, int64_t n,
                          int64_t k, float alpha, const float *a, int64_t lda,
                          const float *b, int64_t ldb, float beta, float *c,
                          int64_t ldc);
DnnlSgemm activeDnnlSgemm();
} // namespace detail

} // namespace cleave::kernels

#endif // CLEAVE_RUNTIME_KERNELS_GEMMLIBRARY_H
