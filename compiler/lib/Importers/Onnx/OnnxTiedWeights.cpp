//===- OnnxTiedWeights.cpp - Initializers that hold the same values -------===//

#include "OnnxTiedWeights.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/xxhash.h"

#include <cstring>
#include <map>
#include <memory>

using onnx::TensorProto;

namespace cleave::onnx_import {

namespace {

constexpr int64_t kMinElements = 16;

/// A float32 initializer's little-endian bytes, read in place (a model's
/// weights are not copied to be compared); `storage` holds them only when
/// the tensor keeps them as float_data.
llvm::StringRef floatBytes(const TensorProto &t, std::string &storage) {
  if (t.data_type() != TensorProto::FLOAT ||
      t.data_location() == TensorProto::EXTERNAL)
    return {};
  if (t.has_raw_data())
    return t.raw_data();
  storage.assign(t.float_data_size() * sizeof(float), '\0');
  std::memcpy(storage.data(), t.float_data().data(), storage.size());
  return storage;
}

bool allOneValue(llvm::StringRef bytes) {
  for (size_t i = sizeof(float); i < bytes.size(); i += sizeof(float))
    if (std::memcmp(bytes.data(), bytes.data() + i, sizeof(float)) != 0)
      return false;
  return true;
}

/// Whether `b` ([cols, rows]) is `a` ([rows, cols]) transposed; compared
/// element by element, so a mismatch ends the walk early.
bool isTransposeOf(llvm::StringRef a, llvm::StringRef b, int64_t rows,
                   int64_t cols) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      if (std::memcmp(a.data() + (r * cols + c) * sizeof(float),
                      b.data() + (c * rows + r) * sizeof(float),
                      sizeof(float)) != 0)
        return false;
  return true;
}

} // namespace

std::vector<EqualWeights> findEqualWeights(const onnx::GraphProto &graph) {
  struct Candidate {
    const TensorProto *tensor;
    llvm::StringRef bytes;
  };
  // Tensors written as float_data: their bytes, kept while comparing.
  std::vector<std::unique_ptr<std::string>> copies;
  std::vector<Candidate> candidates;
  for (const TensorProto &t : graph.initializer()) {
    int64_t n = 1;
    for (int64_t d : t.dims())
      n *= d;
    if (n < kMinElements)
      continue;
    auto storage = std::make_unique<std::string>();
    llvm::StringRef bytes = floatBytes(t, *storage);
    if (int64_t(bytes.size()) != n * int64_t(sizeof(float)) ||
        allOneValue(bytes))
      continue;
    if (!storage->empty())
      copies.push_back(std::move(storage));
    candidates.push_back({&t, bytes});
  }
  std::multimap<uint64_t, size_t> byHash;
  for (size_t i = 0; i < candidates.size(); ++i)
    byHash.emplace(llvm::xxh3_64bits(candidates[i].bytes), i);
  std::vector<EqualWeights> found;
  auto sameDims = [](const TensorProto &a, const TensorProto &b) {
    return a.dims_size() == b.dims_size() &&
           std::equal(a.dims().begin(), a.dims().end(), b.dims().begin());
  };
  for (size_t i = 0; i < candidates.size(); ++i) {
    const Candidate &c = candidates[i];
    auto range = byHash.equal_range(llvm::xxh3_64bits(c.bytes));
    for (auto it = range.first; it != range.second; ++it)
      if (it->second > i && sameDims(*c.tensor, *candidates[it->second].tensor) &&
          candidates[it->second].bytes == c.bytes)
        found.push_back({c.tensor->name(), candidates[it->second].tensor->name(),
                         false});
    if (c.tensor->dims_size() != 2)
      continue;
    // Each pair once: from its first initializer. A transpose has other
    // bytes, so it is looked for among the 2-D tensors of transposed dims.
    int64_t rows = c.tensor->dims(0), cols = c.tensor->dims(1);
    for (size_t j = i + 1; j < candidates.size(); ++j) {
      const TensorProto &other = *candidates[j].tensor;
      if (other.dims_size() == 2 && other.dims(0) == cols &&
          other.dims(1) == rows &&
          isTransposeOf(c.bytes, candidates[j].bytes, rows, cols))
        found.push_back({c.tensor->name(), other.name(), true});
    }
  }
  return found;
}

} // namespace cleave::onnx_import
