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
// compute. Point-to-point messages run per directed link of each axis
// that carries them (comm/PointToPointLinks.h): a communicator and a stream
// for each direction of each link, so that messages are matched by order
// only among those between the same two ranks in the same direction; no
// message waits behind an unrelated one, and the interleaved schedule's
// wrap-around sends from the last stage to the first cannot close a ring.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_CUDA_NCCLCOMMUNICATOR_H
#define CLEAVE_RUNTIME_CUDA_NCCLCOMMUNICATOR_H

#include "cleave/runtime/comm/Communicator.h"

#include <memory>
#include <string>
#include <vector>

namespace cleave::cuda {

/// Requires MPI to be initialised, the CUDA backend started on this rank's
/// GPU, and mesh.numRanks() == the MPI world size. Throws
/// std::runtime_error (with NCCL's message) or std::invalid_argument.
/// `p2pAxes`: the axes along which the plan sends (the same on every
/// rank); sends and receives along others are refused.
std::unique_ptr<comm::Communicator>
createNcclCommunicator(comm::MeshInfo mesh,
                       const std::vector<std::string> &p2pAxes);

} // namespace cleave::cuda

#endif // CLEAVE_RUNTIME_CUDA_NCCLCOMMUNICATOR_H
