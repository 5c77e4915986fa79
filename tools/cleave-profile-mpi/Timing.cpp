//===- Timing.cpp - Timing collectives and GEMMs across MPI ranks ---------===//

#include "Timing.h"

#include "cleave/runtime/comm/MpiWait.h"
#include "cleave/runtime/kernels/Matmul.h"

#include <mpi.h>

#include <algorithm>
#include <ctime>

namespace cleave::profile_mpi {

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

std::function<void(long long)> repeat(std::function<void()> step) {
  return [step = std::move(step)](long long steps) {
    for (long long i = 0; i < steps; ++i)
      step();
  };
}

} // namespace cleave::profile_mpi
