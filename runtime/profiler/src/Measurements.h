//===- Measurements.h - The profiler's phases -------------------*- C++ -*-===//
//
// Each phase measures one part of the profile; profileCpu runs them in turn.
// They report progress through the options' callback and fail only on
// what they cannot recover from (a missing worker, a grid the table
// rejects).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_PROFILER_SRC_MEASUREMENTS_H
#define CLEAVE_RUNTIME_PROFILER_SRC_MEASUREMENTS_H

#include "cleave/runtime/profiler/CpuProfiler.h"

#include "cleave/cost_model/Collectives.h"
#include "cleave/cost_model/Profile.h"

#include "absl/status/statusor.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cleave::profiler {

/// The M, N and K values of the GEMM grid (the same on every axis).
std::vector<int64_t> gemmGridDimensions(bool quick);

/// fp32 GEMM times of the CPU kernels' matmul over the full grid.
absl::StatusOr<cost::GemmTable> profileGemms(const CpuProfileOptions &options);

struct MemoryMeasurements {
  double bandwidth = 0;      ///< bytes/s of one thread's streaming add
  double kernelOverhead = 0; ///< seconds of an add of one element
};

MemoryMeasurements profileMemory(const CpuProfileOptions &options);

/// Collective sizes in bytes: powers of 4 from 1 KiB to 64 MiB (fewer when
/// quick).
std::vector<int64_t> collectiveSizes(bool quick);

/// The side of a GEMM that every rank multiplies at once in the MPI
/// worker's shared-core measurement (a point of every GEMM grid).
inline constexpr int64_t kSharedGemmSize = 512;
/// Launches of the MPI worker whose collective times are pooled (one with
/// the quick grid): see profileCollectives.
inline constexpr int kCollectiveLaunches = 3;

/// What the MPI worker measured across options.ranks local ranks.
struct RankMeasurements {
  /// Its curves, keyed by kind, group size = ranks, all on one node.
  std::map<cost::CollectiveKey, cost::CollectiveCurve> curves;
  /// Where ranks outnumber the cores: wall seconds per kSharedGemmSize^3
  /// GEMM with every rank multiplying at once (all ranks together), per
  /// GEMM of a rank with a core to itself, and the median over rounds of
  /// the two back to back of alone / (shared x cores); 0: not measured.
  double sharedGemmSeconds = 0, aloneGemmSeconds = 0,
         sharedCoreEfficiency = 0;
  /// Where ranks outnumber the cores: seconds per kSharedGemmSize^3 GEMM of
  /// one of `cores` multiplying ranks while the others wait on one of them
  /// as the runtime's pipeline stages wait, and while they idle (sleeping
  /// between tests); 0: not measured.
  double waitingGemmSeconds = 0, idleGemmSeconds = 0;
  /// Where ranks outnumber the cores: seconds per step of a
  /// kSharedGemmSize^3 GEMM followed by an all-gather of its output (pair),
  /// of the GEMMs alone and of the gathers alone, every rank at once; 0:
  /// not measured.
  double inStepPairSeconds = 0, inStepGemmSeconds = 0,
         inStepGatherSeconds = 0;
  /// Seconds per step of GEMMs and a reduce-scatter kept in flight in
  /// ZeRO's window (windowed), waited for at once (stalled), of the GEMMs
  /// alone and of the reduce-scatters alone; 0: not measured.
  double windowedSeconds = 0, stalledSeconds = 0, windowGemmSeconds = 0,
         windowScatterSeconds = 0;
};

/// The share of a window of collectives in flight beside compute that the
/// compute hides, from the window-scatter times: (GEMMs + reduce-scatter
/// - windowed) / reduce-scatter, clamped to [0, 1].
double collectiveWindowHidden(double windowedSeconds, double gemmSeconds,
                              double scatterSeconds);

/// How long a collective between compute waits beyond its time alone,
/// from the in-step-gather times: pair - GEMM - gather, at least 0.
double inStepCollectiveWait(double pairSeconds, double gemmSeconds,
                            double gatherSeconds);

/// The share of a core a waiting rank takes, from the waiting-gemm times:
/// with `cores` ranks multiplying, one each, and `ranks - cores` waiting,
/// their waits slow the multipliers by (cores + load x waiting) / cores
/// against idle ranks. Clamped to [0, 1].
double waitingRankLoad(double waitingSeconds, double idleSeconds, int ranks,
                       int cores);

/// Runs the MPI worker under mpirun on options.ranks local ranks.
absl::StatusOr<RankMeasurements>
profileCollectives(const CpuProfileOptions &options);

/// One line of the worker's output: "result KIND BYTES SECONDS".
struct WorkerResult {
  cost::Collective kind = cost::Collective::AllReduce;
  double bytes = 0;
  double seconds = 0;
};

/// The result on `line`; nullopt for other lines (MPI's own messages); an
/// error for a result line that does not parse.
absl::StatusOr<std::optional<WorkerResult>>
parseWorkerLine(std::string_view line);

/// The worker's results as curves for `ranks` local ranks, the median of
/// a size's results where it has several (rounds and launches). Fails
/// unless every collective has a result.
absl::StatusOr<std::map<cost::CollectiveKey, cost::CollectiveCurve>>
curvesFromResults(const std::vector<WorkerResult> &results, int ranks);

} // namespace cleave::profiler

#endif // CLEAVE_RUNTIME_PROFILER_SRC_MEASUREMENTS_H
