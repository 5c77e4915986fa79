//===- Probes.cpp - Collectives between compute, as the runtime runs them -===//

#include "Probes.h"
#include "Timing.h"

#include "cleave/runtime/kernels/Matmul.h"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <memory>
#include <vector>

namespace cleave::profile_mpi {

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

} // namespace cleave::profile_mpi
