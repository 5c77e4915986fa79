//===- ImportOptions.h - Options shared by every importer -------*- C++ -*-===//
//
// Plain C++ (no MLIR) so that command-line parsing can fill it without
// pulling in MLIR headers.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_IMPORTERS_IMPORTOPTIONS_H
#define CLEAVE_IMPORTERS_IMPORTOPTIONS_H

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cleave {

/// How symbolic dimensions are bound and what an importer keeps. Shapes in
/// the graph dialect are static, so every symbolic dimension of a model's
/// inputs must be bound here (or have a default in the model itself).
struct ImportOptions {
  /// Binds the batch dimension: ONNX dims named batch, batch_size, N or
  /// similar (see the user guide), and the zoo's `batch` key.
  std::optional<int64_t> batch;
  /// Binds the sequence dimension: ONNX dims named seq, sequence,
  /// sequence_length, seq_len, and the zoo's `seq` key.
  std::optional<int64_t> seq;
  /// Binds any symbolic dimension by its exact name (`--dim NAME=VALUE`);
  /// takes precedence over `batch` and `seq`.
  std::map<std::string, int64_t> dims;
  /// Keep weights (ONNX initializers, Constant nodes) as `value`s of
  /// `graph.param`. When false, or when the weights live in absent external
  /// data, parameters carry only their type.
  bool keepWeights = true;
  /// Which imported weights train, overriding the importer's rule
  /// (floating-point initializers of rank 1 and up train; scalars, integer
  /// tensors and Constant-node values do not): names matching a `frozen`
  /// glob pattern (`--frozen`, as in `*.bias`) are frozen, then names
  /// matching a `trainable` one (`--trainable`) train; a floating scalar
  /// matched by `trainable` becomes a parameter.
  std::vector<std::string> trainable, frozen;
};

} // namespace cleave

#endif // CLEAVE_IMPORTERS_IMPORTOPTIONS_H
