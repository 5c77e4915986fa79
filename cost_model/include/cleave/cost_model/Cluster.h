//===- Cluster.h - The machines a plan runs on ------------------*- C++ -*-===//
//
// A cluster is `nodes` identical nodes of `devicesPerNode` identical devices.
// Devices in a node talk over one intra-node fabric (NVLink through
// NVSwitch, PCIe, or shared memory for CPU ranks); nodes talk over NICs.
// Global rank r lives on node r / devicesPerNode, the order launchers use.
//
// Every figure is in SI base units (FLOP/s, bytes, bytes/s, seconds).
// Hardware fields hold datasheet (nominal) figures; `Efficiency` holds the
// fractions of them that real kernels and NCCL achieve, so that a profile or
// a new measurement changes one number without touching the hardware.
//
// Clusters come from built-in presets (`clusterPresetNames`), from files in
// the format of docs/cluster-format.md, and from `key=value` overrides on
// either: `dgx-a100-80g,nodes=128`, `cpu-local,devices=4`.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_COST_MODEL_CLUSTER_H
#define CLEAVE_COST_MODEL_CLUSTER_H

#include "cleave/cost_model/DType.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cleave::cost {

struct DeviceSpec {
  std::string name;
  /// Dense peak rates (no structured sparsity). Zero means the device has
  /// no native support for the type; pricing such an op is an error.
  double peakFp32 = 0;
  double peakTf32 = 0;
  double peakBf16 = 0;
  double peakFp16 = 0;
  double peakFp8 = 0;
  double memoryBytes = 0;
  double memoryBandwidth = 0;

  double peakFlops(DType type) const;
};

enum class LinkKind { NvSwitch, NvLink, Pcie, SharedMemory };

std::string_view linkKindName(LinkKind kind);

/// The intra-node fabric, seen from one device. The model treats it as
/// non-blocking (true of NVSwitch): disjoint groups in a node do not slow
/// each other; pass CollectiveOptions::bandwidthShare where they do.
struct IntraNodeLink {
  LinkKind kind = LinkKind::NvSwitch;
  /// Per device, per direction (A100: 600 GB/s "total" is 300 each way).
  double bandwidth = 0;
  /// Per hop, as NCCL's tuning model counts hops.
  double latency = 0;
};

struct Network {
  int64_t nicsPerNode = 0;
  /// Nominal line rate per NIC, per direction.
  double nicBandwidth = 0;
  /// Per hop between nodes.
  double latency = 0;
};

/// What real kernels and collectives achieve. See OperatorCost.h for the
/// GEMM curve and Collectives.h for how the NCCL fractions are used.
struct Efficiency {
  /// The fraction of peak that large GEMMs saturate at.
  double gemmMax = 0.8;
  /// min(M, N, K) at which the size factor reaches one half.
  double gemmHalfDim = 32;
  /// The fraction of a GEMM's memory time that does not overlap its math.
  double gemmExposedMemory = 0.25;
  /// Seconds every GEMM kernel takes beyond its rate (OperatorCost.h).
  double gemmLatency = 0;
  /// A 16-bit GEMM with K or N not a multiple of 8 runs at this fraction
  /// of the aligned rate (OperatorCost.h); 0: no penalty.
  double gemmMisaligned = 0;
  /// The fraction of peak a fused attention kernel (FlashAttention) reaches
  /// over the FLOPs it runs, forward and backward; 0: priced as the GEMMs it
  /// runs at their shape (inner dimension the head size). Attention kernels
  /// are not GEMMs: the softmax between the two products and, backward,
  /// five products sharing one pass with atomics or a second kernel keep
  /// them further below peak, and differently per generation.
  double attentionForward = 0;
  double attentionBackward = 0;
  /// How those rates fall with the kernel's sequence (query) length and
  /// head size (0: they do not): rate x S / (S + half) with `half` the
  /// causal or the full-mask figure (the diagonal blocks of a causal mask
  /// are half empty, so short causal sequences lose more), times
  /// min(1, d/(d + dh) / (128/(128 + dh))) for head size d, dh the
  /// half-head-dim figure. attentionForward/Backward are then the rates
  /// long sequences saturate at with heads of 128 and up.
  double attentionHalfSeqCausal = 0;
  double attentionHalfSeq = 0;
  double attentionHalfHeadDim = 0;
  /// Achieved over nominal memory bandwidth (stream-like kernels).
  double memory = 0.85;
  /// NCCL bus bandwidth inside a node over intra-node link bandwidth.
  double ncclIntraNode = 0.75;
  /// Achieved over nominal bandwidth per NIC.
  double ncclInterNode = 0.9;
  /// Added to every kernel: launch and the gap between back-to-back kernels.
  double kernelOverhead = 2e-6;
  /// Added to every collective call: NCCL's base latency.
  double collectiveOverhead = 6.6e-6;
  /// Message size (bytes per rank) at which a collective reaches half its
  /// large-message bandwidth: NCCL splits a message into chunks over its
  /// channels and pipelines them, so mid-size messages do not fill the
  /// pipeline. The transfer term is scaled by 1 + halfBytes / bytes.
  double collectiveHalfBandwidthBytes = 0;
};

struct Cluster {
  std::string name;
  int64_t nodes = 1;
  int64_t devicesPerNode = 1;
  /// Compute engines a node's devices share; 0: each device has its own (a
  /// GPU). CPU ranks share the host's cores: with more ranks than cores,
  /// each runs at cores / ranks of the speed the profile measured.
  int64_t coresPerNode = 0;
  /// 1: a device's collectives progress beside its compute (NCCL kernels
  /// on their own stream), so gradient reduction hides behind the backward
  /// pass. 0: they run only when the device waits on them (CPU ranks: MPI
  /// progresses a nonblocking collective inside MPI calls, and its copies
  /// and sums need the cores the compute uses).
  int64_t commOverlapsCompute = 1;
  /// Devices of a node busy on average (0: all of them); the cost model
  /// sets it from a plan's pipeline bubble, since a rank idle in a bubble
  /// leaves its core to the others.
  double busyDevicesPerNode = 0;
  DeviceSpec device;
  IntraNodeLink intraNode;
  Network network;
  Efficiency efficiency;

  int64_t numDevices() const { return nodes * devicesPerNode; }
  /// How many devices share one compute engine (1 when none do).
  double computeSharing() const {
    double busy = busyDevicesPerNode > 0 ? busyDevicesPerNode
                                         : double(devicesPerNode);
    return coresPerNode > 0 && busy > double(coresPerNode)
               ? busy / double(coresPerNode)
               : 1.0;
  }
  int64_t nodeOf(int64_t rank) const { return rank / devicesPerNode; }
  /// NCCL bus bandwidth a collective reaches inside one node.
  double intraNodeBusBandwidth() const {
    return intraNode.bandwidth * efficiency.ncclIntraNode;
  }
  /// Bandwidth one NIC delivers to NCCL.
  double achievedNicBandwidth() const {
    return network.nicBandwidth * efficiency.ncclInterNode;
  }
  double achievedMemoryBandwidth() const {
    return device.memoryBandwidth * efficiency.memory;
  }
};

/// Names of the built-in presets.
std::vector<std::string> clusterPresetNames();

/// A built-in preset (one node unless overridden).
absl::StatusOr<Cluster> clusterPreset(std::string_view name);

/// Builds a cluster from `spec`: a preset name or the path of a cluster
/// file, then `,key=value` overrides applied in order. Keys are those of the
/// file format (`nodes`, `network.nic_bandwidth`, ...); a key without a
/// section may be used when only one section has it (`peak_bf16`).
absl::StatusOr<Cluster> parseCluster(std::string_view spec);

/// Parses the file format (docs/cluster-format.md); errors name
/// `fileName:line` and the key.
absl::StatusOr<Cluster> parseClusterText(std::string_view text,
                                         std::string_view fileName);
absl::StatusOr<Cluster> loadClusterFile(const std::string &path);

/// Writes `cluster` in the file format; parsing it gives `cluster` back.
std::string formatCluster(const Cluster &cluster);

/// Sets one field from its textual value, e.g. ("nodes", "128") or
/// ("device.memory", "80 GB"). Does not validate the whole cluster.
absl::Status setClusterField(Cluster &cluster, std::string_view key,
                             std::string_view value);

/// Checks every field's range; the message names the offending key.
absl::Status validateCluster(const Cluster &cluster);

struct ClusterFieldInfo {
  std::string key;  ///< "device.peak_bf16"
  std::string unit; ///< what a value looks like: "312 TFLOP/s"
  std::string help; ///< one line
};

/// Every key of the file format, for `--help` and the docs.
std::vector<ClusterFieldInfo> clusterFields();

} // namespace cleave::cost

#endif // CLEAVE_COST_MODEL_CLUSTER_H
