//===- OperatorCost.cpp - Roofline and GEMM efficiency --------------------===//

#include "cleave/cost_model/OperatorCost.h"
#include "Strings.h"

#include "cleave/cost_model/Profile.h"

#include <algorithm>

namespace cleave::cost {
namespace {

double memoryBandwidth(const Cluster &cluster, const Profile *profile) {
  if (profile && profile->memoryBandwidth)
    return *profile->memoryBandwidth;
  return cluster.achievedMemoryBandwidth();
}

double kernelOverhead(const Cluster &cluster, const Profile *profile) {
  if (profile && profile->kernelOverhead)
    return *profile->kernelOverhead;
  return cluster.efficiency.kernelOverhead;
}

absl::Status checkSupported(DType type, const Cluster &cluster) {
  if (cluster.device.peakFlops(type) > 0)
    return absl::OkStatus();
  return absl::InvalidArgumentError(
      cat("device '", cluster.device.name, "' of cluster '", cluster.name,
          "' does not support ", dtypeName(type), " (its device.peak_",
          dtypeName(type), " is 0)"));
}

} // namespace

double Gemm::flops() const {
  return 2.0 * static_cast<double>(batch) * static_cast<double>(m) *
         static_cast<double>(n) * static_cast<double>(k);
}

double Gemm::bytes() const {
  double md = static_cast<double>(m), nd = static_cast<double>(n),
         kd = static_cast<double>(k);
  return static_cast<double>(batch) * dtypeBytes(dtype) *
         (md * kd + kd * nd + md * nd);
}

double gemmEfficiency(const Gemm &gemm, const Cluster &cluster,
                      const Profile *profile) {
  const Efficiency &e = cluster.efficiency;
  double smallest = static_cast<double>(std::min({gemm.m, gemm.n, gemm.k}));
  double size = smallest / (smallest + e.gemmHalfDim);
  double intensity = gemm.flops() / gemm.bytes();
  double balance =
      cluster.device.peakFlops(gemm.dtype) / memoryBandwidth(cluster, profile);
  double efficiency =
      1.0 /
      (1.0 / (e.gemmMax * size) + e.gemmExposedMemory * balance / intensity);
  bool sixteenBit = gemm.dtype == DType::Bf16 || gemm.dtype == DType::Fp16;
  if (sixteenBit && e.gemmMisaligned > 0 &&
      (gemm.k % 8 != 0 || gemm.n % 8 != 0))
    efficiency *= e.gemmMisaligned;
  return efficiency;
}

namespace {
/// How much longer an op takes because its device shares a compute
/// engine (CPU ranks beyond the cores), including what sharing costs beyond
/// the split itself where the profile measured it.
double sharing(const Cluster &cluster, const Profile *profile) {
  double share = cluster.computeSharing();
  if (share > 1 && profile && profile->sharedCoreEfficiency)
    share /= *profile->sharedCoreEfficiency;
  return share;
}
} // namespace

absl::StatusOr<OpCost> estimateGemm(const Gemm &gemm, const Cluster &cluster,
                                    const Profile *profile) {
  if (gemm.m <= 0 || gemm.n <= 0 || gemm.k <= 0 || gemm.batch <= 0)
    return absl::InvalidArgumentError(
        cat("GEMM dimensions must be positive (m=", gemm.m, ", n=", gemm.n,
            ", k=", gemm.k, ", batch=", gemm.batch, ")"));
  if (absl::Status status = checkSupported(gemm.dtype, cluster); !status.ok())
    return status;

  OpCost cost;
  if (const GemmTable *table =
          profile ? profile->findGemm(gemm.dtype) : nullptr) {
    // A batched GEMM fills the device like one GEMM with batch x M rows:
    // the same number of output tiles and the same K loop.
    cost.seconds = table->seconds(gemm.batch * gemm.m, gemm.n, gemm.k) *
                   sharing(cluster, profile);
    cost.computeSeconds = cost.seconds;
    cost.efficiency = 1;
    cost.profiled = true;
    return cost;
  }
  cost.efficiency = gemmEfficiency(gemm, cluster, profile);
  cost.computeSeconds = gemm.flops() * sharing(cluster, profile) /
                        (cluster.device.peakFlops(gemm.dtype) * cost.efficiency);
  cost.memorySeconds = gemm.bytes() * sharing(cluster, profile) /
                       memoryBandwidth(cluster, profile);
  cost.overheadSeconds =
      kernelOverhead(cluster, profile) + cluster.efficiency.gemmLatency;
  cost.seconds =
      std::max(cost.computeSeconds, cost.memorySeconds) + cost.overheadSeconds;
  return cost;
}

absl::StatusOr<OpCost> estimateGeneric(const GenericOp &op,
                                       const Cluster &cluster,
                                       const Profile *profile) {
  if (op.flops < 0 || op.bytesRead < 0 || op.bytesWritten < 0)
    return absl::InvalidArgumentError(
        cat("operator counts must not be negative (flops=", op.flops,
            ", bytes read=", op.bytesRead, ", bytes written=", op.bytesWritten,
            ")"));
  OpCost cost;
  cost.efficiency = 1;
  if (op.flops > 0) {
    double peak = cluster.device.peakFp32;
    if (op.tensorCores) {
      if (absl::Status status = checkSupported(op.dtype, cluster); !status.ok())
        return status;
      // Tensor-core kernels other than GEMMs (fused attention) reach what
      // the cluster states for attention, else saturate like large GEMMs.
      peak = cluster.device.peakFlops(op.dtype);
      const Efficiency &e = cluster.efficiency;
      double attention =
          op.backwardPass ? e.attentionBackward : e.attentionForward;
      if (attention > 0) {
        double half =
            op.attentionCausal ? e.attentionHalfSeqCausal : e.attentionHalfSeq;
        if (half > 0 && op.attentionSeq > 0)
          attention *= op.attentionSeq / (op.attentionSeq + half);
        double dh = e.attentionHalfHeadDim, d = op.attentionHeadDim;
        if (dh > 0 && d > 0)
          attention *= std::min(1.0, d / (d + dh) / (128 / (128 + dh)));
      }
      cost.efficiency = attention > 0 ? attention : e.gemmMax;
    }
    cost.computeSeconds =
        op.flops * sharing(cluster, profile) / (peak * cost.efficiency);
  }
  cost.memorySeconds = (op.bytesRead + op.bytesWritten) *
                       sharing(cluster, profile) /
                       memoryBandwidth(cluster, profile);
  cost.overheadSeconds = kernelOverhead(cluster, profile);
  cost.seconds =
      std::max(cost.computeSeconds, cost.memorySeconds) + cost.overheadSeconds;
  return cost;
}

absl::StatusOr<OpCost> estimateOperator(const Operator &op,
                                        const Cluster &cluster,
                                        const Profile *profile) {
  if (const Gemm *gemm = std::get_if<Gemm>(&op))
    return estimateGemm(*gemm, cluster, profile);
  return estimateGeneric(std::get<GenericOp>(op), cluster, profile);
}

std::array<Gemm, 2> gemmBackward(const Gemm &gemm) {
  Gemm dX = gemm; // dY[M,N] x W^T[N,K]
  dX.n = gemm.k;
  dX.k = gemm.n;
  Gemm dW = gemm; // X^T[K,M] x dY[M,N]
  dW.m = gemm.k;
  dW.n = gemm.n;
  dW.k = gemm.m;
  return {dX, dW};
}

absl::StatusOr<GemmTrainingCost> estimateGemmTraining(const Gemm &gemm,
                                                      bool recompute,
                                                      const Cluster &cluster,
                                                      const Profile *profile) {
  GemmTrainingCost cost;
  absl::StatusOr<OpCost> forward = estimateGemm(gemm, cluster, profile);
  if (!forward.ok())
    return forward.status();
  cost.forward = *forward;
  std::array<Gemm, 2> backward = gemmBackward(gemm);
  for (size_t i = 0; i < backward.size(); ++i) {
    absl::StatusOr<OpCost> part = estimateGemm(backward[i], cluster, profile);
    if (!part.ok())
      return part.status();
    cost.backward[i] = *part;
  }
  if (recompute)
    cost.recompute = cost.forward;
  cost.seconds = cost.forward.seconds + cost.backward[0].seconds +
                 cost.backward[1].seconds + cost.recompute.seconds;
  return cost;
}

} // namespace cleave::cost
