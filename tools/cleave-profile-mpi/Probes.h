//===- Probes.h - Collectives between compute, as the runtime runs -*- C++ -*-===//

#ifndef CLEAVE_TOOLS_CLEAVE_PROFILE_MPI_PROBES_H
#define CLEAVE_TOOLS_CLEAVE_PROFILE_MPI_PROBES_H

#include "cleave/runtime/comm/Communicator.h"

namespace cleave::profile_mpi {

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
                                 double seconds);

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
                                   long long windowBytes, double seconds);

} // namespace cleave::profile_mpi

#endif // CLEAVE_TOOLS_CLEAVE_PROFILE_MPI_PROBES_H
