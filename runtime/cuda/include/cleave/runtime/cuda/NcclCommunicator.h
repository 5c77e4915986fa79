//===- NcclCommunicator.h - Collectives over NCCL ---------------*- C++ -*-===//
//
// The communicator of the CUDA backend: the same interface as the MPI one
// (groups of mesh axes, asynchronous requests), on GPU buffers. At
// construction, collectively on every rank, it makes one NCCL communicator
// for the world (its unique id broadcast over MPI) and splits it
// (ncclCommSplit) into one per non-empty set of mesh axes, with the MPI
// communicator's color and key, so that group rank order is row-major over
// the chosen axes. Collectives run on a stream of their own after an event
// of the compute stream (their inputs are ready); Request::wait() makes the
// compute stream wait for them, without blocking the host, so that the
// plan's early starts (bucketed gradient reduction, pipeline sends) overlap
// compute. Point-to-point messages use two more communicators, one per
// direction along the axis, so that two neighbours' sends to each other
// (1F1B) never queue behind each other. Each direction's messages still run
// in order on one stream, which deadlocks once a send wraps around the axis
// (the interleaved schedule's last stage to the first): such sends are
// refused until point-to-point runs per directed link.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_CUDA_NCCLCOMMUNICATOR_H
#define CLEAVE_RUNTIME_CUDA_NCCLCOMMUNICATOR_H

#include "cleave/runtime/comm/Communicator.h"

#include <memory>

namespace cleave::cuda {

/// Requires MPI to be initialised, the CUDA backend started on this rank's
/// GPU, and mesh.numRanks() == the MPI world size. Throws
/// std::runtime_error (with NCCL's message) or std::invalid_argument.
std::unique_ptr<comm::Communicator> createNcclCommunicator(comm::MeshInfo mesh);

} // namespace cleave::cuda

#endif // CLEAVE_RUNTIME_CUDA_NCCLCOMMUNICATOR_H
