//===- MpiCommunicator.h - Collectives over MPI ------------------*- C++ -*-===//
//
// The communicator of a job started by mpirun, one rank per process. It
// creates, at construction and on every rank alike (MPI_Comm_split is
// collective over MPI_COMM_WORLD), one sub-communicator per non-empty set of
// mesh axes: color = the coordinates on the other axes, key = the
// coordinates on the chosen ones, so that group rank order is row-major
// over the chosen axes as MeshInfo::groupRanks has it. mpi.h stays out of
// this header so that code including it needs no MPI include path.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_COMM_MPICOMMUNICATOR_H
#define CLEAVE_RUNTIME_COMM_MPICOMMUNICATOR_H

#include "cleave/runtime/comm/Communicator.h"

#include <string>
#include <vector>

namespace cleave::comm {

/// MPI_Init (with thread support for the watchdog: MPI_THREAD_MULTIPLE is
/// not needed, only MPI_Abort from another thread, which Open MPI allows).
void mpiInitialize(int *argc, char ***argv);
void mpiFinalize();
/// Whether this process runs without MPI (CLEAVE_NO_MPI=1 at
/// mpiInitialize): a world of one rank, for machines with no MPI runtime;
/// the helpers below then act on that world, createMpiCommunicator gives
/// the local communicator.
bool mpiDisabled();
int mpiWorldRank();
int mpiWorldSize();
/// This rank's index among the ranks on its node (MPI_COMM_TYPE_SHARED):
/// which of the node's GPUs it drives.
int mpiLocalRank();
/// Throws std::invalid_argument unless `mesh` has the world's ranks and
/// its coordinates are this rank's (a communicator over MPI needs both).
void requireMeshMatchesWorld(const MeshInfo &mesh);
/// Every rank's `text`, in rank order, on rank 0 (empty elsewhere).
std::vector<std::string> mpiGatherToRoot(const std::string &text);
/// MPI_Barrier on MPI_COMM_WORLD.
void mpiBarrier();
/// MPI_Bcast of `bytes` bytes at `data` from world rank `root` to every
/// rank (generation: the tokens the rank holding the logits chose).
void mpiBroadcast(void *data, int64_t bytes, int root);
/// MPI_Abort on MPI_COMM_WORLD: ends every rank of the job.
[[noreturn]] void mpiAbort(int code);

/// Requires MPI to be initialised and mesh.numRanks() == the world size;
/// mesh.coords must be this rank's. Throws std::invalid_argument otherwise.
std::unique_ptr<Communicator> createMpiCommunicator(MeshInfo mesh);

} // namespace cleave::comm

#endif // CLEAVE_RUNTIME_COMM_MPICOMMUNICATOR_H
