//===- ClusterPresets.cpp - Built-in clusters with their sources ----------===//
//
// Each figure sits beside where it comes from. Peaks are dense (NVIDIA
// datasheets print the 2:4-sparsity figure first, twice these). Memory is
// the marketed capacity in decimal GB, a little under what nvidia-smi shows
// (A100 80GB: 81920 MiB), which leaves room for the CUDA context.
//
// The efficiency fractions are what nccl-tests and GEMM benchmarks reach on
// these machines; a profile (Profile.h) replaces them with measurements.
//
//===----------------------------------------------------------------------===//

#include "Strings.h"
#include "cleave/cost_model/Cluster.h"

#include <algorithm>
#include <thread>

#include <functional>
#include <utility>

namespace cleave::cost {
namespace {

// NCCL's own tuning model (src/graph/tuning.cc, hwLat and baseLat, LL
// protocol): 0.6 us per NVLink hop, 1.0 us per PCIe hop, 2.7 us per network
// hop, and a base latency of 6.6 us per ring collective. We take the LL
// (low-latency) figures with Simple-protocol bandwidth, the envelope NCCL
// picks from: LL for small messages, Simple for large ones.
constexpr double kNvLinkHopLatency = 0.6e-6;
constexpr double kNetworkHopLatency = 2.7e-6;
constexpr double kNcclBaseLatency = 6.6e-6;
// nccl-tests all_reduce_perf inside an 8-GPU DGX A100 climbs from about
// 40 GB/s bus bandwidth at 1 MB to about 120 at 8 MB and 180 at 32 MB,
// reaching its ~230 GB/s plateau only near 1 GB: half the plateau near
// 8 MB, as NCCL pipelines each message in chunks over its channels.
constexpr double kNcclHalfBandwidthBytes = 8e6;

// A kernel in a busy stream costs its run time plus launch and the idle gap
// before the next one, about 2 us without CUDA graphs.
constexpr double kGpuKernelOverhead = 2e-6;

// Stream-like kernels (BabelStream, STREAM triad) reach about 85-90% of
// nominal HBM bandwidth on A100 and H100; we take the lower end.
constexpr double kHbmEfficiency = 0.85;

// The GEMM curve (OperatorCost.h): half of the size factor at
// min(M,N,K) = 32, a quarter of the memory time not overlapped with math.
// Chosen by hand, not fitted, to reproduce commonly reported cuBLAS
// behaviour: large bf16 GEMMs at about 80% of peak on A100 and 75-80% on
// H100 (power-limited clocks), 1024^3 near 60%, and GEMMs with M of 64 or
// less against a large weight bandwidth-bound. The profiler replaces them.
constexpr double kGemmHalfDim = 32;
constexpr double kGemmExposedMemory = 0.25;

Cluster dgxA100(std::string name, double memoryBytes, double memoryBandwidth,
                std::string deviceName) {
  Cluster c;
  c.name = std::move(name);
  c.nodes = 1;
  c.devicesPerNode = 8; // DGX A100: 8 A100 SXM4
  // NVIDIA A100 Tensor Core GPU datasheet: 19.5 TFLOP/s fp32, 156 tf32,
  // 312 bf16/fp16 (dense); no fp8.
  c.device.name = std::move(deviceName);
  c.device.peakFp32 = 19.5e12;
  c.device.peakTf32 = 156e12;
  c.device.peakBf16 = 312e12;
  c.device.peakFp16 = 312e12;
  c.device.peakFp8 = 0;
  c.device.memoryBytes = memoryBytes;
  c.device.memoryBandwidth = memoryBandwidth;
  // Third-generation NVLink through NVSwitch: 12 links x 25 GB/s = 300 GB/s
  // per direction per GPU ("600 GB/s" counts both directions).
  c.intraNode = {LinkKind::NvSwitch, 300e9, kNvLinkHopLatency};
  // DGX A100 user guide: 8 single-port ConnectX-6 HDR InfiniBand (200 Gb/s
  // = 25 GB/s each) for compute traffic; the storage NICs are not counted.
  c.network = {8, 200e9 / 8, kNetworkHopLatency};
  c.efficiency.gemmMax = 0.82;
  c.efficiency.gemmHalfDim = kGemmHalfDim;
  c.efficiency.gemmExposedMemory = kGemmExposedMemory;
  c.efficiency.memory = kHbmEfficiency;
  // nccl-tests all_reduce_perf inside a DGX A100 reaches about 230 GB/s bus
  // bandwidth (NCCL's tuner caps sm80 at 235): 230 / 300.
  c.efficiency.ncclIntraNode = 230.0 / 300.0;
  // About 24 GB/s achieved per HDR NIC: 24 / 25.
  c.efficiency.ncclInterNode = 24.0 / 25.0;
  c.efficiency.kernelOverhead = kGpuKernelOverhead;
  c.efficiency.collectiveOverhead = kNcclBaseLatency;
  c.efficiency.collectiveHalfBandwidthBytes = kNcclHalfBandwidthBytes;
  return c;
}

Cluster dgxH100(std::string name, double memoryBytes, double memoryBandwidth,
                std::string deviceName) {
  Cluster c;
  c.name = std::move(name);
  c.nodes = 1;
  c.devicesPerNode = 8; // DGX H100 / HGX H100 and H200: 8 SXM5 GPUs
  // NVIDIA H100 Tensor Core GPU datasheet (SXM): 67 TFLOP/s fp32, 494.7 tf32,
  // 989.4 bf16/fp16, 1978.9 fp8 (dense; the datasheet's 989 tf32 and 1979
  // bf16 are with sparsity). H200 SXM has the same compute.
  c.device.name = std::move(deviceName);
  c.device.peakFp32 = 67e12;
  c.device.peakTf32 = 494.7e12;
  c.device.peakBf16 = 989.4e12;
  c.device.peakFp16 = 989.4e12;
  c.device.peakFp8 = 1978.9e12;
  c.device.memoryBytes = memoryBytes;
  c.device.memoryBandwidth = memoryBandwidth;
  // Fourth-generation NVLink through NVSwitch: 18 links, 900 GB/s per GPU
  // both directions, 450 GB/s each way.
  c.intraNode = {LinkKind::NvSwitch, 450e9, kNvLinkHopLatency};
  // 8 ConnectX-7 NDR InfiniBand, 400 Gb/s = 50 GB/s each.
  c.network = {8, 400e9 / 8, kNetworkHopLatency};
  // The best bf16 GEMM of any shape on an H100 SXM: 794.5 TFLOP/s, 80.3%
  // of peak (torch 2.7 + CUDA 12.6, 2048x2048x13312; 792.1 with CUDA 12.1),
  // from the "Maximum Achievable Matmul FLOPS" table of
  // stas00/ml-engineering, compute/accelerator/README.md, which says the
  // H200 reaches the same. Large GEMMs saturate there.
  c.efficiency.gemmMax = 0.80;
  // Smaller GEMMs: OpenXLA's table of H100 GEMM kernel times
  // (xla/service/gpu/model/matmul_interpolator_data.h, "sm_90", 375 bf16
  // shapes: batch 1-4, M, N, K 256-4096; CUPTI kernel durations, the
  // median of 10 runs, of XLA's autotuned cuBLAS or Triton GEMMs; its
  // best, 808.7 TFLOP/s, is above the PCIe card's peak, so an SXM) are
  // reproduced by the size factor at half-dimension 32 and a fixed 6 us a
  // kernel (no exposed memory term): the least-squares fit of the log
  // rates, mean error 6.9%, worst +44% (512 x 256 x 4096); 6.3% mean over
  // the 267 shapes of 2^30 multiply-adds or more. Examples (M x N x K,
  // measured / priced TFLOP/s): 4096^3 783 / 759, 2048^3 632 / 613, 4096 x
  // 512 x 1024 371 / 365, 1024 x 1024 x 2048 350 / 370, 256^3 6.5 / 5.5.
  // The hand-chosen curve before (exposed memory 0.25, no latency) priced
  // the shapes of 2^30 multiply-adds or more 53% too fast on average, and
  // 256^3 at 256 TFLOP/s.
  c.efficiency.gemmHalfDim = kGemmHalfDim;
  c.efficiency.gemmExposedMemory = 0;
  c.efficiency.gemmLatency = 6e-6;
  // An inner dimension that is not a multiple of 8: (4096 x 10922) @
  // (10922 x 4096) in fp16 runs at 272.73 TFLOP/s on an H100 where 10944
  // (and 10848, 10880, 10912, 11008) run at 395-398 (ml-engineering,
  // training/performance/README.md, "SwiGLU-based MLP"): 272.73 / 398.38.
  c.efficiency.gemmMisaligned = 272.73 / 398.38;
  // Fused attention on Hopper (cuDNN 9's, which Transformer Engine runs):
  // the cuDNN rows of Shah et al., FlashAttention-3 (arXiv 2407.08608,
  // figure 5: bf16 forward on H100 SXM5, head size 64/128/256, causal and
  // not, sequence 512 to 16k at 16k tokens a batch) give
  //   causal, d 128:   315 410 484 518 529 539 TFLOP/s
  //   full,   d 128:   497 574 617 609 600 595
  //   causal, d 64:    225 288 334 363 379 388   (d 256: 308 ... 509)
  // The curve rate x S/(S + half) x head factor (Cluster.h) with rate 585,
  // half 450 causal and 90 full, head half-size 96, is the least-squares
  // fit to those 36 points: mean error 3.4%, worst 12% (full, d 128, 2k).
  // Backward: 0.82 of forward, the mean ratio of cuDNN 9.1's backward to
  // forward at head size 128, sequence 4k-16k, causal and not, in
  // NVIDIA/cudnn-frontend benchmark/benchmark_results.csv (444/542,
  // 464/573, 498/587 causal; 517/654, 530/669, 538/642 full).
  // FlashAttention-2 itself reaches about 330 forward (same figure).
  c.efficiency.attentionForward = 585.0 / 989.4;
  c.efficiency.attentionBackward = 0.82 * 585.0 / 989.4;
  c.efficiency.attentionHalfSeqCausal = 450;
  c.efficiency.attentionHalfSeq = 90;
  c.efficiency.attentionHalfHeadDim = 96;
  // Memory-bound kernels written for Hopper (RMSNorm, softmax,
  // cross-entropy) reach about 3.0 TB/s of the H100's 3.35 for rows over
  // 4k elements (Dao-AILab/quack, media/2025-07-10-membound-sol.md: 3.01
  // TB/s fp32 softmax; torch.compile's reaches 1.89); DeepSeek's FlashMLA
  // reports 3000 GB/s on the H800, the same HBM3. 3.0 / 3.35.
  c.efficiency.memory = 3.0 / 3.35;
  // nccl-tests all_reduce_perf inside a DGX H100: about 370 GB/s bus
  // bandwidth over 450 GB/s per direction for ring collectives, the
  // figure NCCL's maintainer gives (NVIDIA/nccl-tests issue 212; 8x H200
  // measure 367 all-reduce, 361 all-gather, 363 reduce-scatter in
  // ml-engineering's network/README.md). NVLink SHARP all-reduces reach
  // 480, which this one fraction does not model.
  c.efficiency.ncclIntraNode = 370.0 / 450.0;
  // NDR achieves about 46-48 GB/s per NIC (NVIDIA, nccl-tests issue 290):
  // 47 / 50.
  c.efficiency.ncclInterNode = 47.0 / 50.0;
  c.efficiency.kernelOverhead = kGpuKernelOverhead;
  c.efficiency.collectiveOverhead = kNcclBaseLatency;
  c.efficiency.collectiveHalfBandwidthBytes = kNcclHalfBandwidthBytes;
  return c;
}

// Ranks that are processes on this machine, run by the CPU runtime (fp32
// kernels over OpenBLAS, collectives over MPI shared memory). Every figure
// here is a PLACEHOLDER of the right order of magnitude for one core of a
// current x86 server, not a measurement: the profiler is to measure them
// and write a profile that replaces them.
Cluster cpuLocal() {
  Cluster c;
  c.name = "cpu-local";
  c.nodes = 1;
  c.devicesPerNode = 1; // `cpu-local,devices=4` for four ranks
  // Ranks beyond the cores share them (`cpu-local,devices=4,cores=2`).
  c.coresPerNode = std::max(1u, std::thread::hardware_concurrency());
  // The runtime's MPI collectives have no progress thread: a bucket's
  // all-reduce started in the backward pass moves when the rank waits.
  c.commOverlapsCompute = 0;
  c.device.name = "cpu-rank";
  // Placeholder: one core with AVX2 FMA peaks near 100 GFLOP/s fp32 (2 FMA
  // units x 8 lanes x 2 FLOPs x ~3 GHz); OpenBLAS sustains about half.
  c.device.peakFp32 = 100e9;
  // The CPU kernels are fp32 only; the other types are unsupported.
  c.device.memoryBytes = 4e9;      // placeholder share of host memory
  c.device.memoryBandwidth = 10e9; // placeholder per-core DRAM bandwidth
  // Placeholder: MPI shared-memory copies, a few GB/s, about 1 us a hop.
  c.intraNode = {LinkKind::SharedMemory, 5e9, 1e-6};
  // Placeholder: 10 GbE between hosts if nodes are added, ~50 us over TCP.
  c.network = {1, 10e9 / 8, 50e-6};
  c.efficiency.gemmMax = 0.5;
  c.efficiency.gemmHalfDim = kGemmHalfDim;
  c.efficiency.gemmExposedMemory = kGemmExposedMemory;
  c.efficiency.memory = 0.7;
  c.efficiency.ncclIntraNode = 0.5;
  c.efficiency.ncclInterNode = 0.8;
  c.efficiency.kernelOverhead = 1e-6;     // a function call and a barrier
  c.efficiency.collectiveOverhead = 5e-6; // an MPI call on shared memory
  return c;
}

const std::vector<std::pair<std::string, std::function<Cluster()>>> &presets() {
  static const std::vector<std::pair<std::string, std::function<Cluster()>>>
      table = {
          // A100 SXM4 80GB: 2.039 TB/s HBM2e.
          {"dgx-a100-80g",
           [] {
             return dgxA100("dgx-a100-80g", 80e9, 2.039e12, "A100-SXM4-80GB");
           }},
          // A100 SXM4 40GB: 1.555 TB/s HBM2.
          {"dgx-a100-40g",
           [] {
             return dgxA100("dgx-a100-40g", 40e9, 1.555e12, "A100-SXM4-40GB");
           }},
          // H100 SXM5 80GB: 3.35 TB/s HBM3.
          {"dgx-h100",
           [] { return dgxH100("dgx-h100", 80e9, 3.35e12, "H100-SXM5-80GB"); }},
          // H200 SXM 141GB: 4.8 TB/s HBM3e; HGX H200 keeps NVLink 4 and is
          // deployed with 8 NDR NICs like DGX H100.
          {"hgx-h200",
           [] { return dgxH100("hgx-h200", 141e9, 4.8e12, "H200-SXM-141GB"); }},
          {"cpu-local", cpuLocal},
      };
  return table;
}

} // namespace

std::vector<std::string> clusterPresetNames() {
  std::vector<std::string> names;
  for (const auto &[name, make] : presets())
    names.push_back(name);
  return names;
}

absl::StatusOr<Cluster> clusterPreset(std::string_view name) {
  for (const auto &[presetName, make] : presets())
    if (presetName == name)
      return make();
  return absl::NotFoundError(cat("unknown cluster preset '", name,
                                 "' (known: ", join(clusterPresetNames(), ", "),
                                 "; or the path of a ", "cluster file)"));
}

} // namespace cleave::cost
