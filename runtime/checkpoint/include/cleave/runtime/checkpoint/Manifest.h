//===- Manifest.h - The checkpoint manifest file ----------------*- C++ -*-===//
//
// manifest.pb is a small header and the serialized cleave.checkpoint.Manifest
// (checkpoint.proto), laid out like a plan file so that each failure has its
// own message:
//
//   bytes 0-7    magic "CLEAVECK"
//   bytes 8-11   format version, little-endian uint32
//   bytes 12-19  payload length, little-endian uint64
//   bytes 20-27  XXH3-64 of the payload, little-endian
//   bytes 28-    the payload
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_CHECKPOINT_MANIFEST_H
#define CLEAVE_RUNTIME_CHECKPOINT_MANIFEST_H

#include "cleave/runtime/checkpoint/checkpoint.pb.h"

#include "absl/status/statusor.h"

#include <map>
#include <string>
#include <utility>

namespace cleave::checkpoint {

inline constexpr uint32_t kFormatVersion = 1;
inline constexpr const char *kManifestName = "manifest.pb";

std::string serializeManifest(const Manifest &manifest);
/// `path` names the file in errors.
absl::StatusOr<Manifest> parseManifest(const std::string &bytes,
                                       const std::string &path);
absl::StatusOr<Manifest> readManifestFile(const std::string &path);

/// "name" or "name.state".
std::string tensorKey(const TensorInfo &tensor);

/// Merges the per-rank manifests (each with only its own tensors, files
/// and entries) into one, tensors deduplicated by name and state (their
/// shapes and dtypes must agree) and indices remapped. `base` gives the
/// other fields.
absl::StatusOr<Manifest> mergeManifests(const Manifest &base,
                                        const std::vector<Manifest> &parts);

/// Checks that the entries tile every tensor exactly (each element held
/// by one entry, boxes inside the tensor, byte counts matching the boxes)
/// and that every reference is in range. The first problem, naming the
/// tensor.
absl::Status validateManifest(const Manifest &manifest);

} // namespace cleave::checkpoint

#endif // CLEAVE_RUNTIME_CHECKPOINT_MANIFEST_H
