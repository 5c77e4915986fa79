//===- MpiWait.h - Waiting on MPI requests without taking a core -*- C++ -*-===//
//
// MPI_Wait in Open MPI polls its queues until the request completes
// (yielding between polls with mpi_yield_when_idle). Where a node's ranks
// outnumber its cores, a rank waiting in a pipeline bubble then keeps
// taking time slices from the ranks that compute. mpiWaitSleeping tests
// the requests and sleeps between tests instead, after a short spin (a
// message already under way lands in microseconds). The CPU profiler's
// MPI worker measures what a rank waiting this way costs the others
// (profile key compute.waiting_rank_load).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_COMM_MPIWAIT_H
#define CLEAVE_RUNTIME_COMM_MPIWAIT_H

#include <mpi.h>

namespace cleave::comm {

/// MPI_Waitall(count, requests, MPI_STATUSES_IGNORE), sleeping between
/// tests: 20 us at first, doubling to 200 us. Returns MPI's error code.
int mpiWaitSleeping(int count, MPI_Request *requests);

} // namespace cleave::comm

#endif // CLEAVE_RUNTIME_COMM_MPIWAIT_H
