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

#include "Options.h"
#include "Probes.h"
#include "Timing.h"

#include "cleave/runtime/comm/MpiCommunicator.h"
#include "cleave/runtime/kernels/BlasKernels.h"
#include "cleave/runtime/kernels/Threads.h"

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
// Open MPI does not free all it allocates by MPI_Finalize; LeakSanitizer
// would fail every run of a sanitizer build (CLEAVE_SANITIZE) on leaks that
// are not ours.
extern "C" const char *__asan_default_options() { return "detect_leaks=0"; }
#endif

using namespace cleave::profile_mpi;

namespace {

/// The all-gather of in-step-gather: about a tensor-parallel layer's
/// activation at a small hidden size (1024 tokens x 256 fp32).
constexpr long long kInStepGatherBytes = 1 << 20;

/// The reduce-scatter of window-scatter: a layer's larger gradient at a
/// small hidden size (512 x 2048 fp32), in the lowering's window of 25 MiB
/// (kCollectiveWindowBytes) six of them in flight.
constexpr long long kWindowScatterBytes = 4 << 20;
constexpr long long kWindowBytes = 25LL << 20;

} // namespace

int main(int argc, char **argv) {
  // The kernels the workers run (BlasKernels.h), before MPI starts.
  cleave::kernels::adoptChosenBlasKernels(argv);
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  // The threads a worker of this many ranks would have (Threads.h).
  const char *localRanks = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  cleave::kernels::adoptRankThreads(localRanks ? std::atoi(localRanks) : ranks);

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
