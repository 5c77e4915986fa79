//===- Threads.h - The rank's one pool of kernel threads --------*- C++ -*-===//
//
// The CPU kernels thread their loops with OpenMP, and OpenBLAS's OpenMP
// build runs its GEMMs on the same threads (src/Parallel.h): a rank has one
// pool. Its size is the user's (OMP_NUM_THREADS, or OPENBLAS_NUM_THREADS as
// the pthread build read it) or else the cores this process may run on
// shared evenly by the ranks on the machine, so that ranks do not
// oversubscribe the cores and spin against each other.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_KERNELS_THREADS_H
#define CLEAVE_RUNTIME_KERNELS_THREADS_H

namespace cleave::kernels {

/// Threads of the pool now.
int kernelThreads();

/// Sizes the pool for one of `localRanks` ranks on this machine: the
/// user's count when OMP_NUM_THREADS or OPENBLAS_NUM_THREADS is set,
/// otherwise the cores in this process's affinity mask over `localRanks`,
/// at least 1. Returns the size.
int adoptRankThreads(int localRanks);

} // namespace cleave::kernels

#endif // CLEAVE_RUNTIME_KERNELS_THREADS_H
