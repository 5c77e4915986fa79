//===- CollectiveProfile.cpp - MPI collective curves across local ranks ---===//
//
// The collectives run in tools/cleave-profile-mpi under mpirun; this side
// builds its command line, reads its results as they come (for progress),
// and turns them into the profile's curves. Sizes are the cost model's:
// the per-rank buffer nccl-tests prints (Collectives.h), which the worker
// reports exactly (it rounds a size down to a whole element per rank).
//
//===----------------------------------------------------------------------===//

#include "Measurements.h"
#include "cleave/runtime/subprocess/Subprocess.h"
#include "Timing.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <sstream>
#include <thread>
#include <unistd.h>

namespace cleave::profiler {
namespace {

constexpr cost::Collective kAllCollectives[] = {
    cost::Collective::AllReduce,     cost::Collective::AllGather,
    cost::Collective::ReduceScatter, cost::Collective::AllToAll,
    cost::Collective::Broadcast,     cost::Collective::SendRecv};

bool parseNumber(std::string_view text, double &value) {
  auto [ptr, ec] =
      std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && ptr == text.data() + text.size();
}

std::vector<std::string_view> words(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t'))
      ++i;
    size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t')
      ++i;
    if (i > start)
      out.push_back(line.substr(start, i - start));
  }
  return out;
}

std::string quoteLines(const std::vector<std::string> &lines) {
  if (lines.empty())
    return " (it printed nothing)";
  std::string out = "; its last output:";
  for (const std::string &line : lines)
    out += "\n  " + line;
  return out;
}

} // namespace

double waitingRankLoad(double waitingSeconds, double idleSeconds, int ranks,
                       int cores) {
  int waiting = ranks - cores;
  if (waiting < 1 || cores < 1 || !(idleSeconds > 0))
    return 0;
  double load = (waitingSeconds / idleSeconds - 1) * cores / waiting;
  return std::clamp(load, 0.0, 1.0);
}

double inStepCollectiveWait(double pairSeconds, double gemmSeconds,
                            double gatherSeconds) {
  return std::max(0.0, pairSeconds - gemmSeconds - gatherSeconds);
}

double collectiveWindowHidden(double windowedSeconds, double gemmSeconds,
                              double scatterSeconds) {
  if (!(scatterSeconds > 0))
    return 0;
  double hidden =
      (gemmSeconds + scatterSeconds - windowedSeconds) / scatterSeconds;
  return std::clamp(hidden, 0.0, 1.0);
}

std::vector<int64_t> collectiveSizes(bool quick) {
  // Powers of 4 from 1 KiB: latency-bound at the bottom, at the bus
  // bandwidth at the top.
  int64_t last = quick ? int64_t(256) << 10 : int64_t(64) << 20;
  int64_t step = quick ? 16 : 4;
  std::vector<int64_t> sizes;
  for (int64_t bytes = 1024; bytes <= last; bytes *= step)
    sizes.push_back(bytes);
  return sizes;
}

absl::StatusOr<std::optional<WorkerResult>>
parseWorkerLine(std::string_view line) {
  std::vector<std::string_view> parts = words(line);
  if (parts.empty() || parts[0] != "result")
    return std::nullopt;
  auto bad = [&] {
    return absl::InvalidArgumentError(
        "bad result line from the MPI worker: '" + std::string(line) +
        "' (expected 'result KIND BYTES SECONDS')");
  };
  if (parts.size() != 4)
    return bad();
  absl::StatusOr<cost::Collective> kind = cost::parseCollective(parts[1]);
  WorkerResult result;
  if (!kind.ok() || !parseNumber(parts[2], result.bytes) ||
      !parseNumber(parts[3], result.seconds))
    return bad();
  result.kind = *kind;
  return result;
}

absl::StatusOr<std::map<cost::CollectiveKey, cost::CollectiveCurve>>
curvesFromResults(const std::vector<WorkerResult> &results, int ranks) {
  std::map<cost::CollectiveKey, cost::CollectiveCurve> curves;
  for (cost::Collective kind : kAllCollectives) {
    // Every size is timed several times (rounds of the worker, launches
    // of it); the median stands. Not the fastest, as for the GEMMs: the
    // same collective runs 2-2.5x as fast in one placement of the ranks
    // on the shared cores as in another, for seconds at a time and for
    // whole launches (an all-reduce of 1 MiB on 4 ranks here: 0.5 or 1.3
    // ms), and a step's collectives meet either.
    std::map<double, std::vector<double>> times;
    for (const WorkerResult &result : results)
      if (result.kind == kind)
        times[result.bytes].push_back(result.seconds);
    std::vector<cost::CollectiveSample> samples;
    for (auto &[bytes, seconds] : times) {
      std::sort(seconds.begin(), seconds.end());
      size_t mid = seconds.size() / 2;
      double median = seconds.size() % 2
                          ? seconds[mid]
                          : 0.5 * (seconds[mid - 1] + seconds[mid]);
      samples.push_back({bytes, median});
    }
    if (samples.empty())
      return absl::InvalidArgumentError(
          "the MPI worker reported no " +
          std::string(cost::collectiveName(kind)) + " results");
    absl::StatusOr<cost::CollectiveCurve> curve =
        cost::CollectiveCurve::create(std::move(samples));
    if (!curve.ok())
      return absl::InvalidArgumentError(
          std::string(cost::collectiveName(kind)) + ": " +
          std::string(curve.status().message()));
    // A send-recv is priced on its pair of ranks (estimateCollective wants
    // a group of 2), whatever the number of ranks that ran.
    int64_t groupSize = kind == cost::Collective::SendRecv ? 2 : ranks;
    cost::CollectiveKey key;
    key.kind = kind;
    key.groupSize = groupSize;
    key.ranksPerNode = groupSize;
    key.concurrentGroups = 1;
    curves.emplace(key, *std::move(curve));
  }
  return curves;
}

absl::StatusOr<RankMeasurements>
profileCollectives(const CpuProfileOptions &options) {
  const std::string &worker = options.mpiWorker;
  if (access(worker.c_str(), X_OK) != 0)
    return absl::NotFoundError("MPI worker '" + worker +
                               "' is missing or not executable (build the "
                               "cleave-profile-mpi target)");

  // The worker runs several times: where ranks share cores, the placement
  // the scheduler gives them at the start of a launch can hold for the
  // whole launch and sets how fast its collectives run (curvesFromResults).
  // Each launch gets its share of the time; the GEMMs sharing the cores
  // are timed in the last.
  const int launches = options.quick ? 1 : kCollectiveLaunches;
  std::ostringstream seconds;
  seconds << options.secondsPerMeasurement / launches;
  // --oversubscribe: more ranks than cores is allowed (slow, not wrong);
  // --bind-to none: the ranks share the cores with this process.
  // mpi_yield_when_idle: a rank waiting on another yields its core instead
  // of spinning. Open MPI spins when ranks <= cores, and then any other load
  // on the machine (a build, a test running beside) turns every wait into a
  // scheduler time slice: 1 KiB all-reduces measured 8 ms on 2 busy cores,
  // against 1-4 us yielding.
  std::vector<std::string> argv = {options.mpirun,
                                   "-n",
                                   std::to_string(options.ranks),
                                   "--oversubscribe",
                                   "--allow-run-as-root",
                                   "--bind-to",
                                   "none",
                                   "--mca",
                                   "mpi_yield_when_idle",
                                   "1",
                                   worker,
                                   "--seconds",
                                   seconds.str()};
  std::vector<std::string> gemmArgs = {"--gemm",
                                       std::to_string(kSharedGemmSize)};
  // Ranks beyond the cores: also what a waiting rank takes from the others.
  int cores = static_cast<int>(std::thread::hardware_concurrency());
  if (cores > 0 && options.ranks > cores) {
    gemmArgs.push_back("--cores");
    gemmArgs.push_back(std::to_string(cores));
  }
  for (int64_t bytes : collectiveSizes(options.quick))
    argv.push_back(std::to_string(bytes));

  // Containers often run as root, which Open MPI refuses without these.
  std::vector<std::string> environment = {"OMPI_ALLOW_RUN_AS_ROOT=1",
                                          "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"};
  std::vector<WorkerResult> results;
  RankMeasurements measured;
  absl::Status lineError = absl::OkStatus();
  auto onLine = [&](const std::string &line) {
    std::vector<std::string_view> parts = words(line);
    // "NAME SIZE SECONDS...": the worker's timings besides the curves,
    // every one positive. Returns whether the line was NAME's.
    auto timings = [&](std::string_view name,
                       std::initializer_list<double *> seconds) {
      if (parts.size() != 2 + seconds.size() || parts[0] != name)
        return false;
      size_t i = 2;
      for (double *out : seconds)
        if (!parseNumber(parts[i++], *out) || !(*out > 0)) {
          if (lineError.ok())
            lineError = absl::InvalidArgumentError(
                "bad " + std::string(name) + " line from the MPI worker: '" +
                line + "'");
          return true;
        }
      return true;
    };
    auto say = [&](const std::string &text) {
      if (options.progress && lineError.ok())
        options.progress(text);
    };
    if (timings("shared-gemm",
                {&measured.sharedGemmSeconds, &measured.aloneGemmSeconds,
                 &measured.sharedCoreEfficiency})) {
      say("GEMMs on " + std::to_string(options.ranks) + " ranks at once: " +
          formatSeconds(measured.sharedGemmSeconds) + " per " +
          std::to_string(kSharedGemmSize) + "^3 GEMM, all ranks together; " +
          formatSeconds(measured.aloneGemmSeconds) + " a rank with a core " +
          "to itself");
      return;
    }
    if (timings("waiting-gemm",
                {&measured.waitingGemmSeconds, &measured.idleGemmSeconds})) {
      say("GEMMs beside waiting ranks: " +
          formatSeconds(measured.waitingGemmSeconds) +
          ", beside idle ones: " + formatSeconds(measured.idleGemmSeconds));
      return;
    }
    if (timings("in-step-gather",
                {&measured.inStepPairSeconds, &measured.inStepGemmSeconds,
                 &measured.inStepGatherSeconds})) {
      say("a GEMM then a gather: " +
          formatSeconds(measured.inStepPairSeconds) +
          " a step, the GEMMs alone " +
          formatSeconds(measured.inStepGemmSeconds) + ", the gathers alone " +
          formatSeconds(measured.inStepGatherSeconds));
      return;
    }
    if (timings("window-scatter",
                {&measured.windowedSeconds, &measured.stalledSeconds,
                 &measured.windowGemmSeconds,
                 &measured.windowScatterSeconds})) {
      say("GEMMs and reduce-scatters in ZeRO's window: " +
          formatSeconds(measured.windowedSeconds) + " a step, waited at " +
          "once " + formatSeconds(measured.stalledSeconds) +
          ", the GEMMs alone " + formatSeconds(measured.windowGemmSeconds) +
          ", the reduce-scatters alone " +
          formatSeconds(measured.windowScatterSeconds));
      return;
    }
    absl::StatusOr<std::optional<WorkerResult>> result = parseWorkerLine(line);
    if (!result.ok()) {
      if (lineError.ok())
        lineError = result.status();
      return;
    }
    if (!*result)
      return;
    const WorkerResult &r = **result;
    results.push_back(r);
    if (options.progress)
      options.progress(std::string(cost::collectiveName(r.kind)) + " " +
                       formatBytes(r.bytes) + ": " + formatSeconds(r.seconds) +
                       " (" +
                       formatRate(cost::busBandwidth(
                           r.kind, r.bytes, options.ranks, r.seconds)) +
                       " bus)");
  };
  for (int launch = 1; launch <= launches; ++launch) {
    std::vector<std::string> args = argv;
    if (launch == launches)
      args.insert(std::find(args.begin(), args.end(), "--seconds"),
                  gemmArgs.begin(), gemmArgs.end());
    if (options.progress) {
      std::string command;
      for (const std::string &arg : args)
        command += (command.empty() ? "" : " ") + arg;
      options.progress("collectives, launch " + std::to_string(launch) +
                       " of " + std::to_string(launches) + ": " + command);
    }
    subprocess::MpiSessionDirectory session;
    std::vector<std::string> env = environment;
    for (const std::string &entry : session.environment())
      env.push_back(entry);
    absl::StatusOr<subprocess::ProcessOutcome> outcome =
        subprocess::runProcess(args, env, options.mpiTimeoutSeconds, onLine);
    if (!outcome.ok())
      return absl::NotFoundError(std::string(outcome.status().message()) +
                                 " (needed to run the MPI worker '" + worker +
                                 "')");
    if (outcome->timedOut) {
      std::ostringstream message;
      message << "MPI worker '" << worker << "' did not finish within "
              << options.mpiTimeoutSeconds << " s and was stopped"
              << quoteLines(outcome->lastLines);
      return absl::DeadlineExceededError(message.str());
    }
    if (outcome->exitStatus != 0)
      return absl::InternalError("MPI worker '" + worker + "' under " +
                                 options.mpirun + " failed with status " +
                                 std::to_string(outcome->exitStatus) +
                                 quoteLines(outcome->lastLines));
    if (!lineError.ok())
      return lineError;
  }
  absl::StatusOr<std::map<cost::CollectiveKey, cost::CollectiveCurve>> curves =
      curvesFromResults(results, options.ranks);
  if (!curves.ok())
    return curves.status();
  measured.curves = *std::move(curves);
  return measured;
}

} // namespace cleave::profiler
