//===- CpuProfiler.cpp - Measure this machine for the cost model ----------===//

#include "cleave/runtime/profiler/CpuProfiler.h"

#include "Measurements.h"
#include "Timing.h"

#include "cleave/cost_model/Collectives.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <dlfcn.h>
#include <fstream>
#include <sstream>
#include <thread>
#include <unistd.h>

namespace cleave::profiler {
namespace {

absl::Status checkOptions(const CpuProfileOptions &options) {
  if (options.ranks < 0 || options.ranks == 1)
    return absl::InvalidArgumentError(
        "ranks must be 0 (no collectives) or at least 2 (got " +
        std::to_string(options.ranks) + ")");
  if (!(options.secondsPerMeasurement > 0) ||
      !std::isfinite(options.secondsPerMeasurement))
    return absl::InvalidArgumentError(
        "secondsPerMeasurement must be a positive time");
  if (!(options.mpiTimeoutSeconds > 0))
    return absl::InvalidArgumentError(
        "mpiTimeoutSeconds must be a positive time");
  return absl::OkStatus();
}

bool wantsCollectives(const CpuProfileOptions &options) {
  return options.ranks > 0 && !options.mpiWorker.empty();
}

// OpenBLAS is reached through the generic BLAS interface, which may be
// another implementation; its own functions are looked up, not linked.
std::string openBlasDescription() {
  using GetConfig = char *(*)();
  using GetThreads = int (*)();
  auto config =
      reinterpret_cast<GetConfig>(dlsym(RTLD_DEFAULT, "openblas_get_config"));
  auto threads = reinterpret_cast<GetThreads>(
      dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  if (!config || !threads)
    return "a BLAS other than OpenBLAS (threads as it configures them)";
  std::string out = std::string("OpenBLAS (") + config() + ") with " +
                    std::to_string(threads()) + " threads, as configured";
  for (const char *name : {"OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"})
    if (const char *value = std::getenv(name))
      out += std::string(" (") + name + "=" + value + ")";
  return out;
}

std::string cpuModel() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line))
    if (line.rfind("model name", 0) == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos && colon + 2 <= line.size())
        return line.substr(colon + 2);
    }
  return "unknown CPU";
}

} // namespace

absl::StatusOr<cost::Profile> profileCpu(const CpuProfileOptions &options) {
  if (absl::Status status = checkOptions(options); !status.ok())
    return status;
  auto progress = [&](const std::string &line) {
    if (options.progress)
      options.progress(line);
  };

  cost::Profile profile;
  // Collectives first: a broken MPI setup fails in seconds, not after the
  // GEMM grid.
  double sharedCoreEfficiency = 0;
  RankMeasurements waits;
  if (wantsCollectives(options)) {
    absl::StatusOr<RankMeasurements> measured = profileCollectives(options);
    if (!measured.ok())
      return measured.status();
    profile.collectives = std::move(measured->curves);
    sharedCoreEfficiency = measured->sharedCoreEfficiency;
    waits.waitingGemmSeconds = measured->waitingGemmSeconds;
    waits.idleGemmSeconds = measured->idleGemmSeconds;
    waits.inStepPairSeconds = measured->inStepPairSeconds;
    waits.inStepGemmSeconds = measured->inStepGemmSeconds;
    waits.inStepGatherSeconds = measured->inStepGatherSeconds;
    waits.windowedSeconds = measured->windowedSeconds;
    waits.windowGemmSeconds = measured->windowGemmSeconds;
    waits.windowScatterSeconds = measured->windowScatterSeconds;
    cost::CollectiveKey allReduce{cost::Collective::AllReduce, options.ranks,
                                  options.ranks, 1};
    const cost::CollectiveSample &largest =
        profile.collectives.at(allReduce).samples().back();
    profile.intraNodeBusBandwidth =
        cost::busBandwidth(cost::Collective::AllReduce, largest.bytes,
                           options.ranks, largest.seconds);
  } else {
    progress(
        "collectives: skipped (" +
        std::string(options.ranks == 0 ? "no ranks" : "no MPI worker given") +
        ")");
  }

  absl::StatusOr<cost::GemmTable> gemm = profileGemms(options);
  if (!gemm.ok())
    return gemm.status();
  profile.gemm.emplace(cost::DType::Fp32, *std::move(gemm));
  // Ranks beyond the cores: their GEMMs at once against the cores each
  // running one alone (what time-slicing and shared caches cost), both
  // measured by the MPI worker in rounds back to back.
  int cores = static_cast<int>(std::thread::hardware_concurrency());
  if (sharedCoreEfficiency > 0 && cores > 0 && options.ranks > cores) {
    profile.sharedCoreEfficiency = sharedCoreEfficiency;
    progress("shared cores: " + std::to_string(options.ranks) +
             " ranks on " + std::to_string(cores) + " cores multiply at " +
             std::to_string(*profile.sharedCoreEfficiency) +
             " of the cores' rate alone");
  }
  if (waits.idleGemmSeconds > 0 && cores > 0 &&
      options.ranks > cores) {
    profile.waitingRankLoad = waitingRankLoad(
        waits.waitingGemmSeconds, waits.idleGemmSeconds,
        options.ranks, cores);
    progress("waiting ranks: each takes " +
             std::to_string(*profile.waitingRankLoad) +
             " of a core from the ranks that compute");
  }
  if (waits.inStepGatherSeconds > 0 && cores > 0 && options.ranks > cores) {
    profile.inStepCollectiveWait = inStepCollectiveWait(
        waits.inStepPairSeconds, waits.inStepGemmSeconds,
        waits.inStepGatherSeconds);
    progress("collectives between compute: each waits " +
             std::to_string(*profile.inStepCollectiveWait * 1e6) +
             " us beyond its time alone");
  }

  // MPI has no progress engine on CPU ranks: a window of collectives kept
  // in flight moves only inside MPI calls, whether or not ranks share
  // cores.
  if (waits.windowScatterSeconds > 0) {
    profile.collectiveWindowHidden = collectiveWindowHidden(
        waits.windowedSeconds, waits.windowGemmSeconds,
        waits.windowScatterSeconds);
    progress("collectives in ZeRO's window: the compute hides " +
             std::to_string(*profile.collectiveWindowHidden) +
             " of their time");
  }

  MemoryMeasurements memory = profileMemory(options);
  profile.memoryBandwidth = memory.bandwidth;
  profile.kernelOverhead = memory.kernelOverhead;
  return profile;
}

std::string cpuProfileComment(const CpuProfileOptions &options) {
  char host[256] = "unknown host";
  if (gethostname(host, sizeof(host)) != 0)
    std::snprintf(host, sizeof(host), "unknown host");
  host[sizeof(host) - 1] = '\0';
  char date[64] = "";
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  std::strftime(date, sizeof(date), "%Y-%m-%d %H:%M UTC", &utc);

  std::ostringstream out;
  out << "Measured by `cleave profile --backend cpu` on " << host << ", "
      << date << (options.quick ? " (quick grid)" : "") << ".\n"
      << "CPU: " << cpuModel() << ", " << std::thread::hardware_concurrency()
      << " logical CPUs.\n"
      << "gemm fp32: the CPU kernels' matmul through " << openBlasDescription()
      << ".\n"
      << "memory: one thread's add over 64 MiB arrays (2 reads + 1 write an "
         "element).\n"
      << "kernel_overhead: that add on one element.\n";
  if (wantsCollectives(options))
    out << "collectives: " << options.ranks
        << " local MPI ranks (mpirun --bind-to none --mca "
           "mpi_yield_when_idle 1),\n"
           "sizes as nccl-tests prints them; intra_node_bus: the all-reduce "
           "bus bandwidth at "
        << formatBytes(
               static_cast<double>(collectiveSizes(options.quick).back()))
        << ".\n"
        << "compute.shared_core_efficiency (where the ranks outnumber the "
           "cores): their "
        << kSharedGemmSize << "^3 GEMMs all at once against each core "
        << "running one alone (the median of 7 rounds of the two back to "
           "back).\n"
        << "compute.waiting_rank_load (same condition): one rank a core "
           "multiplies while the others wait on it as pipeline stages wait, "
           "against idle; the share of a core each waiting rank takes.\n"
        << "compute.in_step_collective_wait (same condition): steps of "
           "that GEMM and an all-gather of 1 MiB of its output, every rank "
           "at once, less the GEMMs alone and the gathers alone.";
  else
    out << "collectives: not measured.";
  return out.str();
}

} // namespace cleave::profiler
