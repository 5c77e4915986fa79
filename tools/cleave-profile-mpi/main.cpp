//===- main.cpp - Time MPI collectives for the CPU profiler ---------------===//
//
// Usage: mpirun -n R cleave-profile-mpi [--seconds S] [--rounds N] BYTES...
//
// For each collective and size, in each of --rounds N rounds (2 by
// default, every other one in reverse order), rank 0 prints one line
//   result KIND BYTES SECONDS
// that runtime/profiler parses, taking a size's median. The
// collectives are the runtime's own (comm::Communicator over MPI), as the
// executor calls them. KIND is the cost model's name of the
// collective (Collectives.h) and BYTES its size convention, the per-rank
// buffer nccl-tests prints: the all-reduce buffer, the all-gather output,
// the reduce-scatter input, the all-to-all send buffer, the broadcast
// buffer, the message of a send. A size is rounded down to a whole number
// of fp32 elements per rank, and the line gives the size actually moved.
//
// Timing follows nccl-tests: two warm-up calls, then batches of calls
// between barriers, each batch's time the slowest rank's, repeated until
// the target time is spent (at least three), and the median batch per
// call. Batches last about a third of the target each. The send-recv time is
// half a ping-pong between ranks 0 and 1.
//
// With --gemm N and --cores C (fewer than the ranks), every rank then
// multiplies N x N matrices (the CPU kernels' matmul), in rounds of two
// stretches back to back: all ranks at once, then C ranks while the others
// idle. Rank 0 prints the medians over the rounds,
//   shared-gemm N SHARED_SECONDS ALONE_SECONDS EFFICIENCY
// the wall time per GEMM of all ranks together, the time per GEMM of a rank
// with a core to itself, and the median of each round's ALONE / (SHARED x
// C): what sharing the cores costs beyond splitting them.
//
// Then C ranks multiply
// while the others wait for a message from one of them, first as the
// runtime's pipeline stages wait where ranks outnumber cores
// (comm::mpiWaitSleeping), then in a loop of MPI_Test and 2 ms sleeps; one
// stretch per rank, each with another set multiplying, and rank 0 prints
// the mean of each, per GEMM of one multiplying rank,
//   waiting-gemm N WAITING_SECONDS IDLE_SECONDS
// from which the profiler takes how much of a core a waiting rank uses.
// Then every rank runs steps of a GEMM and an all-gather of 1 MiB of its
// output, as tensor-parallel layers do, then the GEMMs alone and the
// gathers alone, and rank 0 prints the seconds per step of each,
//   in-step-gather BYTES PAIR_SECONDS GEMM_SECONDS GATHER_SECONDS
// from which the profiler takes how much slower a collective runs between
// compute on shared cores than alone.
//
// With --gemm N, whether or not the ranks share cores, every rank then
// runs steps of GEMMs and a 4 MiB reduce-scatter through the
// communicator, each waited for only once more than 25 MiB are in flight
// after it, as ZeRO-2/3's backward pass keeps them (CollectiveOverlap.h);
// then each waited for at once, the GEMMs alone and the reduce-scatters
// alone. Rank 0 prints the seconds per step of each,
//   window-scatter BYTES WINDOWED STALLED GEMMS SCATTER
// from which the profiler takes the share of such a window that the
// compute hides (MPI has no progress engine of its own on CPU ranks).
//
//===----------------------------------------------------------------------===//

#include "cleave/runtime/kernels/BlasKernels.h"
#include "cleave/runtime/comm/MpiCommunicator.h"
#include "cleave/runtime/comm/MpiWait.h"
#include "cleave/runtime/kernels/Matmul.h"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
// Open MPI does not free all it allocates by MPI_Finalize; LeakSanitizer
// would fail every run of a sanitizer build (CLEAVE_SANITIZE) on leaks that
// are not ours.
extern "C" const char *__asan_default_options() { return "detect_leaks=0"; }
#endif

namespace {

/// The all-gather of in-step-gather: about a tensor-parallel layer's
/// activation at a small hidden size (1024 tokens x 256 fp32).
constexpr long long kInStepGatherBytes = 1 << 20;

/// The reduce-scatter of window-scatter: a layer's larger gradient at a
/// small hidden size (512 x 2048 fp32), in the lowering's window of 25 MiB
/// (kCollectiveWindowBytes) six of them in flight.
constexpr long long kWindowScatterBytes = 4 << 20;
constexpr long long kWindowBytes = 25LL << 20;

struct Options {
  double seconds = 0.05;
  int rounds = 2;
  long long gemm = 0;
  int cores = 0;
  std::vector<long long> sizes;
};

bool parseArgs(int argc, char **argv, Options &options, std::string &error) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    char *end = nullptr;
    if (arg == "--gemm" && i + 1 < argc) {
      options.gemm = std::strtoll(argv[++i], &end, 10);
      if (*end != '\0' || options.gemm < 1 || options.gemm > 8192) {
        error = "bad --gemm value '" + std::string(argv[i]) + "'";
        return false;
      }
      continue;
    }
    if ((arg == "--cores" || arg == "--rounds") && i + 1 < argc) {
      int &value = arg == "--cores" ? options.cores : options.rounds;
      long long limit = arg == "--cores" ? 4096 : 100;
      long long parsed = std::strtoll(argv[++i], &end, 10);
      if (*end != '\0' || parsed < 1 || parsed > limit) {
        error = "bad " + arg + " value '" + std::string(argv[i]) + "'";
        return false;
      }
      value = static_cast<int>(parsed);
      continue;
    }
    if (arg == "--seconds" && i + 1 < argc) {
      options.seconds = std::strtod(argv[++i], &end);
      if (*end != '\0' || !(options.seconds > 0)) {
        error = "bad --seconds value '" + std::string(argv[i]) + "'";
        return false;
      }
      continue;
    }
    long long bytes = std::strtoll(arg.c_str(), &end, 10);
    // MPI counts are ints: at most 2^31 - 1 fp32 elements.
    if (arg.empty() || *end != '\0' || bytes <= 0 ||
        bytes / 4 > std::numeric_limits<int>::max()) {
      error = "bad size '" + arg +
              "': expected a positive number of bytes "
              "below 8 GiB";
      return false;
    }
    options.sizes.push_back(bytes);
  }
  if (options.sizes.empty()) {
    error = "usage: cleave-profile-mpi [--seconds S] [--rounds N] [--gemm N "
            "[--cores C]] "
            "BYTES...";
    return false;
  }
  return true;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid]
                           : 0.5 * (values[mid - 1] + values[mid]);
}

// Seconds of one call of `op`, measured as the file comment says. Every
// decision uses the slowest rank's time, which all ranks share, so all run
// the same number of calls.
double timeCollective(const std::function<void()> &op, double target) {
  constexpr int kWarmups = 2;
  constexpr int kMinRepeats = 3;
  constexpr int kMaxRepeats = 1000;
  for (int i = 0; i < kWarmups; ++i)
    op();
  auto batch = [&](long long calls) {
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    for (long long i = 0; i < calls; ++i)
      op();
    double local = MPI_Wtime() - start, slowest = 0;
    MPI_Allreduce(&local, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return slowest;
  };
  // The fastest of a few single calls sizes the batches: one call that the
  // scheduler interrupted would make every batch a single call, as noisy.
  double one = batch(1);
  double total = one;
  for (int i = 0; i < 3 && one < target / kMinRepeats; ++i) {
    double again = batch(1);
    one = std::min(one, again);
    total += again;
  }
  long long calls = static_cast<long long>(
      std::clamp(target / kMinRepeats / std::max(one, 1e-9), 1.0, 1e6));
  std::vector<double> perCall;
  while (static_cast<int>(perCall.size()) < kMinRepeats ||
         (total < target && static_cast<int>(perCall.size()) < kMaxRepeats)) {
    double elapsed = batch(calls);
    perCall.push_back(elapsed / static_cast<double>(calls));
    total += elapsed;
  }
  return median(perCall);
}

/// Wall seconds per GEMM with every rank multiplying at once for about
/// `seconds` (at least one GEMM each): the slowest rank's time over all
/// ranks' GEMMs.
double allRanksGemmSeconds(const std::function<void()> &gemm,
                           double seconds) {
  MPI_Barrier(MPI_COMM_WORLD);
  double start = MPI_Wtime();
  long long done = 0;
  while (done == 0 || MPI_Wtime() - start < seconds) {
    gemm();
    ++done;
  }
  double local = MPI_Wtime() - start, slowest = 0;
  long long total = 0;
  MPI_Allreduce(&local, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(&done, &total, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  return slowest / static_cast<double>(total);
}

double besideWaitingGemmSeconds(const std::function<void()> &gemm,
                                double seconds, int cores, bool idle,
                                int window);

struct SharedCores {
  double shared = 0, alone = 0, efficiency = 0;
};

/// What sharing the cores costs beyond splitting them, where the ranks
/// outnumber the cores: kRounds rounds of all ranks multiplying N^3 GEMMs
/// at once, then `cores` of them (a different set each round) while the
/// others idle. The two stretches of a round are a second apart, so the
/// machine's drift (10-20% over minutes on a shared VM) cancels out of
/// each round's ratio; a best-of-three shared time against a median alone
/// time measured in another process after the GEMM grid gave 0.89 to 1.06
/// on one machine.
SharedCores sharedCoreRounds(long long n, double seconds, int cores) {
  namespace k = cleave::kernels;
  k::Tensor a({n, n}, 1.0f), b({n, n}, 0.5f), c({n, n});
  auto gemm = [&] { k::matmul(a.ref(), b.ref(), false, false, c.ref()); };
  gemm(); // warm-up
  constexpr int kRounds = 7;
  std::vector<double> shared, alone, efficiency;
  for (int round = 0; round < kRounds; ++round) {
    shared.push_back(allRanksGemmSeconds(gemm, seconds));
    alone.push_back(
        besideWaitingGemmSeconds(gemm, seconds, cores, true, round));
    efficiency.push_back(alone.back() / (shared.back() * cores));
  }
  return {median(shared), median(alone), median(efficiency)};
}

/// Seconds per N^3 GEMM of a multiplying rank while `cores` ranks multiply
/// and the others wait on one of them (as the runtime waits, or idle:
/// sleeping 2 ms between MPI_Tests), for about `seconds`: the mean over the multiplying
/// ranks and over one stretch per rank, each with a different set of ranks
/// multiplying. Where the scheduler puts a waiting rank (beside a
/// multiplier or not) may decide what it costs, and it keeps the ranks
/// where they are, so the mean over the sets samples the placements.
double waitingGemmSeconds(long long n, double seconds, int cores,
                          bool idle) {
  namespace k = cleave::kernels;
  int ranks = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  k::Tensor a({n, n}, 1.0f), b({n, n}, 0.5f), c({n, n});
  auto gemm = [&] { k::matmul(a.ref(), b.ref(), false, false, c.ref()); };
  gemm(); // warm-up
  double total = 0;
  for (int window = 0; window < ranks; ++window)
    total += besideWaitingGemmSeconds(gemm, seconds, cores, idle, window);
  return total / ranks;
}

/// One stretch of waitingGemmSeconds: the ranks whose (rank + window) mod
/// ranks is below `cores` multiply for about `seconds`, the others wait
/// (idle: sleeping 2 ms between MPI_Tests); the mean over the multiplying
/// ranks of their seconds per GEMM.
double besideWaitingGemmSeconds(const std::function<void()> &gemm,
                                double seconds, int cores, bool idle,
                                int window) {
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  // The rank where (rank + window) mod ranks is 0 releases the others.
  int position = (rank + window) % ranks;
  bool multiplies = position < cores;
  int leader = (ranks - window % ranks) % ranks;
  MPI_Comm multipliers;
  MPI_Comm_split(MPI_COMM_WORLD, multiplies ? 0 : 1, rank, &multipliers);
  MPI_Barrier(MPI_COMM_WORLD);
  double perGemm = 0;
  int token = 0;
  if (multiplies) {
    double start = MPI_Wtime();
    long long done = 0;
    while (done == 0 || MPI_Wtime() - start < seconds) {
      gemm();
      ++done;
    }
    perGemm = (MPI_Wtime() - start) / static_cast<double>(done);
    // Every multiplier is done before the waiting ranks are released.
    MPI_Barrier(multipliers);
    if (rank == leader)
      for (int other = 0; other < ranks; ++other)
        if ((other + window) % ranks >= cores)
          MPI_Send(&token, 1, MPI_INT, other, 7, MPI_COMM_WORLD);
  } else {
    MPI_Request request;
    MPI_Irecv(&token, 1, MPI_INT, leader, 7, MPI_COMM_WORLD, &request);
    int flag = 0;
    while (idle && !flag) {
      MPI_Test(&request, &flag, MPI_STATUS_IGNORE);
      struct timespec pause = {0, 2000000};
      if (!flag)
        nanosleep(&pause, nullptr);
    }
    if (!flag)
      cleave::comm::mpiWaitSleeping(1, &request);
  }
  MPI_Comm_free(&multipliers);
  double sum = 0;
  MPI_Allreduce(&perGemm, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return sum / cores;
}

/// Seconds per step of the slowest rank: `run` takes `steps` steps between
/// a barrier and the clock (a windowed run also completes what it left in
/// flight).
double slowestSecondsPerStep(const std::function<void(long long)> &run,
                             long long steps) {
  MPI_Barrier(MPI_COMM_WORLD);
  double begin = MPI_Wtime();
  run(steps);
  double local = (MPI_Wtime() - begin) / static_cast<double>(steps),
         slowest = 0;
  MPI_Allreduce(&local, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

/// `step` taken the given number of times.
std::function<void(long long)> repeat(std::function<void()> step) {
  return [step = std::move(step)](long long steps) {
    for (long long i = 0; i < steps; ++i)
      step();
  };
}

/// Seconds per step of an N^3 GEMM followed by an all-gather of `bytes`
/// (each rank's share taken from the GEMM's output), as a tensor-parallel
/// layer runs them: the gather started nonblocking and waited for the
/// runtime's way for collectives (MPI_Wait, polling: MpiCommunicator
/// sleeps only in point-to-point waits), every rank at once; beside it the
/// GEMMs alone and the gathers alone, the same way. Windows of the three
/// take turns, seven rounds of about `seconds` in all, so that the
/// machine's drift falls on all three alike; each is the median of its
/// windows, per step of the slowest rank.
struct InStepGather {
  double pair = 0, gemm = 0, gather = 0;
};
InStepGather inStepGatherSeconds(long long n, long long bytes,
                                 double seconds) {
  namespace k = cleave::kernels;
  int ranks = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  k::Tensor a({n, n}, 1.0f), b({n, n}, 0.5f), c({n, n});
  int count = static_cast<int>(
      std::min<long long>(bytes / static_cast<long long>(sizeof(float)) /
                              ranks,
                          n * n));
  std::vector<float> out(static_cast<size_t>(count) * ranks);
  auto gemm = [&] { k::matmul(a.ref(), b.ref(), false, false, c.ref()); };
  auto gather = [&] {
    MPI_Request request;
    MPI_Iallgather(c.data(), count, MPI_FLOAT, out.data(), count, MPI_FLOAT,
                   MPI_COMM_WORLD, &request);
    MPI_Wait(&request, MPI_STATUS_IGNORE);
  };
  auto pair = [&] {
    gemm();
    gather();
  };
  constexpr int kRounds = 7;
  double windowSeconds = seconds / (3 * kRounds);
  // How many steps fill a window: counted once, with every rank agreeing
  // after each step whether to go on. The timed windows then run that many
  // steps with nothing else between them: a per-step agreement would be a
  // collective in the GEMM-only loop too, and its wait for the slowest rank
  // would cancel out of pair - GEMM the very skew a gather between compute
  // pays.
  auto stepsFor = [&](const std::function<void()> &step) {
    step(); // warm-up
    long long steps = 0;
    double start = MPI_Wtime();
    while (true) {
      step();
      ++steps;
      int more = MPI_Wtime() - start < windowSeconds ? 1 : 0, any = 0;
      MPI_Allreduce(&more, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
      if (!any)
        break;
    }
    return steps;
  };
  long long pairSteps = stepsFor(pair), gemmSteps = stepsFor(gemm),
            gatherSteps = stepsFor(gather);
  std::vector<double> pairs, gemms, gathers;
  for (int round = 0; round < kRounds; ++round) {
    pairs.push_back(slowestSecondsPerStep(repeat(pair), pairSteps));
    gemms.push_back(slowestSecondsPerStep(repeat(gemm), gemmSteps));
    gathers.push_back(slowestSecondsPerStep(repeat(gather), gatherSteps));
  }
  InStepGather result;
  result.pair = median(pairs);
  result.gemm = median(gemms);
  result.gather = median(gathers);
  return result;
}

/// Seconds per step of `gemms` N^3 GEMMs followed by a reduce-scatter of
/// `bytes` through the runtime's communicator, as ZeRO-2/3's backward pass
/// runs them with overlap-grad: each reduce-scatter started after its
/// layer's compute and waited for only once more than `windowBytes` are in
/// flight after it (or at the end), the lowering's window
/// (CollectiveOverlap.h). Beside it the same steps with each reduce-scatter
/// waited for at once (stalled), the GEMMs alone and the reduce-scatters
/// alone. Windows of the four take turns, seven rounds of about `seconds`
/// in all; each is the median of its windows, per step of the slowest
/// rank.
struct WindowScatter {
  double windowed = 0, stalled = 0, gemms = 0, scatter = 0;
  int gemmsPerStep = 1;
};
WindowScatter windowScatterSeconds(cleave::comm::Communicator &comm,
                                   long long n, long long bytes,
                                   long long windowBytes, double seconds) {
  namespace k = cleave::kernels;
  int ranks = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  long long count = bytes / static_cast<long long>(sizeof(float)) / ranks;
  int depth = static_cast<int>(std::max<long long>(1, windowBytes / bytes));
  // One input and output per reduce-scatter that can be in flight.
  std::vector<std::vector<float>> inputs(
      depth + 1, std::vector<float>(static_cast<size_t>(count) * ranks, 1.0f));
  std::vector<std::vector<float>> outputs(
      depth + 1, std::vector<float>(static_cast<size_t>(count)));
  k::Tensor a({n, n}, 1.0f), b({n, n}, 0.5f), c({n, n});
  const cleave::comm::Axes all = {"x"};
  auto start = [&](int slot) {
    return comm.reduceScatterAsync(
        all, cleave::comm::CommTensor{inputs[slot].data(), {count * ranks}},
        cleave::comm::CommTensor{outputs[slot].data(), {count}}, 0,
        cleave::comm::Reduction::Sum);
  };
  int gemmsPerStep = 1;
  auto gemms = [&] {
    for (int i = 0; i < gemmsPerStep; ++i)
      k::matmul(a.ref(), b.ref(), false, false, c.ref());
  };
  auto scatter = [&] { start(0)->wait(); };
  auto stalled = [&](long long steps) {
    for (long long i = 0; i < steps; ++i) {
      gemms();
      scatter();
    }
  };
  auto windowed = [&](long long steps) {
    std::deque<std::unique_ptr<cleave::comm::Request>> inFlight;
    for (long long i = 0; i < steps; ++i) {
      gemms();
      inFlight.push_back(start(static_cast<int>(i % (depth + 1))));
      while (static_cast<long long>(inFlight.size()) * bytes > windowBytes) {
        inFlight.front()->wait();
        inFlight.pop_front();
      }
    }
    for (auto &request : inFlight)
      request->wait();
  };
  // The compute of a step is about twice its reduce-scatter, as in a
  // backward pass whose collectives it can hide: one GEMM and one
  // reduce-scatter timed alone set the GEMMs per step (every rank agrees,
  // the times being the slowest rank's).
  windowed(2); // warm-up: the buffers and the communicator's channels
  double oneGemm = slowestSecondsPerStep(repeat(gemms), 3),
         oneScatter = slowestSecondsPerStep(repeat(scatter), 3);
  gemmsPerStep = static_cast<int>(
      std::clamp(std::round(2 * oneScatter / std::max(oneGemm, 1e-9)), 1.0,
                 64.0));
  constexpr int kRounds = 7;
  double stepSeconds = gemmsPerStep * oneGemm + oneScatter;
  long long steps = std::max<long long>(
      2 * (depth + 1),
      static_cast<long long>(seconds / (4 * kRounds) /
                             std::max(stepSeconds, 1e-9)));
  std::vector<double> window, stall, gemm, alone;
  for (int round = 0; round < kRounds; ++round) {
    window.push_back(slowestSecondsPerStep(windowed, steps));
    stall.push_back(slowestSecondsPerStep(stalled, steps));
    gemm.push_back(slowestSecondsPerStep(repeat(gemms), steps));
    alone.push_back(slowestSecondsPerStep(repeat(scatter), steps));
  }
  WindowScatter result;
  result.windowed = median(window);
  result.stalled = median(stall);
  result.gemms = median(gemm);
  result.scatter = median(alone);
  result.gemmsPerStep = gemmsPerStep;
  return result;
}

} // namespace

int main(int argc, char **argv) {
  // The kernels the workers run (BlasKernels.h), before MPI starts.
  cleave::kernels::adoptChosenBlasKernels(argv);
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);

  Options options;
  std::string error;
  if (!parseArgs(argc, argv, options, error) || ranks < 2) {
    if (rank == 0)
      std::fprintf(stderr, "cleave-profile-mpi: %s\n",
                   error.empty() ? "needs at least 2 ranks" : error.c_str());
    MPI_Finalize();
    return 1;
  }

  long long largest =
      *std::max_element(options.sizes.begin(), options.sizes.end());
  // fp32 elements; every collective's buffers fit in `largest` bytes.
  size_t capacity = static_cast<size_t>(largest) / sizeof(float) + 1;
  std::vector<float> send(capacity, 1.0f), recv(capacity, 0.0f);
  float *s = send.data(), *r = recv.data();

  // The collectives run through the runtime's own communicator (one mesh
  // axis over every rank), so the profile times what the executor calls:
  // Open MPI's non-blocking collectives (MPI_Iallreduce and the like, its
  // libnbc algorithms) and a wait, with the communicator's staging copies.
  // Its blocking ones run other algorithms: measured side by side on 4
  // ranks here, MPI_Reduce_scatter_block took 1.2-1.4x as long as
  // MPI_Ireduce_scatter_block from 16 MiB up (1.05-1.33x at 4 MiB),
  // MPI_Allreduce 1.05-1.3x MPI_Iallreduce.
  cleave::comm::MeshInfo mesh;
  mesh.axisNames = {"x"};
  mesh.axisSizes = {ranks};
  mesh.coords = {rank};
  std::unique_ptr<cleave::comm::Communicator> comm =
      cleave::comm::createMpiCommunicator(mesh);
  const cleave::comm::Axes all = {"x"};
  auto tensor = [](float *data, long long elements) {
    return cleave::comm::CommTensor{data, {elements}};
  };

  struct Collective {
    const char *name;
    // Elements each rank contributes per peer (or in all, see `perRank`):
    // the size is count x this many elements.
    bool perRank;
    std::function<void(int count)> run;
  };
  using cleave::comm::Reduction;
  std::vector<Collective> collectives = {
      {"all-reduce", false,
       [&](int count) {
         comm->allReduce(all, tensor(s, count), tensor(r, count),
                         Reduction::Sum);
       }},
      {"all-gather", true,
       [&](int count) {
         comm->allGather(all, tensor(s, count), tensor(r, 1LL * count * ranks),
                         0);
       }},
      {"reduce-scatter", true,
       [&](int count) {
         comm->reduceScatter(all, tensor(s, 1LL * count * ranks),
                             tensor(r, count), 0, Reduction::Sum);
       }},
      {"all-to-all", true,
       [&](int count) {
         comm->allToAll(all, tensor(s, 1LL * count * ranks),
                        tensor(r, 1LL * count * ranks), 0, 0);
       }},
      {"broadcast", false,
       [&](int count) { comm->broadcast(all, tensor(s, count), 0); }},
      {"send-recv", false,
       [&](int count) {
         // One round trip; the printed time is half of it. The runtime's
         // point-to-point waits (sleeping where ranks outnumber cores, see
         // MpiWait.h) are part of it, as in a pipeline.
         if (rank == 0) {
           comm->send("x", 1, 0, tensor(s, count));
           comm->recv("x", 1, 0, tensor(r, count));
         } else if (rank == 1) {
           comm->recv("x", -1, 0, tensor(r, count));
           comm->send("x", -1, 0, tensor(s, count));
         }
       }},
  };

  // The first calls between two ranks set up their shared-memory channels;
  // that belongs to no size's time.
  for (int i = 0; i < 3; ++i)
    collectives.front().run(static_cast<int>(capacity - 1));
  MPI_Barrier(MPI_COMM_WORLD);

  // Rounds over every collective and size (--rounds, 2 by default), every
  // other one in reverse order, sharing the time; the profiler takes each
  // size's median over the rounds of all its launches. A spell of the
  // machine lasting seconds then falls on other sizes in each round: one
  // profile of a single round here timed the 4 and 16 MiB reduce-scatters
  // 1.5-2x as long as the profiles before and after it.
  struct Point {
    const Collective *collective;
    long long bytes;
  };
  std::vector<Point> points;
  for (const Collective &collective : collectives)
    for (long long bytes : options.sizes)
      points.push_back({&collective, bytes});
  const int kRounds = options.rounds;
  for (int round = 0; round < kRounds; ++round)
    for (size_t step = 0; step < points.size(); ++step) {
      const Point &point =
          points[round % 2 ? points.size() - 1 - step : step];
      const Collective &collective = *point.collective;
      long long elements = point.bytes / static_cast<long long>(sizeof(float));
      int count =
          static_cast<int>(collective.perRank ? elements / ranks : elements);
      if (count < 1)
        continue;
      long long moved = static_cast<long long>(count) *
                        (collective.perRank ? ranks : 1) *
                        static_cast<long long>(sizeof(float));
      double seconds = timeCollective([&] { collective.run(count); },
                                      options.seconds / kRounds);
      if (std::strcmp(collective.name, "send-recv") == 0)
        seconds /= 2;
      if (rank == 0) {
        std::printf("result %s %lld %.6e\n", collective.name, moved, seconds);
        // mpirun forwards lines as they come; the profiler shows progress.
        std::fflush(stdout);
      }
    }
  if (options.gemm > 0) {
    double seconds = std::max(0.3, 4 * options.seconds);
    if (options.cores > 0 && options.cores < ranks) {
      SharedCores shared =
          sharedCoreRounds(options.gemm, seconds, options.cores);
      if (rank == 0) {
        std::printf("shared-gemm %lld %.6e %.6e %.6e\n", options.gemm,
                    shared.shared, shared.alone, shared.efficiency);
        std::fflush(stdout);
      }
      double waiting =
          waitingGemmSeconds(options.gemm, seconds, options.cores, false);
      double idle =
          waitingGemmSeconds(options.gemm, seconds, options.cores, true);
      if (rank == 0)
        std::printf("waiting-gemm %lld %.6e %.6e\n", options.gemm, waiting,
                    idle);
      // A difference of two noisy times: four times the others' time.
      InStepGather step = inStepGatherSeconds(options.gemm, kInStepGatherBytes,
                                              4 * seconds);
      if (rank == 0)
        std::printf("in-step-gather %lld %.6e %.6e %.6e\n", kInStepGatherBytes,
                    step.pair, step.gemm, step.gather);
    }
    // Wherever the collectives share the cores with compute or not: MPI on
    // CPU ranks has no progress engine of its own.
    WindowScatter window =
        windowScatterSeconds(*comm, options.gemm, kWindowScatterBytes,
                             kWindowBytes, 4 * seconds);
    if (rank == 0)
      std::printf("window-scatter %lld %.6e %.6e %.6e %.6e\n",
                  kWindowScatterBytes, window.windowed, window.stalled,
                  window.gemms, window.scatter);
  }
  // Its sub-communicators are freed before MPI ends.
  comm.reset();
  MPI_Finalize();
  return 0;
}
