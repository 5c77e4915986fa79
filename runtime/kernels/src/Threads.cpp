//===- Threads.cpp - The rank's one pool of kernel threads ----------------===//

#include "cleave/runtime/kernels/Threads.h"

#include <omp.h>
#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

namespace cleave::kernels {
namespace {

/// A positive count from the environment variable `name`, or 0.
int countFrom(const char *name) {
  const char *value = std::getenv(name);
  if (!value)
    return 0;
  char *end = nullptr;
  long n = std::strtol(value, &end, 10);
  return end != value && n > 0 && n < 1 << 16 ? static_cast<int>(n) : 0;
}

int availableCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
    return CPU_COUNT(&set);
  return std::max(1u, std::thread::hardware_concurrency());
}

} // namespace

int kernelThreads() { return omp_get_max_threads(); }

int adoptRankThreads(int localRanks) {
  // OpenMP reads OMP_NUM_THREADS itself; OPENBLAS_NUM_THREADS, which the
  // pthread build read, sizes the shared pool too.
  if (countFrom("OMP_NUM_THREADS"))
    return kernelThreads();
  int threads = countFrom("OPENBLAS_NUM_THREADS");
  if (!threads)
    threads = std::max(1, availableCores() / std::max(1, localRanks));
  omp_set_num_threads(threads);
  return threads;
}

} // namespace cleave::kernels
