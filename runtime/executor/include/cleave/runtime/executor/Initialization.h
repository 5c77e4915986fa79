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
#include <map>
#include <memory>
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

/// Bytes of one row (one sample) of the global batch of INPUT `decl`: the
/// dimensions other than batch_dim, the sequence (seq_dim >= 0) whole, i.e.
/// its local size times the "cp" axis of `mesh`.
int64_t inputRowBytes(const plan::TensorDecl &decl, const comm::MeshInfo &mesh);

/// Copies into `dst` the block of a global-batch input that INPUT `decl` of
/// the rank at `mesh` holds for `microbatch`, exactly as the synthetic data
/// are cut: rows [m B/M + d B/(M dp), + B/(M dp)) (B = `globalBatch`, M =
/// `numMicrobatches`, d the "dp" coordinate) and, when seq_dim >= 0, the
/// "cp" coordinate's share of the sequence. `global` holds `globalBytes`
/// raw little-endian values of decl's dtype shaped [B, the other dimensions
/// in decl's order] (the sequence whole); it must be B * inputRowBytes().
absl::Status cutInputRows(const plan::TensorDecl &decl,
                          const comm::MeshInfo &mesh, int64_t globalBatch,
                          int64_t numMicrobatches, int64_t microbatch,
                          const void *global, int64_t globalBytes, void *dst);

/// Checks `--input` files (input_name -> path) against the plan without
/// reading them: every name is an INPUT of some program (the error lists
/// the plan's inputs) and every file holds global_batch * inputRowBytes
/// bytes (the error gives both sizes). The same answer on every rank.
absl::Status
checkInputFiles(const plan::Plan &plan, const comm::MeshInfo &mesh,
                const std::map<std::string, std::string> &inputFiles);

/// The model inputs of a step: synthetic, windows of a token file, or the
/// same global batch from a file every step (`--input NAME=FILE`).
class DataSource {
public:
  /// `tokenFile`: a flat file of uint16 token ids (nanoGPT's format); empty
  /// for synthetic data. `inputFiles`: input_name -> a file of that input's
  /// global batch (see cutInputRows); it overrides the other sources for
  /// that input. Unknown names and files of the wrong size are errors.
  /// `paddedMasks`: a synthetic mask (an input the plan makes ones) holds
  /// a right-padded batch instead: sample s of a step keeps its first
  /// L(s) positions, L drawn from [ceil(S/2), S] for S positions along its
  /// sequence (or last) dimension, the rest zeros; the same on every rank
  /// and under any partitioning.
  static absl::StatusOr<DataSource>
  create(const plan::Plan &plan, const comm::MeshInfo &mesh, uint64_t seed,
         const std::string &tokenFile,
         const std::map<std::string, std::string> &inputFiles = {},
         bool paddedMasks = false);

  /// Fills INPUT tensor `decl` (its slot at `dst`) for 1-based `step` and
  /// microbatch `microbatch` of this rank. `vocab` > 0 overrides
  /// decl.vocab() for synthetic ids.
  absl::Status fill(const plan::TensorDecl &decl, int64_t step,
                    int64_t microbatch, void *dst, int64_t vocab = 0) const;

  /// Input `name` holds `global` (its whole global batch) from now on.
  void setInput(const std::string &name, std::string global) {
    files_[name] = std::make_shared<const std::string>(std::move(global));
  }

private:
  DataSource() = default;

  comm::MeshInfo mesh_;
  uint64_t seed_ = 0;
  int64_t globalBatch_ = 0;
  int64_t numMicrobatches_ = 1;
  int64_t seqLen_ = 0;
  /// Some program reads "tokens": "labels" are then the next tokens.
  bool languageModel_ = false;
  bool paddedMasks_ = false;
  std::vector<uint16_t> tokens_;
  /// --input files by input name: the whole global batch.
  std::map<std::string, std::shared_ptr<const std::string>> files_;
};

} // namespace cleave::executor

#endif // CLEAVE_RUNTIME_EXECUTOR_INITIALIZATION_H
