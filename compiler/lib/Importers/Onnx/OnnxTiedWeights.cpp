//===- OnnxTiedWeights.cpp - Initializers that hold the same values -------===//

#include "OnnxTiedWeights.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/xxhash.h"

#include <cstring>
#include <map>

using onnx::TensorProto;

namespace cleave::onnx_import {

namespace {

constexpr int64_t kMinElements = 16;

/// The little-endian bytes of a float32 initializer, or empty.
std::string floatBytes(const TensorProto &t) {
  if (t.data_type() != TensorProto::FLOAT ||
      t.data_location() == TensorProto::EXTERNAL)
    return {};
  if (t.has_raw_data())
    return t.raw_data();
  std::string out(t.float_data_size() * sizeof(float), '\0');
  std::memcpy(out.data(), t.float_data().data(), out.size());
  return out;
}

bool allOneValue(const std::string &bytes) {
  for (size_t i = sizeof(float); i < bytes.size(); i += sizeof(float))
    if (std::memcmp(bytes.data(), bytes.data() + i, sizeof(float)) != 0)
      return false;
  return true;
}

/// [rows, cols] row-major bytes transposed.
std::string transposed(const std::string &bytes, int64_t rows, int64_t cols) {
  std::string out(bytes.size(), '\0');
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      std::memcpy(out.data() + (c * rows + r) * sizeof(float),
                  bytes.data() + (r * cols + c) * sizeof(float),
                  sizeof(float));
  return out;
}

uint64_t hashOf(const std::string &bytes) {
  return llvm::xxh3_64bits(llvm::StringRef(bytes));
}

} // namespace

std::vector<EqualWeights> findEqualWeights(const onnx::GraphProto &graph) {
  struct Candidate {
    const TensorProto *tensor;
    std::string bytes;
  };
  std::vector<Candidate> candidates;
  for (const TensorProto &t : graph.initializer()) {
    int64_t n = 1;
    for (int64_t d : t.dims())
      n *= d;
    if (n < kMinElements)
      continue;
    std::string bytes = floatBytes(t);
    if (int64_t(bytes.size()) != n * int64_t(sizeof(float)) ||
        allOneValue(bytes))
      continue;
    candidates.push_back({&t, std::move(bytes)});
  }
  std::multimap<uint64_t, size_t> byHash;
  for (size_t i = 0; i < candidates.size(); ++i)
    byHash.emplace(hashOf(candidates[i].bytes), i);
  std::vector<EqualWeights> found;
  auto sameDims = [](const TensorProto &a, const TensorProto &b) {
    return a.dims_size() == b.dims_size() &&
           std::equal(a.dims().begin(), a.dims().end(), b.dims().begin());
  };
  for (size_t i = 0; i < candidates.size(); ++i) {
    const Candidate &c = candidates[i];
    auto range = byHash.equal_range(hashOf(c.bytes));
    for (auto it = range.first; it != range.second; ++it)
      if (it->second > i && sameDims(*c.tensor, *candidates[it->second].tensor) &&
          candidates[it->second].bytes == c.bytes)
        found.push_back({c.tensor->name(), candidates[it->second].tensor->name(),
                         false});
    if (c.tensor->dims_size() != 2)
      continue;
    int64_t rows = c.tensor->dims(0), cols = c.tensor->dims(1);
    std::string t = transposed(c.bytes, rows, cols);
    auto trange = byHash.equal_range(hashOf(t));
    for (auto it = trange.first; it != trange.second; ++it) {
      const TensorProto &other = *candidates[it->second].tensor;
      // Each pair once: from its first initializer.
      if (it->second > i && other.dims_size() == 2 && other.dims(0) == cols &&
          other.dims(1) == rows && candidates[it->second].bytes == t)
        found.push_back({c.tensor->name(), other.name(), true});
    }
  }
  return found;
}

} // namespace cleave::onnx_import
