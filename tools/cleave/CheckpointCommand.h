//===- CheckpointCommand.h - `cleave checkpoint` and weights files -*- C++ -*-===//

#ifndef CLEAVE_TOOLS_CHECKPOINTCOMMAND_H
#define CLEAVE_TOOLS_CHECKPOINTCOMMAND_H

#include "cleave/runtime/plan/plan.pb.h"

#include "absl/status/statusor.h"

#include <string>

namespace cleave::tool {

/// `cleave checkpoint inspect DIR`: step, model, run, tensors with their
/// shards, and (unless !verify) the integrity of every shard entry.
/// Returns the exit code (1 when an entry is corrupt or missing).
int inspectCheckpoint(const std::string &dir, bool json, bool verify);

/// `cleave checkpoint export DIR -o FILE`: every parameter whole, by name,
/// as safetensors. Returns the exit code.
int exportCheckpoint(const std::string &dir, const std::string &out);

/// The safetensors file the workers read for `--init-from PATH`: PATH
/// itself, or for an ONNX file its floating-point initializers written to
/// a temporary safetensors file (ONNX's integer initializers are shapes and
/// indices, not weights).
absl::StatusOr<std::string> weightsForWorkers(const std::string &path);

} // namespace cleave::tool

#endif // CLEAVE_TOOLS_CHECKPOINTCOMMAND_H
