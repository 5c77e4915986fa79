//===- DataSource.cpp - The model inputs of a step ------------------------===//
//
// Microbatch m of a step is rows [m B/M, (m+1) B/M) of the global batch;
// data-parallel rank d takes its share of those, and context-parallel rank
// c its share of the sequence. Synthetic tokens are a hash of (seed, step,
// global row, position), so that any partitioning sees the same batch;
// language-model labels are the next position's token.
//
//===----------------------------------------------------------------------===//

#include "cleave/runtime/executor/Initialization.h"

#include "absl/strings/str_cat.h"

#include <fstream>

namespace cleave::executor {

namespace {

int64_t axisSize(const comm::MeshInfo &mesh, const std::string &axis) {
  int i = mesh.axisIndex(axis);
  return i < 0 ? 1 : mesh.axisSizes[i];
}

int64_t axisCoord(const comm::MeshInfo &mesh, const std::string &axis) {
  int i = mesh.axisIndex(axis);
  return i < 0 ? 0 : mesh.coords[i];
}

uint64_t mix(uint64_t h, uint64_t v) { return splitmix64(h ^ v); }

} // namespace

absl::StatusOr<DataSource> DataSource::create(const plan::Plan &plan,
                                              const comm::MeshInfo &mesh,
                                              uint64_t seed,
                                              const std::string &tokenFile) {
  DataSource source;
  source.mesh_ = mesh;
  source.seed_ = seed;
  source.globalBatch_ = plan.training().global_batch();
  source.numMicrobatches_ = std::max<int64_t>(1, plan.knobs().num_microbatches());
  source.seqLen_ = plan.training().seq_len();
  for (const plan::Program &program : plan.programs())
    for (const plan::TensorDecl &t : program.tensors())
      if (t.kind() == plan::TensorDecl::INPUT && t.input_name() == "tokens")
        source.languageModel_ = true;
  if (!tokenFile.empty()) {
    std::ifstream in(tokenFile, std::ios::binary | std::ios::ate);
    if (!in)
      return absl::NotFoundError(absl::StrCat(tokenFile, ": cannot open"));
    std::streamsize size = in.tellg();
    in.seekg(0);
    source.tokens_.resize(static_cast<size_t>(size) / 2);
    in.read(reinterpret_cast<char *>(source.tokens_.data()),
            static_cast<std::streamsize>(source.tokens_.size() * 2));
    if (!in)
      return absl::DataLossError(absl::StrCat(tokenFile, ": read failed"));
  }
  return source;
}

absl::Status DataSource::fill(const plan::TensorDecl &decl, int64_t step,
                              int64_t microbatch, void *dst,
                              int64_t vocabOverride) const {
  int64_t vocab = vocabOverride > 0 ? vocabOverride : decl.vocab();
  std::vector<int64_t> shape(decl.shape().begin(), decl.shape().end());
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  const std::string &name = decl.input_name();
  auto where = [&] {
    return absl::StrCat("input '", name, "' (tensor ", decl.id(), " '",
                        decl.name(), "')");
  };
  if (name == "step") {
    if (decl.dtype() != plan::F32)
      return absl::InvalidArgumentError(where() + " is not f32");
    float *out = static_cast<float *>(dst);
    for (int64_t i = 0; i < n; ++i)
      out[i] = static_cast<float>(step);
    return absl::OkStatus();
  }

  int rank = static_cast<int>(shape.size());
  int batchDim = decl.batch_dim(), seqDim = decl.seq_dim();
  bool isInt = decl.dtype() == plan::I64 || decl.dtype() == plan::I32;
  // Only a declared seq_dim is split over "cp"; an integer [batch, seq]
  // input without one still has positions (labels are the next one's).
  bool splitSeq = seqDim >= 0;
  if (!splitSeq && isInt && rank == 2 && (batchDim == 0 || batchDim == 1))
    seqDim = 1 - batchDim;
  if (batchDim < 0 || batchDim >= rank || seqDim >= rank || seqDim == batchDim)
    return absl::InvalidArgumentError(
        absl::StrCat(where(), " has batch_dim ", batchDim, " and seq_dim ",
                     seqDim, " for a rank-", rank, " tensor"));
  int64_t dp = axisSize(mesh_, "dp"), cp = axisSize(mesh_, "cp");
  int64_t rows = shape[batchDim];
  int64_t perMicrobatch = globalBatch_ > 0 ? globalBatch_ / numMicrobatches_
                                           : rows * dp;
  if (rows * dp != perMicrobatch)
    return absl::InvalidArgumentError(absl::StrCat(
        where(), " has ", rows, " rows; a global batch of ", globalBatch_,
        " in ", numMicrobatches_, " microbatches over ", dp,
        " data-parallel ranks needs ", perMicrobatch / dp));
  int64_t mb = std::max<int64_t>(0, microbatch);
  int64_t row0 = mb * perMicrobatch + axisCoord(mesh_, "dp") * rows;
  int64_t localSeq = seqDim >= 0 ? shape[seqDim] : 1;
  int64_t pos0 = splitSeq ? axisCoord(mesh_, "cp") * localSeq : 0;
  int64_t globalSeq = splitSeq ? localSeq * cp : localSeq;
  int64_t batch = globalBatch_ > 0 ? globalBatch_ : perMicrobatch;
  // Elements of the dimensions other than batch and sequence.
  int64_t rest = n / rows / localSeq;

  if (!isInt && decl.dtype() != plan::F32)
    return absl::InvalidArgumentError(
        absl::StrCat(where(), " is ", plan::DType_Name(decl.dtype()),
                     "; inputs are f32, i64 or i32"));
  bool fromFile = isInt && !tokens_.empty();
  int64_t fileSeq = seqLen_ > 0 ? seqLen_ : globalSeq;
  if (fromFile && static_cast<int64_t>(tokens_.size()) <= fileSeq + 1)
    return absl::InvalidArgumentError(absl::StrCat(
        "the token file has ", tokens_.size(), " tokens, fewer than a ",
        "sequence of ", fileSeq, " needs"));
  if (isInt && !fromFile && vocab <= 0)
    return absl::InvalidArgumentError(
        where() + " has no vocab for synthetic ids (TensorDecl.vocab)");
  bool shifted = name == "labels" && languageModel_;
  uint64_t nameKey = hashString(shifted ? "tokens" : name);
  uint64_t streamKey = mix(mix(splitmix64(seed_), nameKey),
                           static_cast<uint64_t>(step));

  // Walk the local elements with their (row, position, rest) coordinates.
  std::vector<int64_t> idx(rank, 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t row = row0 + idx[batchDim];
    int64_t pos = pos0 + (seqDim >= 0 ? idx[seqDim] : 0) + (shifted ? 1 : 0);
    int64_t other = 0;
    for (int d = 0; d < rank; ++d)
      if (d != batchDim && d != seqDim)
        other = other * shape[d] + idx[d];
    int64_t value = 0;
    if (fromFile) {
      int64_t span = static_cast<int64_t>(tokens_.size()) - fileSeq - 1;
      int64_t start = (((step - 1) * batch + row) * fileSeq) % span;
      value = tokens_[start + pos];
    } else {
      uint64_t h = mix(mix(mix(streamKey, row), pos), other);
      if (isInt)
        value = static_cast<int64_t>(h % static_cast<uint64_t>(vocab));
      else
        static_cast<float *>(dst)[i] = static_cast<float>(
            normalSample(streamKey, (row * globalSeq + pos) * rest + other));
    }
    if (decl.dtype() == plan::I64)
      static_cast<int64_t *>(dst)[i] = value;
    else if (decl.dtype() == plan::I32)
      static_cast<int32_t *>(dst)[i] = static_cast<int32_t>(value);
    for (int d = rank; d-- > 0;) {
      if (++idx[d] < shape[d])
        break;
      idx[d] = 0;
    }
  }
  return absl::OkStatus();
}

} // namespace cleave::executor
