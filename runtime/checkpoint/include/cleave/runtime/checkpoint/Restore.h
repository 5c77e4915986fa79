//===- Restore.h - Load a checkpoint into any plan of its model -*- C++ -*-===//
//
// Loading is resharding: each rank computes the boxes its program holds
// (Blocks.h) and cuts each out of the checkpoint's entries that overlap
// it, whatever plan wrote them. Every entry read is checked against its
// XXH3 checksum; a missing, truncated or corrupted shard file is an error
// naming the file and the tensor.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_CHECKPOINT_RESTORE_H
#define CLEAVE_RUNTIME_CHECKPOINT_RESTORE_H

#include "cleave/runtime/checkpoint/Blocks.h"
#include "cleave/runtime/checkpoint/Manifest.h"
#include "cleave/runtime/executor/Executor.h"

#include "absl/status/statusor.h"

#include <string>
#include <vector>

namespace cleave::checkpoint {

/// A checkpoint directory (a step directory) and its manifest.
struct Checkpoint {
  std::string dir;
  Manifest manifest;
};

/// Resolves `path` (Directory.h resolveCheckpoint) and reads its manifest.
absl::StatusOr<Checkpoint> openCheckpoint(const std::string &path);

/// Checks that `plan` can load `ckpt`: every parameter and optimizer state
/// the plan holds is in the checkpoint with the same global shape and
/// dtype, and the checkpoint has no parameter the plan lacks. One error
/// lists every mismatch (the first twenty), naming the tensors and the
/// manifest. Optimizer states the plan does not use (an AdamW checkpoint
/// resumed with SGD) are not errors; `notes` says which were dropped.
absl::Status checkPlanMatches(const Checkpoint &ckpt, const plan::Plan &plan,
                              std::vector<std::string> *notes = nullptr);

/// Fills `box` of tensor `tensor` (an index into the manifest's tensors)
/// into `dst` (row-major over the box) from the entries overlapping it,
/// verifying each entry's checksum. Adds the bytes read to `bytesRead`.
absl::Status readBox(const Checkpoint &ckpt, int tensor, const Box &box,
                     char *dst, int64_t *bytesRead = nullptr);

struct LoadReport {
  int64_t step = 0;
  int64_t bytesRead = 0;
  double seconds = 0;
};

/// Loads every checkpointed block of `rank`'s program into `executor`
/// (after checkPlanMatches).
absl::StatusOr<LoadReport> restoreRank(const Checkpoint &ckpt,
                                       const plan::Plan &plan, int rank,
                                       executor::Executor &executor);

} // namespace cleave::checkpoint

#endif // CLEAVE_RUNTIME_CHECKPOINT_RESTORE_H
