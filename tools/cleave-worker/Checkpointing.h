//===- Checkpointing.h - The worker's saves, resumes and weights -*- C++ -*-===//
//
// The glue between the worker's step loop and runtime/checkpoint: a
// Coordinator over MPI, the manifest fields a save records about the run,
// and the lines rank 0 prints for each save and load.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TOOLS_CLEAVE_WORKER_CHECKPOINTING_H
#define CLEAVE_TOOLS_CLEAVE_WORKER_CHECKPOINTING_H

#include "Options.h"

#include "cleave/runtime/checkpoint/Restore.h"
#include "cleave/runtime/checkpoint/Saver.h"
#include "cleave/runtime/comm/Communicator.h"

#include <memory>
#include <string>

namespace cleave::worker {

/// Agreement and gathers over the job's MPI ranks (the host
/// communicator, never the device one).
class MpiCoordinator : public checkpoint::Coordinator {
public:
  MpiCoordinator(comm::Communicator &comm, int rank, int size)
      : comm_(comm), rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int64_t minAll(int64_t value) override;
  std::vector<std::string> gatherToRoot(const std::string &text) override;

private:
  comm::Communicator &comm_;
  int rank_, size_;
};

/// The manifest fields of a save other than its tensors.
checkpoint::Manifest manifestBase(const plan::Plan &plan,
                                  const Options &options, uint64_t seed,
                                  const std::string &initFrom);

/// Rank 0 prints one line per committed save: its size, the time to
/// commit it, and the longest stall of any rank's step. Collective.
void reportSaves(checkpoint::Saver &saver, checkpoint::Coordinator &coord,
                 bool async);

/// Rank 0 prints what was loaded: bytes over all ranks and the slowest
/// rank's time. Collective.
void reportLoad(const checkpoint::Checkpoint &ckpt,
                const checkpoint::LoadReport &report,
                checkpoint::Coordinator &coord);

} // namespace cleave::worker

#endif // CLEAVE_TOOLS_CLEAVE_WORKER_CHECKPOINTING_H
