//===- OperatorCost.h - Time of one kernel on one device --------*- C++ -*-===//
//
// A roofline with a shape-dependent GEMM efficiency:
//
//   time = max(flops / (peak(dtype) x efficiency), bytes / (bandwidth x
//          efficiency.memory)) + efficiency.kernel_overhead
//          (+ efficiency.gemm_latency for a GEMM)
//
// The GEMM efficiency is
//
//   1 / efficiency = 1 / (gemm_max x S) + gemm_exposed_memory x B / I
//   S = m / (m + gemm_half_dim)
//
// with m = min(M, N, K), I = flops / bytes the arithmetic intensity and
// B = peak(dtype) / achieved memory bandwidth the machine balance (the
// intensity at the roofline's ridge). Equivalently the compute side of the
// roofline is flops / (peak x gemm_max x S) + gemm_exposed_memory x the
// memory time. Why each part:
//  - S, size: a GEMM is cut into output tiles (128x128 or so) and runs its
//    K loop through a prologue and an epilogue; a small dimension leaves
//    tiles partly empty (tile quantisation), too few tiles to fill every SM
//    (wave quantisation) or too short a K loop to hide the pipeline fill.
//    NVIDIA's "Matrix Multiplication Background User's Guide" shows
//    efficiency climbing with each dimension and flattening past a few
//    hundred; a hyperbola in the smallest one is the simplest such curve.
//  - B / I, intensity: loads and math never overlap perfectly, so a
//    fraction of the memory time adds to the math time. Near the ridge the
//    kernel reaches neither roof (the roofline's max() is optimistic
//    there); well above it the term vanishes, and well below it the memory
//    side of the roofline dominates anyway, so GEMV-like skinny GEMMs stay
//    bandwidth-bound rather than being charged twice for their small size.
//    Efficiency therefore rises with both min(M, N, K) and intensity.
//  - gemm_max: large GEMMs saturate below peak (power-limited clocks,
//    epilogues): about 0.8 on A100 and H100 in cuBLAS measurements.
//  - gemm_latency: a fixed time per GEMM kernel inside it (its first
//    tiles' loads and its last tiles' stores that no math overlaps, a
//    last partial wave): what makes a GEMM of a few GFLOP run far below the
//    ceiling however square it is. It does not shrink with the shape, so
//    it is not a factor of the efficiency.
//  - gemm_misaligned: a 16-bit GEMM whose K or N (the leading dimensions
//    of row-major operands) is not a multiple of 8 elements (16 bytes)
//    cannot use the aligned tensor-core load path; its efficiency is
//    multiplied by this factor (1 or 0: no penalty). GPT-2's vocabulary
//    of 50257 is the classic case (padded to 50304 for this reason).
// The A100 presets' parameters are chosen by hand to reproduce commonly
// reported cuBLAS behaviour; the Hopper presets' are fitted to a published
// table of H100 GEMM kernel times (ClusterPresets.cpp). A Profile with
// measured GEMM times replaces the formula for its dtypes.
//
// Backward of Y[M,N] = X[M,K] W[K,N] is two GEMMs of the same FLOPs:
// dX = dY W^T, shape (M, K, N), and dW = X^T dY, shape (K, N, M).
// Recomputation runs the forward again.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_COST_MODEL_OPERATORCOST_H
#define CLEAVE_COST_MODEL_OPERATORCOST_H

#include "cleave/cost_model/Cluster.h"
#include "cleave/cost_model/DType.h"

#include "absl/status/statusor.h"

#include <array>
#include <cstdint>
#include <variant>

namespace cleave::cost {

struct Profile;

/// `batch` independent products of (m x k) by (k x n), inputs and output in
/// `dtype` (accumulation in fp32 inside the kernel does not change bytes).
struct Gemm {
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  int64_t batch = 1;
  DType dtype = DType::Bf16;

  double flops() const;
  /// Each operand read once and the output written once.
  double bytes() const;
};

/// Any other kernel, by its counts (what CostOpInterface reports).
struct GenericOp {
  double flops = 0;
  double bytesRead = 0;
  double bytesWritten = 0;
  DType dtype = DType::Fp32;
  /// Math on tensor cores at peak(dtype) (fused attention); otherwise on
  /// CUDA cores at the fp32 rate, as elementwise and normalisation kernels
  /// are (16-bit vector math may be up to twice that; these kernels are
  /// bandwidth-bound anyway).
  bool tensorCores = false;
  /// A tensor-core kernel of a backward pass (fused attention's gradient),
  /// priced at efficiency.attention_backward rather than _forward.
  bool backwardPass = false;
  /// A fused attention kernel's shape, for the rate's dependence on it
  /// (Efficiency::attentionHalfSeq...): query length, head size, causal
  /// mask; 0 where unknown.
  double attentionSeq = 0;
  double attentionHeadDim = 0;
  bool attentionCausal = false;
};

using Operator = std::variant<Gemm, GenericOp>;

struct OpCost {
  double seconds = 0;
  double computeSeconds = 0;
  double memorySeconds = 0;
  double overheadSeconds = 0;
  /// The compute efficiency used (1 when profiled).
  double efficiency = 0;
  /// The time came from a profiled GEMM table.
  bool profiled = false;

  bool memoryBound() const { return memorySeconds > computeSeconds; }
};

/// The GEMM efficiency curve above, in (0, gemm_max).
double gemmEfficiency(const Gemm &gemm, const Cluster &cluster,
                      const Profile *profile = nullptr);

/// Errors: non-positive dimensions, negative counts, or a dtype the device
/// does not support (peak 0).
absl::StatusOr<OpCost> estimateGemm(const Gemm &gemm, const Cluster &cluster,
                                    const Profile *profile = nullptr);
absl::StatusOr<OpCost> estimateGeneric(const GenericOp &op,
                                       const Cluster &cluster,
                                       const Profile *profile = nullptr);
absl::StatusOr<OpCost> estimateOperator(const Operator &op,
                                        const Cluster &cluster,
                                        const Profile *profile = nullptr);

/// {dX = dY W^T, dW = X^T dY} for the forward `gemm`.
std::array<Gemm, 2> gemmBackward(const Gemm &gemm);

struct GemmTrainingCost {
  OpCost forward;
  std::array<OpCost, 2> backward;
  /// Zero unless recomputed.
  OpCost recompute;
  double seconds = 0;
};

/// Forward, both backward GEMMs, and the forward again when `recompute`.
absl::StatusOr<GemmTrainingCost>
estimateGemmTraining(const Gemm &gemm, bool recompute, const Cluster &cluster,
                     const Profile *profile = nullptr);

} // namespace cleave::cost

#endif // CLEAVE_COST_MODEL_OPERATORCOST_H
