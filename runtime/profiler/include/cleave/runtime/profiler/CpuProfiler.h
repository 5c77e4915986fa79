//===- CpuProfiler.h - Measure this machine for the cost model --*- C++ -*-===//
//
// `cleave profile --backend cpu` measures what the cost model's `cpu-local`
// cluster otherwise guesses: fp32 GEMM times of the CPU kernels (OpenBLAS)
// on a grid of shapes, the streaming bandwidth and per-call overhead of one
// kernel, and MPI collective times across local ranks. The result is a
// cost::Profile; cost::formatProfile writes it, with cpuProfileComment as
// its header, and the compiler reads it back with --profile.
//
// Collectives need several processes, so they are measured by a separate
// MPI program (tools/cleave-profile-mpi) that this library launches under
// mpirun and whose output it parses; the library itself links no MPI.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_PROFILER_CPUPROFILER_H
#define CLEAVE_RUNTIME_PROFILER_CPUPROFILER_H

#include "cleave/cost_model/Profile.h"

#include "absl/status/statusor.h"

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace cleave::profiler {

struct CpuProfileOptions {
  /// Local MPI ranks for the collective curves: 0 skips collectives,
  /// otherwise at least 2.
  int ranks = 2;
  /// Target measuring time per point: a point repeats until it has run this
  /// long and at least 3 times, and its time is the median repeat.
  double secondsPerMeasurement = 0.05;
  /// A small grid (GEMM dimensions and collective sizes), for tests.
  bool quick = false;
  /// The cleave-profile-mpi binary; empty skips collectives.
  std::string mpiWorker;
  /// How to start MPI programs: looked up on PATH unless it has a '/'.
  std::string mpirun = "mpirun";
  /// mpirun is killed after this long, so that a stuck MPI never hangs the
  /// profiler.
  double mpiTimeoutSeconds = 120;
  /// Called with one line per phase and per point, such as
  /// "gemm 7/27: 32x512x32 fp32 11.5 us (90.9 GFLOP/s)".
  std::function<void(const std::string &)> progress;
};

/// Measures this machine. Fails on bad options, a missing or failing MPI
/// worker (the message names it and quotes its last output lines), or
/// measurements the profile format rejects.
absl::StatusOr<cost::Profile> profileCpu(const CpuProfileOptions &options);

/// The `#` header for cost::formatProfile: host name, date, ranks, the
/// OpenBLAS build and thread count, and what each number means on a CPU.
std::string cpuProfileComment(const CpuProfileOptions &options);

/// The OpenBLAS kernels for this machine (cleave/runtime/kernels/
/// BlasKernels.h): `worker --blas-probe` (cleave-worker) times the kernels
/// OpenBLAS loads by itself and each other core type the CPU can run, one
/// thread each; the fastest is chosen if it beats the default by more than
/// 2%, and stored in the choice cache that cleave-worker and the profiler
/// adopt when they start.
struct BlasKernelChoice {
  std::string defaultCore, chosen;
  /// (core type, GFLOP/s), the default first.
  std::vector<std::pair<std::string, double>> rates;
  std::string cachePath;
  bool stored = false;
};
absl::StatusOr<BlasKernelChoice> chooseBlasKernels(const std::string &worker,
                                                   double timeoutSeconds = 60);

/// One line: each core type's rate and the choice.
std::string describeBlasChoice(const BlasKernelChoice &choice);

} // namespace cleave::profiler

#endif // CLEAVE_RUNTIME_PROFILER_CPUPROFILER_H
