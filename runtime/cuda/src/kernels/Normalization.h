//===- Normalization.h - Layer and RMS normalisation on the GPU -*- C++ -*-===//
//
// Launchers for graph.layer_norm, graph.rms_norm and their gradients over
// `rows` rows of `n` contiguous elements (the dimensions from the norm's
// axis on); NormalizationOps.cpp checks shapes and attributes first.
// Pointers are device memory and every launcher only enqueues on `stream`.
// As in the CPU kernels (runtime/kernels/src/Normalization.cpp), the row
// statistics are accumulated in double and rounded to float, and the
// backward launchers recompute them from the input.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_CUDA_SRC_KERNELS_NORMALIZATION_H
#define CLEAVE_RUNTIME_CUDA_SRC_KERNELS_NORMALIZATION_H

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace cleave::cuda {

/// out = (in - mean) * rstd * scale + bias per row; scale and bias ([n])
/// may be null. `out` may alias `in`.
void launchLayerNorm(const float *in, const float *scale, const float *bias,
                     float *out, int64_t rows, int64_t n, double epsilon,
                     cudaStream_t stream);

/// out = in * rms^-1 * scale per row; scale may be null. `out` may alias
/// `in`.
void launchRmsNorm(const float *in, const float *scale, float *out,
                   int64_t rows, int64_t n, double epsilon,
                   cudaStream_t stream);

/// Bytes of workspace the backward launchers need: per-row statistics and
/// per-chunk partial sums of the parameter gradients.
size_t normGradWorkspaceBytes(int64_t rows, int64_t n);

/// Gradients of launchLayerNorm w.r.t. the input, scale and bias, each
/// written when its pointer is not null (overwritten, not accumulated).
/// `scale` is the forward's (null when it had none). The parameter
/// gradients are column sums over the rows, reduced in a fixed order (no
/// atomics), so they are deterministic.
void launchLayerNormGrad(const float *in, const float *scale, const float *dOut,
                         float *dIn, float *dScale, float *dBias, int64_t rows,
                         int64_t n, double epsilon, void *workspace,
                         cudaStream_t stream);

/// Gradients of launchRmsNorm w.r.t. the input and scale (either may be
/// null).
void launchRmsNormGrad(const float *in, const float *scale, const float *dOut,
                       float *dIn, float *dScale, int64_t rows, int64_t n,
                       double epsilon, void *workspace, cudaStream_t stream);

} // namespace cleave::cuda

#endif // CLEAVE_RUNTIME_CUDA_SRC_KERNELS_NORMALIZATION_H
