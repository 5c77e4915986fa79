//===- Initialization.h - Deterministic parameters and data -----*- C++ -*-===//
//
// Every value the runtime makes up (initial parameters, synthetic batches)
// is a pure function of (seed, name, global index), computed with a
// counter-based generator, so that a tensor's values do not depend on how
// it is sharded or on which rank computes them: a 2-way sharded parameter
// holds exactly the halves of the unsharded one, and a 4-rank run sees the
// same batch as a 1-rank run.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_EXECUTOR_INITIALIZATION_H
#define CLEAVE_RUNTIME_EXECUTOR_INITIALIZATION_H

#include "cleave/runtime/comm/Communicator.h"
#include "cleave/runtime/plan/plan.pb.h"

#include "absl/status/statusor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace cleave::executor {

uint64_t splitmix64(uint64_t x);
/// FNV-1a 64 of `text`.
uint64_t hashString(const std::string &text);
/// Standard normal sample `index` of stream `key` (Box-Muller).
double normalSample(uint64_t key, uint64_t index);

/// Global index of this rank's block of a tensor split per dimension over
/// `dims` (mesh axes major to minor): per dimension, the first global
/// index it holds.
std::vector<int64_t> blockOrigin(const std::vector<int64_t> &localShape,
                                 const plan::TensorDecl &decl,
                                 const comm::MeshInfo &mesh);

/// Fills the local block of parameter `param` that `decl` (a PARAMETER
/// tensor of this rank) holds: from initial_value when given, else from
/// param.init with the values of element (name, global index, seed).
absl::Status initializeParameter(const plan::ParameterSharding &param,
                                 const plan::TensorDecl &decl,
                                 const comm::MeshInfo &mesh, uint64_t seed,
                                 float *dst);

/// The model inputs of a step: synthetic, or windows of a token file.
class DataSource {
public:
  /// `tokenFile`: a flat file of uint16 token ids (nanoGPT's format); empty
  /// for synthetic data.
  static absl::StatusOr<DataSource> create(const plan::Plan &plan,
                                           const comm::MeshInfo &mesh,
                                           uint64_t seed,
                                           const std::string &tokenFile);

  /// Fills INPUT tensor `decl` (its slot at `dst`) for 1-based `step` and
  /// microbatch `microbatch` of this rank. `vocab` > 0 overrides
  /// decl.vocab() for synthetic ids.
  absl::Status fill(const plan::TensorDecl &decl, int64_t step,
                    int64_t microbatch, void *dst, int64_t vocab = 0) const;

private:
  DataSource() = default;

  comm::MeshInfo mesh_;
  uint64_t seed_ = 0;
  int64_t globalBatch_ = 0;
  int64_t numMicrobatches_ = 1;
  int64_t seqLen_ = 0;
  /// Some program reads "tokens": "labels" are then the next tokens.
  bool languageModel_ = false;
  std::vector<uint16_t> tokens_;
};

} // namespace cleave::executor

#endif // CLEAVE_RUNTIME_EXECUTOR_INITIALIZATION_H
