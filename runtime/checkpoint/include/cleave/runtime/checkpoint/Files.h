//===- Files.h - Durable file writes and checked reads ----------*- C++ -*-===//
//
// The few POSIX calls a crash-safe checkpoint needs, each failing with a
// Status that names the path and the errno text: a write that is fsync'd
// before it counts, an atomic replace (temporary name, fsync, rename,
// fsync of the directory), and positioned reads.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_CHECKPOINT_FILES_H
#define CLEAVE_RUNTIME_CHECKPOINT_FILES_H

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include <cstdint>
#include <string>

namespace cleave::checkpoint {

/// An open file for writing (created or truncated); closes on destruction.
class OutputFile {
public:
  static absl::StatusOr<OutputFile> create(const std::string &path);
  OutputFile(OutputFile &&other) noexcept;
  OutputFile &operator=(OutputFile &&other) noexcept;
  ~OutputFile();

  /// Appends `bytes` bytes; `what` names the data in errors ("tensor
  /// 'h.0.w'").
  absl::Status append(const void *data, int64_t bytes, const std::string &what);
  /// fsync and close: the data are on disk when this returns OK.
  absl::Status sync();
  int64_t size() const { return size_; }
  const std::string &path() const { return path_; }

private:
  OutputFile(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_ = -1;
  std::string path_;
  int64_t size_ = 0;
};

/// Writes `bytes` to `path` so that a reader sees either the old file or
/// the whole new one: PATH.tmp, fsync, rename, fsync of the directory.
absl::Status replaceFileAtomically(const std::string &path,
                                   const std::string &bytes);

/// fsync of a directory (after renames and creations inside it).
absl::Status syncDirectory(const std::string &dir);

/// The whole file.
absl::StatusOr<std::string> readWholeFile(const std::string &path);

/// `bytes` bytes at `offset` of `path`; a file too short is DataLoss
/// naming `what`.
absl::Status readAt(const std::string &path, int64_t offset, int64_t bytes,
                    void *dst, const std::string &what);

/// XXH3-64 of `bytes` bytes.
uint64_t hashBytes(const void *data, int64_t bytes);

} // namespace cleave::checkpoint

#endif // CLEAVE_RUNTIME_CHECKPOINT_FILES_H
