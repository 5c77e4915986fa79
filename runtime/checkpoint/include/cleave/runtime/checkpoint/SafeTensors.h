//===- SafeTensors.h - Whole tensors in the safetensors format --*- C++ -*-===//
//
// The format other tools exchange weights in (Hugging Face safetensors): an
// 8-byte little-endian header length, a JSON header mapping each tensor's
// name to {"dtype", "shape", "data_offsets": [begin, end]} (offsets into
// the data after the header) and an optional "__metadata__" object of
// strings, then the raw little-endian data. `cleave checkpoint export`
// writes it; `--init-from` reads it. The JSON is read and written with
// nlohmann/json.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_CHECKPOINT_SAFETENSORS_H
#define CLEAVE_RUNTIME_CHECKPOINT_SAFETENSORS_H

#include "absl/status/statusor.h"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace cleave::checkpoint {

struct SafeTensorInfo {
  std::string name;
  /// "F32", "F16", "BF16", "F64", "I64", ...
  std::string dtype;
  std::vector<int64_t> shape;
  /// Byte offsets into the file (not the data section).
  int64_t begin = 0;
  int64_t end = 0;
};

class SafeTensorsReader {
public:
  /// Reads and checks the header (offsets inside the file, sizes matching
  /// shapes and dtypes); errors name the file and the tensor.
  static absl::StatusOr<SafeTensorsReader> open(const std::string &path);

  const std::string &path() const { return path_; }
  const std::vector<SafeTensorInfo> &tensors() const { return tensors_; }
  const std::map<std::string, std::string> &metadata() const {
    return metadata_;
  }
  const SafeTensorInfo *find(const std::string &name) const;
  /// The tensor's values as fp32 (F32 as is; F16, BF16 and F64 converted).
  absl::StatusOr<std::vector<float>> readF32(const SafeTensorInfo &t) const;

private:
  std::string path_;
  std::vector<SafeTensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

/// A tensor to write: its name, shape, and a producer of its fp32 values
/// (called once, in order, so that a large export holds one tensor at a
/// time).
struct SafeTensorOut {
  std::string name;
  std::vector<int64_t> shape;
  std::function<absl::StatusOr<std::vector<float>>()> values;
};

/// Writes F32 tensors to `path` (a temporary name, fsync, rename).
absl::Status writeSafeTensors(const std::string &path,
                              const std::vector<SafeTensorOut> &tensors,
                              const std::map<std::string, std::string> &metadata);

} // namespace cleave::checkpoint

#endif // CLEAVE_RUNTIME_CHECKPOINT_SAFETENSORS_H
