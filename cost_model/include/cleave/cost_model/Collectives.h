//===- Collectives.h - Time of NCCL-style collectives -----------*- C++ -*-===//
//
// time = overhead + latency term + bytes moved / bandwidth, per algorithm,
// following NCCL's own tuning model (src/graph/tuning.cc) and nccl-tests'
// bus-bandwidth conventions (doc/PERFORMANCE.md). `bytes` is the size
// nccl-tests prints: the whole buffer of one rank before it is split, i.e.
// the all-reduce tensor, the all-gather output, the reduce-scatter input,
// the all-to-all send buffer, the broadcast buffer, the message of a send.
// Per rank, a ring all-reduce moves 2(n-1)/n of it, all-gather and
// reduce-scatter (n-1)/n, all-to-all (n-1)/n, broadcast and send/recv all of
// it; that over the time is the bus bandwidth nccl-tests reports.
//
// Which links a group uses follows from where its ranks are: a group inside
// one node runs over the intra-node fabric at the NCCL bus bandwidth
// (link bandwidth x efficiency.nccl_intra_node). A group spanning nodes is
// limited by the slower of that and the network share of the group. Ring
// and tree algorithms cross each node boundary once per channel, and NCCL
// runs one channel per NIC, so one rank's worth of data leaves each node
// whatever the number k of group ranks on it: the network bus bandwidth is
// (NICs the group can drive) x (achieved bandwidth per NIC), not divided by
// k. A device drives the NICs on its own PCIe switch, max(1, nics/devices)
// of them (no PXN), so the group drives min(nics, k * that) NICs. All-to-all
// is different: every rank sends its own off-node data, so k ranks share the
// node's NICs and each gets nics x bandwidth / k (the rule of thumb "NIC
// bandwidth x NICs / ranks per node" holds for all-to-all only).
//
// When several groups with the same placement run at once (8 data-parallel
// groups, one per local GPU, each with one rank per node), they share the
// node's NICs: `concurrentGroups` = c gives each min(nics, c x k x
// nics-per-device) / c NICs. On a DGX (one NIC per GPU) the 8 groups still
// get one NIC each; on a node with one NIC for 8 GPUs each gets an eighth.
// `bandwidthShare` scales every link for sharing the model cannot see
// (a tensor-parallel all-reduce overlapping a data-parallel one).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_COST_MODEL_COLLECTIVES_H
#define CLEAVE_COST_MODEL_COLLECTIVES_H

#include "cleave/cost_model/Cluster.h"

#include "absl/status/statusor.h"

#include <cstdint>
#include <string_view>
#include <vector>

namespace cleave::cost {

struct Profile;

enum class Collective {
  AllReduce,
  AllGather,
  ReduceScatter,
  AllToAll,
  Broadcast,
  SendRecv
};

/// "all-reduce", "all-gather", "reduce-scatter", "all-to-all", "broadcast",
/// "send-recv".
std::string_view collectiveName(Collective kind);
absl::StatusOr<Collective> parseCollective(std::string_view name);

enum class Algorithm {
  Auto,         ///< the fastest valid one (or a profiled curve)
  Ring,         ///< all-reduce, all-gather, reduce-scatter, broadcast
  Tree,         ///< all-reduce: chain in a node, binary tree across nodes
  Hierarchical, ///< all-reduce: reduce-scatter in node, all-reduce across
                ///< nodes on the NICs, all-gather in node
  Pairwise,     ///< all-to-all: n-1 rounds of pairwise exchange
  Direct,       ///< send/recv
};

std::string_view algorithmName(Algorithm algorithm);

/// A set of global ranks; the cluster's devicesPerNode places them.
struct Group {
  std::vector<int64_t> ranks;

  /// ranks first, first + stride, ..., `size` of them.
  static Group strided(int64_t first, int64_t size, int64_t stride = 1);
};

/// Where a group's ranks are.
struct GroupPlacement {
  int64_t size = 0;
  int64_t nodes = 0;
  /// The most group ranks on one node: the bottleneck node's share.
  int64_t maxRanksPerNode = 0;
  /// Every node used holds the same number of ranks.
  bool uniform = true;
};

absl::StatusOr<GroupPlacement> placeGroup(const Group &group,
                                          const Cluster &cluster);

struct CollectiveOptions {
  Algorithm algorithm = Algorithm::Auto;
  /// Groups of the same placement running the same collective at once.
  int64_t concurrentGroups = 1;
  /// In (0, 1]: the fraction of every link this collective gets.
  double bandwidthShare = 1.0;
};

struct CollectiveCost {
  double seconds = 0;
  /// Overhead plus hop latencies; seconds - latency is the bandwidth term.
  double latencySeconds = 0;
  /// The algorithm priced (Auto when a profiled curve gave the time).
  Algorithm algorithm = Algorithm::Auto;
  bool profiled = false;
};

/// The time of one collective of `bytes` (see above) over `group`. A group
/// of one rank, or zero bytes, costs nothing. With `profile` holding a
/// curve for this collective, group size, ranks per node and concurrency,
/// and Algorithm::Auto, the curve replaces the formulas.
absl::StatusOr<CollectiveCost>
estimateCollective(Collective kind, double bytes, const Group &group,
                   const Cluster &cluster, const Profile *profile = nullptr,
                   const CollectiveOptions &options = {});

/// The same over a group already placed (placeGroup): a planner pricing
/// many collectives over the same few groups places each once.
absl::StatusOr<CollectiveCost>
estimateCollective(Collective kind, double bytes,
                   const GroupPlacement &placement, const Cluster &cluster,
                   const Profile *profile = nullptr,
                   const CollectiveOptions &options = {});

/// What one collective between compute (tensor, context or expert
/// parallelism's, inside the layers) waits beyond its own time on ranks
/// that share cores: time-sliced ranks reach it at different times, and the
/// first to arrive waits for the last, whatever the collective's size. The
/// profile's in_step_collective_wait was measured with every rank of a node
/// busy (steps of a GEMM and a 1 MiB all-gather, less the GEMMs and the
/// gathers alone); an older profile's in_step_collective_slowdown s gives
/// (s - 1) x its own 1 MiB all-gather. Where not every rank is busy at once
/// (a pipeline with few microbatches, its stages taking turns) the wait
/// shrinks as far as the busy ranks stop outnumbering the cores: times
/// (c - 1) / (D / C - 1), c being cluster.computeSharing() (work-weighted
/// busy ranks per core) and D / C its value with every rank busy. 0 where
/// ranks do not share cores or the profile measured no wait.
double inStepCollectiveWait(const Cluster &cluster, const Profile *profile);

/// nccl-tests' bus bandwidth of a collective of `bytes` over `groupSize`
/// ranks that took `seconds`.
double busBandwidth(Collective kind, double bytes, int64_t groupSize,
                    double seconds);

/// What collectives of `comm` seconds, spread over a pass of `pass`
/// seconds through `layers` layers (ZeRO-2/3's reduce-scatters and
/// prefetched gathers), add to it. Where they run beside the compute
/// (`hidden` = 1: the device's collectives progress on their own) only
/// what outlasts the pass and one layer's share (the first gather, the
/// last reduce-scatter) extend it, never more than all of them; where they
/// stall it (0), all of it; a share between weighs the two.
double collectivesBesidePass(double pass, double comm, double layers,
                             double hidden);

/// The share of a window of collectives kept in flight beside compute
/// (ZeRO-2/3's in the backward pass, each waited for layers later) that
/// the compute hides: 1 where the cluster's communication overlaps its
/// compute; elsewhere (MPI on CPU ranks, no progress engine) the profile's
/// collective_window_hidden, measured by the profiler's MPI worker, and 0
/// without one (each collective then moves only inside the MPI calls that
/// start and wait for it: measured on 4 ranks sharing 2 cores, a window of
/// 4 MiB reduce-scatters between GEMMs hid 0-5% of their time).
double collectiveWindowHidden(const Cluster &cluster, const Profile *profile);

} // namespace cleave::cost

#endif // CLEAVE_COST_MODEL_COLLECTIVES_H
