//===- Job.h - This rank in the job: who it is, how it fails ----*- C++ -*-===//

#ifndef CLEAVE_TOOLS_CLEAVE_WORKER_JOB_H
#define CLEAVE_TOOLS_CLEAVE_WORKER_JOB_H

#include "cleave/runtime/comm/Communicator.h"
#include "cleave/runtime/plan/plan.pb.h"

#include <cstdint>
#include <string>

namespace cleave::worker {

/// This process's rank and the job's size, once MPI has started.
int rank();
int worldSize();
void setWorld(int rank, int size);

/// Prints the error with the rank and ends the whole job (MPI_Abort), so
/// that no rank waits forever on a peer that gave up.
[[noreturn]] void fail(const std::string &message);

/// An error every rank finds alike: rank 0 prints it, every rank ends MPI
/// and returns `code` (release the communicators first).
int endTogether(const std::string &message, int code = 1);

/// Microseconds on the steady clock.
int64_t nowUs();

/// The plan's mesh as this rank sees it.
comm::MeshInfo meshOf(const plan::Plan &plan);

} // namespace cleave::worker

#endif // CLEAVE_TOOLS_CLEAVE_WORKER_JOB_H
