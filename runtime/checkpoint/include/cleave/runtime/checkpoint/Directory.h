//===- Directory.h - A checkpoint directory and its atomic updates -*- C++ -*-===//
//
// The layout of `--save DIR` (docs/checkpoint-format.md):
//
//   DIR/latest                    "step-00000200\n", replaced atomically
//   DIR/step-00000200/manifest.pb written last: its presence = complete
//   DIR/step-00000200/rank-00000.shard ...
//   DIR/step-00000300.partial/    a save in progress (or one a crash cut)
//
// A save writes into step-N.partial (every file fsync'd), rank 0 writes the
// manifest there once every rank has finished, renames the directory to
// step-N and only then points `latest` at it. A process killed at any
// moment leaves either the previous complete checkpoint with `latest` on
// it, or the new one complete: a .partial directory is never read, and the
// next save of the same step replaces it.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_CHECKPOINT_DIRECTORY_H
#define CLEAVE_RUNTIME_CHECKPOINT_DIRECTORY_H

#include "cleave/runtime/checkpoint/Manifest.h"

#include "absl/status/statusor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace cleave::checkpoint {

/// "step-00000200".
std::string stepDirName(int64_t step);
/// "rank-00003.shard".
std::string shardFileName(int rank);

/// Creates DIR if needed and an empty DIR/step-N.partial (removing what a
/// cut save left there). Errors name the directory.
absl::StatusOr<std::string> preparePartialDir(const std::string &root,
                                              int64_t step);

/// Rank 0, once every shard is on disk: writes the manifest into the
/// partial directory, renames it to DIR/step-N (replacing an older save of
/// the same step), points DIR/latest at it, each step fsync'd. Returns the
/// final directory.
absl::StatusOr<std::string> commitCheckpoint(const std::string &root,
                                             int64_t step,
                                             const Manifest &manifest);

/// Removes DIR/step-N.partial (a save that failed).
void removePartialDir(const std::string &root, int64_t step);

/// The complete checkpoints under DIR (step directories with a manifest),
/// oldest first.
std::vector<std::pair<int64_t, std::string>>
completeCheckpoints(const std::string &root);

/// Keeps the `keep` newest complete checkpoints and the one `latest`
/// names; removes the rest and any stale .partial directory of an older
/// step. keep <= 0 keeps everything.
void pruneCheckpoints(const std::string &root, int keep);

/// The checkpoint `path` names: a step directory (it holds manifest.pb),
/// or a save directory, whose `latest` (else its newest complete step) is
/// taken. A clear error when there is none.
absl::StatusOr<std::string> resolveCheckpoint(const std::string &path);

} // namespace cleave::checkpoint

#endif // CLEAVE_RUNTIME_CHECKPOINT_DIRECTORY_H
