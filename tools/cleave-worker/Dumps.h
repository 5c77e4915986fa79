//===- Dumps.h - What a rank writes besides training ------------*- C++ -*-===//
//
// The files `cleave run` reads back (runtime/launcher RunDumps.h names
// them), the joined Chrome trace, and --list's listing of a program.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TOOLS_CLEAVE_WORKER_DUMPS_H
#define CLEAVE_TOOLS_CLEAVE_WORKER_DUMPS_H

#include "cleave/runtime/comm/Communicator.h"
#include "cleave/runtime/executor/Executor.h"
#include "cleave/runtime/plan/plan.pb.h"

#include <string>
#include <vector>

namespace cleave::worker {

/// --dump-params DIR: every parameter block of this rank (raw fp32) and,
/// on rank 0, the loss of every step.
void dumpParameters(const plan::Plan &plan, const executor::Executor &ex,
                    const std::string &dir, const std::vector<double> &losses);

/// --dump-params DIR, after each step: every parameter's gradient of the
/// step, reduced and before the update, appended to its file (truncated at
/// the run's first step), where this rank holds it whole (plans without
/// ZeRO). --check compares them and sizes AdamW's allowance with them.
void dumpGradients(const plan::Plan &plan, const executor::Executor &ex,
                   const std::string &dir, bool firstStep);

/// --dump-outputs: per output i and microbatch m of the last step, the
/// slot's raw contents (fp32 for F32 outputs) in
/// DIR/output<i>.mb<m>.rank<R>.bin. Only ranks whose program has outputs
/// write.
void dumpOutputs(const executor::Executor &ex, const std::string &dir);

/// The mesh axes any program of the plan sends along (the same on every
/// rank, which the NCCL communicator's collective setup needs).
std::vector<std::string> pointToPointAxes(const plan::Plan &plan);

/// --list: this rank's program as the executor will run it.
std::string listProgram(const plan::Plan &plan);

/// --trace: each rank writes its events to PATH.rankR; after a barrier
/// rank 0 joins them into PATH (one process per rank) and removes the
/// parts.
void writeTrace(comm::Communicator &comm, const executor::Executor &ex,
                const std::string &path, double originUs);

} // namespace cleave::worker

#endif // CLEAVE_TOOLS_CLEAVE_WORKER_DUMPS_H
