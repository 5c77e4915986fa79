//===- Profile.h - Measured kernel and collective times ---------*- C++ -*-===//
//
// What the profiler measures on a real machine, to replace the formulas:
// GEMM times on a grid of shapes per dtype, achieved bandwidths, and
// collective time-versus-bytes curves per group shape. Anything absent
// falls back to the cluster's formulas.
//
// Interpolation is in log space, where kernel times are close to piecewise
// linear: a GEMM time is the trilinear interpolation of log(time) over
// log(M), log(N), log(K) between the 8 grid points around the query; a
// collective time is linear in log(time) over log(bytes) between the two
// samples around it. Beyond the grid a GEMM keeps the efficiency of the
// nearest grid point (its time scales with FLOPs); a collective keeps its
// smallest time below the smallest sample (latency) and its last marginal
// bandwidth above the largest.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_COST_MODEL_PROFILE_H
#define CLEAVE_COST_MODEL_PROFILE_H

#include "cleave/cost_model/Collectives.h"
#include "cleave/cost_model/DType.h"

#include "absl/status/statusor.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace cleave::cost {

struct GemmSample {
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  double seconds = 0;
};

/// GEMM times on the full grid Ms x Ns x Ks of one dtype.
class GemmTable {
public:
  /// Fails unless the samples cover every point of the grid their distinct
  /// M, N and K values span (the message names a missing point), all
  /// dimensions and times are positive, and no point repeats.
  static absl::StatusOr<GemmTable> create(std::vector<GemmSample> samples);

  /// Seconds of one (m x k) * (k x n) product, interpolated.
  double seconds(int64_t m, int64_t n, int64_t k) const;

  const std::vector<int64_t> &ms() const { return ms_; }
  const std::vector<int64_t> &ns() const { return ns_; }
  const std::vector<int64_t> &ks() const { return ks_; }

private:
  double logSecondsAt(size_t i, size_t j, size_t l) const;

  std::vector<int64_t> ms_, ns_, ks_;
  std::vector<double> logSeconds_; // [i][j][l] flattened, l fastest
};

struct CollectiveSample {
  double bytes = 0;
  double seconds = 0;
};

/// Time versus bytes of one collective on one group shape.
class CollectiveCurve {
public:
  /// Fails unless there is at least one sample, sizes and times are
  /// positive, and no size repeats.
  static absl::StatusOr<CollectiveCurve>
  create(std::vector<CollectiveSample> samples);

  double seconds(double bytes) const;

  const std::vector<CollectiveSample> &samples() const { return samples_; }

private:
  std::vector<CollectiveSample> samples_; // sorted by bytes
};

/// What a collective curve was measured on.
struct CollectiveKey {
  Collective kind = Collective::AllReduce;
  int64_t groupSize = 0;
  int64_t ranksPerNode = 0;
  int64_t concurrentGroups = 1;

  bool operator<(const CollectiveKey &other) const {
    return std::tie(kind, groupSize, ranksPerNode, concurrentGroups) <
           std::tie(other.kind, other.groupSize, other.ranksPerNode,
                    other.concurrentGroups);
  }
};

struct Profile {
  std::map<DType, GemmTable> gemm;
  /// Achieved memory bandwidth (replaces nominal x efficiency.memory).
  std::optional<double> memoryBandwidth;
  /// NCCL bus bandwidth inside a node (replaces link x nccl_intra_node).
  std::optional<double> intraNodeBusBandwidth;
  /// Achieved bandwidth per NIC (replaces nominal x nccl_inter_node).
  std::optional<double> nicBandwidth;
  /// Per kernel (replaces efficiency.kernel_overhead).
  std::optional<double> kernelOverhead;
  /// Where ranks outnumber the cores they share (CPU ranks): the GEMM
  /// throughput of those ranks running at once, against the cores each
  /// running one alone ([compute] shared_core_efficiency). Time-slicing,
  /// caches and memory bandwidth shared by more working sets make it less
  /// than 1; the cost model divides shared compute time by it.
  std::optional<double> sharedCoreEfficiency;
  /// Where ranks outnumber the cores: the share of a core a rank takes
  /// while it waits on another ([compute] waiting_rank_load): 0 when its
  /// wait sleeps, 1 when it spins a whole core. (Open MPI's own wait
  /// polls; the runtime's pipeline waits sleep between tests there.)
  std::optional<double> waitingRankLoad;
  /// Where ranks outnumber the cores: how long a collective between
  /// compute (a tensor-parallel layer's) waits beyond its time alone,
  /// seconds ([compute] in_step_collective_wait): time-sliced ranks reach
  /// it at different times, and the first waits for the last, however
  /// small the collective. The cost model adds it to each of the layers'
  /// collectives there (cost::inStepCollectiveWait).
  std::optional<double> inStepCollectiveWait;
  /// The same measured as a factor on a 1 MiB all-gather's time
  /// ([compute] in_step_collective_slowdown, at least 1), as profiles
  /// before in_step_collective_wait held it; read for those only, and
  /// turned into a wait with the profile's own 1 MiB all-gather.
  std::optional<double> inStepCollectiveSlowdown;
  /// Where the device's collectives have no progress engine of their own
  /// (MPI on CPU ranks, comm_overlaps_compute = 0): the share of a window
  /// of collectives kept in flight beside compute (ZeRO-2/3's
  /// reduce-scatters in the backward pass, each waited for layers later)
  /// that the compute hides ([compute] collective_window_hidden, 0 to 1).
  /// The cost model prices such a window at this share of the way from
  /// stalling the pass (0) to running beside it (1)
  /// (cost::collectiveWindowHidden).
  std::optional<double> collectiveWindowHidden;
  std::map<CollectiveKey, CollectiveCurve> collectives;

  const GemmTable *findGemm(DType type) const;
  const CollectiveCurve *findCollective(const CollectiveKey &key) const;
};

/// Parses the profile format (docs/cluster-format.md, "Profiles"); errors
/// name `fileName:line`.
absl::StatusOr<Profile> parseProfileText(std::string_view text,
                                         std::string_view fileName);
absl::StatusOr<Profile> loadProfileFile(const std::string &path);

/// Writes `profile` in the format parseProfileText reads, every value with
/// twelve significant digits so that it reads back within 1e-12 (the
/// profiler writes what it measured; people edit the file by hand). Each
/// line of `comment` becomes a `#` line at the top: where and how the
/// numbers were measured, which the format has no field for.
std::string formatProfile(const Profile &profile,
                          std::string_view comment = {});

} // namespace cleave::cost

#endif // CLEAVE_COST_MODEL_PROFILE_H
