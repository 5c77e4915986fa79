//===- Saver.h - Save a rank's state, synchronously or in the background -*- C++ -*-===//
//
// Every rank of a job owns a Saver. A save is collective: each rank copies
// the blocks it writes (Blocks.h: one replica of each box) out of its
// executor into host memory, then writes them to its shard file, either at
// once (synchronous) or from a background thread while training goes on
// (asynchronous, the default: the step stalls only for the copy). When
// every rank's file is on disk, rank 0 writes the manifest and commits the
// directory (Directory.h). Ranks learn that everyone has finished through
// the Coordinator at the end of each later step (poll), as PyTorch DCP's
// async_save and Megatron's asynchronous checkpointing finalize theirs.
//
// Any rank's failure (a full disk, an unwritable directory) fails the save
// on every rank: the partial directory is removed, the previous complete
// checkpoint stays as it was, and rank 0 holds every rank's message.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_CHECKPOINT_SAVER_H
#define CLEAVE_RUNTIME_CHECKPOINT_SAVER_H

#include "cleave/runtime/checkpoint/Blocks.h"
#include "cleave/runtime/checkpoint/Manifest.h"
#include "cleave/runtime/executor/Executor.h"

#include "absl/status/status.h"

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace cleave::checkpoint {

/// What a save needs of the job's ranks: an agreement and a gather. Over
/// MPI in the worker; a single rank or threads in tests.
class Coordinator {
public:
  virtual ~Coordinator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// The minimum of `value` over all ranks; every rank calls it.
  virtual int64_t minAll(int64_t value) = 0;
  /// Every rank's `text` in rank order on rank 0 (empty elsewhere).
  virtual std::vector<std::string> gatherToRoot(const std::string &text) = 0;
};

/// The coordinator of a job of one rank.
class SingleRankCoordinator : public Coordinator {
public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int64_t minAll(int64_t value) override { return value; }
  std::vector<std::string> gatherToRoot(const std::string &text) override {
    return {text};
  }
};

struct SaveOptions {
  /// The save directory (Directory.h).
  std::string dir;
  /// Write from a background thread (the step stalls for the copy only).
  bool async = true;
  /// Keep this many complete checkpoints (0: all).
  int keep = 0;
  /// Fault injection for the tests: called in the writer after the first
  /// block of the shard is written (a kill there cuts a save midway).
  std::function<void()> afterFirstBlock;
};

/// One committed save, as rank 0 reports it.
struct SaveReport {
  int64_t step = 0;
  std::string dir;
  /// Bytes of every rank's shard together.
  int64_t bytes = 0;
  /// Time the training loop waited for this save on this rank: the copy
  /// and, synchronous, the write and commit.
  double stallSeconds = 0;
  /// From the start of the copy to the commit.
  double totalSeconds = 0;
  /// This rank's write of its shard file (copy excluded).
  double writeSeconds = 0;
};

class Saver {
public:
  /// `base` holds the manifest's fields other than the tensors (model, run
  /// info, producer).
  Saver(const plan::Plan &plan, int rank, Coordinator &coordinator,
        SaveOptions options, Manifest base);
  ~Saver();

  /// Collective: saves the state `executor` holds after step `step`. Call
  /// executor.finishSteps() first (ZeRO's carried gathers complete the
  /// parameters). A save still in flight is completed first.
  absl::Status save(int64_t step, executor::Executor &executor);
  /// Collective, after every step while pending(): commits an
  /// asynchronous save once every rank has written its shard; `wait`
  /// blocks until then.
  absl::Status poll(bool wait);
  bool pending() const { return pending_; }
  /// The saves committed since the last call.
  std::vector<SaveReport> takeReports();

private:
  struct Write;
  absl::Status commit(Write &write);
  absl::Status failEverywhere(const absl::Status &local, int64_t step);

  const plan::Plan &plan_;
  int rank_;
  Coordinator &coordinator_;
  SaveOptions options_;
  Manifest base_;
  std::vector<Block> blocks_;
  /// The host copy of each block, kept from save to save: a save never
  /// writes while the previous one's write runs, and allocating (and
  /// faulting in) a model's worth of fresh memory per save was most of
  /// the async stall.
  std::vector<std::string> staging_;
  bool pending_ = false;
  std::unique_ptr<Write> write_;
  std::vector<SaveReport> reports_;
};

} // namespace cleave::checkpoint

#endif // CLEAVE_RUNTIME_CHECKPOINT_SAVER_H
