//===- Timing.h - Timing collectives and GEMMs across MPI ranks -*- C++ -*-===//
//
// Every time is the slowest rank's, which all ranks share, so that every
// rank takes the same decisions and runs the same number of calls.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TOOLS_CLEAVE_PROFILE_MPI_TIMING_H
#define CLEAVE_TOOLS_CLEAVE_PROFILE_MPI_TIMING_H

#include <functional>
#include <vector>

namespace cleave::profile_mpi {

double median(std::vector<double> values);

/// Seconds of one call of `op`, as nccl-tests times it (main.cpp's
/// comment): warm-ups, then batches between barriers until `target`
/// seconds are spent, the median batch per call.
double timeCollective(const std::function<void()> &op, double target);

struct SharedCores {
  double shared = 0, alone = 0, efficiency = 0;
};

/// Wall seconds per GEMM with every rank multiplying at once for about
/// `seconds` (at least one GEMM each): the slowest rank's time over all
/// ranks' GEMMs.
double allRanksGemmSeconds(const std::function<void()> &gemm,
                           double seconds);

/// What sharing the cores costs beyond splitting them, where the ranks
/// outnumber the cores: kRounds rounds of all ranks multiplying N^3 GEMMs
/// at once, then `cores` of them (a different set each round) while the
/// others idle. The two stretches of a round are a second apart, so the
/// machine's drift (10-20% over minutes on a shared VM) cancels out of
/// each round's ratio; a best-of-three shared time against a median alone
/// time measured in another process after the GEMM grid gave 0.89 to 1.06
/// on one machine.
SharedCores sharedCoreRounds(long long n, double seconds, int cores);

/// Seconds per N^3 GEMM of a multiplying rank while `cores` ranks multiply
/// and the others wait on one of them (as the runtime waits, or idle:
/// sleeping 2 ms between MPI_Tests), for about `seconds`: the mean over the
/// multiplying
/// ranks and over one stretch per rank, each with a different set of ranks
/// multiplying. Where the scheduler puts a waiting rank (beside a
/// multiplier or not) may decide what it costs, and it keeps the ranks
/// where they are, so the mean over the sets samples the placements.
double waitingGemmSeconds(long long n, double seconds, int cores,
                          bool idle);

/// One stretch of waitingGemmSeconds: the ranks whose (rank + window) mod
/// ranks is below `cores` multiply for about `seconds`, the others wait
/// (idle: sleeping 2 ms between MPI_Tests); the mean over the multiplying
/// ranks of their seconds per GEMM.
double besideWaitingGemmSeconds(const std::function<void()> &gemm,
                                double seconds, int cores, bool idle,
                                int window);

/// Seconds per step of the slowest rank: `run` takes `steps` steps between
/// a barrier and the clock (a windowed run also completes what it left in
/// flight).
double slowestSecondsPerStep(const std::function<void(long long)> &run,
                             long long steps);

/// `step` taken the given number of times.
std::function<void(long long)> repeat(std::function<void()> step);

} // namespace cleave::profile_mpi

#endif // CLEAVE_TOOLS_CLEAVE_PROFILE_MPI_TIMING_H
