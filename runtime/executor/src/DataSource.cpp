//===- DataSource.cpp - The model inputs of a step ------------------------===//
//
// Microbatch m of a step is rows [m B/M, (m+1) B/M) of the global batch;
// data-parallel rank d takes its share of those, and context-parallel rank
// c its share of the sequence. Synthetic tokens are a hash of (seed, step,
// global row, position), so that any partitioning sees the same batch;
// language-model labels are the next position's token. An `--input` file
// holds one input's global batch, cut the same way (the same rows every
// step).
//
//===----------------------------------------------------------------------===//

#include "cleave/runtime/executor/Initialization.h"

#include "cleave/runtime/plan/PlanIO.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

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

/// The data-parallel replicas: the "dp" axis and, with expert parallelism,
/// the "ep" axis inside it (its replicas hold different samples too).
int64_t replicaCount(const comm::MeshInfo &mesh) {
  return axisSize(mesh, "dp") * axisSize(mesh, "ep");
}

int64_t replicaIndex(const comm::MeshInfo &mesh) {
  return axisCoord(mesh, "dp") * axisSize(mesh, "ep") + axisCoord(mesh, "ep");
}

uint64_t mix(uint64_t h, uint64_t v) { return splitmix64(h ^ v); }

std::string inputWhere(const plan::TensorDecl &decl) {
  return absl::StrCat("input '", decl.input_name(), "' (tensor ", decl.id(),
                      " '", decl.name(), "')");
}

/// Inputs whose values follow from their shape (TensorDecl.Synthesis):
/// ones, zeros, or each element's position along `seqDim` offset by
/// `pos0` (this rank's first position under context parallelism).
absl::Status fillStructured(const plan::TensorDecl &decl,
                            plan::TensorDecl::Synthesis synthesis,
                            const std::vector<int64_t> &shape, int seqDim,
                            int64_t pos0, void *dst) {
  int rank = static_cast<int>(shape.size());
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  // Elements after the sequence dimension, and its length.
  int64_t inner = 1, seq = 1;
  if (synthesis == plan::TensorDecl::SYNTH_POSITIONS) {
    if (seqDim < 0 || seqDim >= rank)
      seqDim = rank - 1;
    if (seqDim < 0)
      return absl::InvalidArgumentError(
          inputWhere(decl) + " holds positions but is a scalar");
    seq = shape[seqDim];
    for (int d = seqDim + 1; d < rank; ++d)
      inner *= shape[d];
  }
  for (int64_t i = 0; i < n; ++i) {
    double v = synthesis == plan::TensorDecl::SYNTH_ONES ? 1
               : synthesis == plan::TensorDecl::SYNTH_ZEROS
                   ? 0
                   : double(pos0 + (i / inner) % seq);
    switch (decl.dtype()) {
    case plan::F32:
      static_cast<float *>(dst)[i] = static_cast<float>(v);
      break;
    case plan::I64:
      static_cast<int64_t *>(dst)[i] = static_cast<int64_t>(v);
      break;
    case plan::I32:
      static_cast<int32_t *>(dst)[i] = static_cast<int32_t>(v);
      break;
    case plan::BOOL:
    case plan::U8:
    case plan::I8:
      static_cast<uint8_t *>(dst)[i] = static_cast<uint8_t>(v);
      break;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          inputWhere(decl), " is ", plan::DType_Name(decl.dtype()),
          "; synthetic ", plan::TensorDecl::Synthesis_Name(synthesis),
          " inputs are f32, i64, i32, i8, u8 or bool"));
    }
  }
  return absl::OkStatus();
}

/// A right-padded mask (DataSource::create's `paddedMasks`): element
/// (row, position along `keyDim`) is 1 where the position is below the
/// row's length, drawn from `key` for the row in [ceil(S/2), S], S =
/// `keyLen` the whole sequence's positions; `row0` and `pos0` are this
/// rank's first row and position.
absl::Status fillPaddedMask(const plan::TensorDecl &decl,
                            const std::vector<int64_t> &shape, int batchDim,
                            int keyDim, int64_t row0, int64_t pos0,
                            int64_t keyLen, uint64_t key, void *dst) {
  int rank = static_cast<int>(shape.size());
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  std::vector<int64_t> idx(rank, 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t row = row0 + idx[batchDim];
    int64_t pos = pos0 + idx[keyDim];
    uint64_t h = mix(key, static_cast<uint64_t>(row));
    int64_t length = keyLen - static_cast<int64_t>(
                                  h % static_cast<uint64_t>(keyLen / 2 + 1));
    bool keep = pos < length;
    switch (decl.dtype()) {
    case plan::F32:
      static_cast<float *>(dst)[i] = keep ? 1.0f : 0.0f;
      break;
    case plan::I64:
      static_cast<int64_t *>(dst)[i] = keep;
      break;
    case plan::I32:
      static_cast<int32_t *>(dst)[i] = keep;
      break;
    case plan::BOOL:
    case plan::U8:
    case plan::I8:
      static_cast<uint8_t *>(dst)[i] = keep;
      break;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          inputWhere(decl), " is ", plan::DType_Name(decl.dtype()),
          "; padded masks are f32, i64, i32, i8, u8 or bool"));
    }
    for (int d = rank; d-- > 0;) {
      if (++idx[d] < shape[d])
        break;
      idx[d] = 0;
    }
  }
  return absl::OkStatus();
}

} // namespace

int64_t inputRowBytes(const plan::TensorDecl &decl,
                      const comm::MeshInfo &mesh) {
  int64_t bytes = plan::dtypeBytes(decl.dtype());
  for (int d = 0; d < decl.shape_size(); ++d)
    if (d != decl.batch_dim())
      bytes *= decl.shape(d) * (d == decl.seq_dim() ? axisSize(mesh, "cp") : 1);
  return bytes;
}

absl::Status cutInputRows(const plan::TensorDecl &decl,
                          const comm::MeshInfo &mesh, int64_t globalBatch,
                          int64_t numMicrobatches, int64_t microbatch,
                          const void *global, int64_t globalBytes, void *dst) {
  std::vector<int64_t> shape(decl.shape().begin(), decl.shape().end());
  int rank = static_cast<int>(shape.size());
  int batchDim = decl.batch_dim(), seqDim = decl.seq_dim();
  if (batchDim < 0 && seqDim < 0) {
    // A whole input (not batched: a constant operand of an imported
    // graph): the file holds it once, the same for every microbatch.
    int64_t bytes = inputRowBytes(decl, mesh);
    if (globalBytes != bytes)
      return absl::InvalidArgumentError(
          absl::StrCat(inputWhere(decl), ": expected ", bytes,
                       " bytes (it is not batched), got ", globalBytes));
    std::memcpy(dst, global, bytes);
    return absl::OkStatus();
  }
  if (batchDim < 0 || batchDim >= rank || seqDim >= rank ||
      (seqDim >= 0 && seqDim == batchDim))
    return absl::InvalidArgumentError(
        absl::StrCat(inputWhere(decl), " has batch_dim ", batchDim,
                     " and seq_dim ", seqDim, " for a rank-", rank, " tensor"));
  int64_t M = std::max<int64_t>(1, numMicrobatches);
  int64_t dp = replicaCount(mesh), cp = axisSize(mesh, "cp");
  int64_t rows = shape[batchDim];
  if (globalBatch <= 0 || globalBatch % M != 0 ||
      rows * dp != globalBatch / M)
    return absl::InvalidArgumentError(absl::StrCat(
        inputWhere(decl), " has ", rows, " rows; a global batch of ",
        globalBatch, " in ", M, " microbatches over ", dp,
        " data-parallel ranks needs ", globalBatch / M / std::max<int64_t>(1, dp)));
  int64_t rowBytes = inputRowBytes(decl, mesh);
  if (globalBytes != globalBatch * rowBytes)
    return absl::InvalidArgumentError(absl::StrCat(
        inputWhere(decl), ": expected ", globalBatch * rowBytes,
        " bytes for a global batch of ", globalBatch, ", got ", globalBytes));
  int64_t mb = std::max<int64_t>(0, microbatch) % M;
  int64_t row0 = mb * (globalBatch / M) + replicaIndex(mesh) * rows;
  const char *src = static_cast<const char *>(global);
  char *out = static_cast<char *>(dst);
  bool splitSeq = seqDim >= 0 && cp > 1;
  if (batchDim == 0 && !splitSeq) {
    // The rows are contiguous in both.
    std::memcpy(out, src + row0 * rowBytes, rows * rowBytes);
    return absl::OkStatus();
  }
  // Global strides of the file's [batch, other dims...] layout.
  int64_t elementBytes = plan::dtypeBytes(decl.dtype());
  std::vector<int64_t> stride(rank, 0);
  int64_t s = elementBytes;
  for (int d = rank; d-- > 0;) {
    if (d == batchDim)
      continue;
    stride[d] = s;
    s *= shape[d] * (d == seqDim ? cp : 1);
  }
  stride[batchDim] = rowBytes;
  int64_t pos0 = seqDim >= 0 ? axisCoord(mesh, "cp") * shape[seqDim] : 0;
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  std::vector<int64_t> idx(rank, 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t offset = 0;
    for (int d = 0; d < rank; ++d) {
      int64_t g = idx[d];
      if (d == batchDim)
        g += row0;
      else if (d == seqDim)
        g += pos0;
      offset += g * stride[d];
    }
    std::memcpy(out + i * elementBytes, src + offset, elementBytes);
    for (int d = rank; d-- > 0;) {
      if (++idx[d] < shape[d])
        break;
      idx[d] = 0;
    }
  }
  return absl::OkStatus();
}

absl::Status
checkInputFiles(const plan::Plan &plan, const comm::MeshInfo &mesh,
                const std::map<std::string, std::string> &inputFiles) {
  if (inputFiles.empty())
    return absl::OkStatus();
  // The plan's inputs, in order of first appearance ("step" and
  // "loss_scale" are the runtime's, not the model's).
  std::vector<const plan::TensorDecl *> inputs;
  for (const plan::Program &program : plan.programs())
    for (const plan::TensorDecl &t : program.tensors()) {
      if (t.kind() != plan::TensorDecl::INPUT || t.input_name() == "step" ||
          t.input_name() == "loss_scale")
        continue;
      bool seen = false;
      for (const plan::TensorDecl *other : inputs)
        seen = seen || other->input_name() == t.input_name();
      if (!seen)
        inputs.push_back(&t);
    }
  int64_t globalBatch = plan.training().global_batch();
  for (const auto &[name, path] : inputFiles) {
    const plan::TensorDecl *decl = nullptr;
    std::vector<std::string> names;
    for (const plan::TensorDecl *t : inputs) {
      names.push_back(t->input_name());
      if (t->input_name() == name)
        decl = t;
    }
    if (!decl)
      return absl::InvalidArgumentError(absl::StrCat(
          "--input ", name, "=", path, ": the plan has no input '", name,
          "'; its inputs are: ",
          names.empty() ? "(none)" : absl::StrJoin(names, ", ")));
    if (globalBatch <= 0 && decl->batch_dim() >= 0)
      return absl::InvalidArgumentError(
          absl::StrCat("--input ", name, "=", path,
                       ": the plan has no global batch (training.global_batch)"));
    int64_t rowBytes = inputRowBytes(*decl, mesh);
    // A whole input (batch_dim < 0) is given once.
    bool whole = decl->batch_dim() < 0 && decl->seq_dim() < 0;
    int64_t expected = whole ? rowBytes : globalBatch * rowBytes;
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in)
      return absl::NotFoundError(
          absl::StrCat("--input ", name, "=", path, ": cannot open ", path));
    int64_t size = static_cast<int64_t>(in.tellg());
    if (size != expected && whole)
      return absl::InvalidArgumentError(absl::StrCat(
          "--input ", name, "=", path, ": expected ", expected,
          " bytes (", plan::DType_Name(decl->dtype()),
          ", not batched: the whole tensor once), but the file has ", size,
          " bytes"));
    if (size != expected) {
      std::string dims;
      for (int d = 0; d < decl->shape_size(); ++d)
        if (d != decl->batch_dim())
          absl::StrAppend(&dims, ", ",
                          decl->shape(d) *
                              (d == decl->seq_dim() ? axisSize(mesh, "cp") : 1));
      return absl::InvalidArgumentError(absl::StrCat(
          "--input ", name, "=", path, ": expected ", expected,
          " bytes (global batch ", globalBatch, " x ", rowBytes,
          " bytes per row: ", plan::DType_Name(decl->dtype()), " [",
          globalBatch, dims, "]), but the file has ", size, " bytes"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<DataSource>
DataSource::create(const plan::Plan &plan, const comm::MeshInfo &mesh,
                   uint64_t seed, const std::string &tokenFile,
                   const std::map<std::string, std::string> &inputFiles,
                   bool paddedMasks) {
  DataSource source;
  source.mesh_ = mesh;
  source.paddedMasks_ = paddedMasks;
  source.seed_ = seed;
  source.globalBatch_ = plan.training().global_batch();
  source.numMicrobatches_ = std::max<int64_t>(1, plan.knobs().num_microbatches());
  source.seqLen_ = plan.training().seq_len();
  for (const plan::Program &program : plan.programs())
    for (const plan::TensorDecl &t : program.tensors())
      if (t.kind() == plan::TensorDecl::INPUT && t.input_name() == "tokens")
        source.languageModel_ = true;
  if (!tokenFile.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(tokenFile, ec))
      return absl::InvalidArgumentError(absl::StrCat(
          tokenFile, ": not a file of token ids (uint16, as nanoGPT writes "
                     "them)"));
    std::ifstream in(tokenFile, std::ios::binary | std::ios::ate);
    if (!in)
      return absl::NotFoundError(absl::StrCat(tokenFile, ": cannot open"));
    std::streamsize size = in.tellg();
    // Silently training on synthetic ids, or dropping a byte, would lose
    // what the file was meant to hold.
    if (size < 2)
      return absl::InvalidArgumentError(absl::StrCat(
          tokenFile, ": holds no token id (", size, " bytes; ids are uint16)"));
    if (size % 2)
      return absl::InvalidArgumentError(absl::StrCat(
          tokenFile, ": ", size, " bytes, an odd count; token ids are uint16 "
                     "(2 bytes each)"));
    in.seekg(0);
    source.tokens_.resize(static_cast<size_t>(size) / 2);
    in.read(reinterpret_cast<char *>(source.tokens_.data()),
            static_cast<std::streamsize>(source.tokens_.size() * 2));
    if (!in)
      return absl::DataLossError(absl::StrCat(tokenFile, ": read failed"));
  }
  if (absl::Status s = checkInputFiles(plan, mesh, inputFiles); !s.ok())
    return s;
  for (const auto &[name, path] : inputFiles) {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    int64_t size = in ? static_cast<int64_t>(in.tellg()) : 0;
    auto data = std::make_shared<std::string>(static_cast<size_t>(size), '\0');
    in.seekg(0);
    in.read(data->data(), size);
    if (!in)
      return absl::DataLossError(
          absl::StrCat("--input ", name, "=", path, ": read failed"));
    source.files_[name] = std::move(data);
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
  auto where = [&] { return inputWhere(decl); };
  if (auto file = files_.find(name); file != files_.end())
    return cutInputRows(decl, mesh_, globalBatch_, numMicrobatches_,
                        microbatch, file->second->data(),
                        static_cast<int64_t>(file->second->size()), dst);
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
  if (batchDim < 0 && decl.seq_dim() < 0)
    return absl::InvalidArgumentError(absl::StrCat(
        where(), " is not batched (its first dimension is not the batch): "
                 "synthetic data cannot make it up; give its values with "
                 "--input ",
        name, "=FILE"));
  if (batchDim < 0 || batchDim >= rank || seqDim >= rank || seqDim == batchDim)
    return absl::InvalidArgumentError(
        absl::StrCat(where(), " has batch_dim ", batchDim, " and seq_dim ",
                     seqDim, " for a rank-", rank, " tensor"));
  int64_t dp = replicaCount(mesh_), cp = axisSize(mesh_, "cp");
  int64_t rows = shape[batchDim];
  int64_t perMicrobatch = globalBatch_ > 0 ? globalBatch_ / numMicrobatches_
                                           : rows * dp;
  if (rows * dp != perMicrobatch)
    return absl::InvalidArgumentError(absl::StrCat(
        where(), " has ", rows, " rows; a global batch of ", globalBatch_,
        " in ", numMicrobatches_, " microbatches over ", dp,
        " data-parallel ranks needs ", perMicrobatch / dp));
  int64_t mb = std::max<int64_t>(0, microbatch);
  int64_t row0 = mb * perMicrobatch + replicaIndex(mesh_) * rows;
  int64_t localSeq = seqDim >= 0 ? shape[seqDim] : 1;
  int64_t pos0 = splitSeq ? axisCoord(mesh_, "cp") * localSeq : 0;
  int64_t globalSeq = splitSeq ? localSeq * cp : localSeq;
  int64_t batch = globalBatch_ > 0 ? globalBatch_ : perMicrobatch;
  // Elements of the dimensions other than batch and sequence.
  int64_t rest = n / rows / localSeq;

  plan::TensorDecl::Synthesis synthesis = decl.synthesis();
  if (synthesis != plan::TensorDecl::SYNTH_RANDOM ||
      decl.dtype() == plan::BOOL) {
    // Masks all ones (a bool mask too), token types zeros, positions
    // 0, 1, ... along the sequence: the values Hugging Face models assume
    // when the caller gives none.
    if (decl.dtype() == plan::BOOL && synthesis == plan::TensorDecl::SYNTH_RANDOM)
      synthesis = plan::TensorDecl::SYNTH_ONES;
    if (paddedMasks_ && synthesis == plan::TensorDecl::SYNTH_ONES) {
      // Keys run along the sequence dimension, else the last one (a
      // [batch, 1, query, key] mask).
      int keyDim = seqDim >= 0 ? seqDim : rank - 1;
      if (keyDim == batchDim)
        return absl::InvalidArgumentError(
            where() + " has no dimension but the batch to pad");
      int64_t keyLen = keyDim == seqDim ? globalSeq : shape[keyDim];
      uint64_t key = mix(mix(splitmix64(seed_), hashString("padded mask")),
                         static_cast<uint64_t>(step));
      return fillPaddedMask(decl, shape, batchDim, keyDim, row0,
                            keyDim == seqDim ? pos0 : 0, keyLen, key, dst);
    }
    return fillStructured(decl, synthesis, shape, seqDim, pos0, dst);
  }
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
    return absl::InvalidArgumentError(absl::StrCat(
        where(), " is an integer input that indexes no table and labels no "
                 "logits, so no range of ids is known for synthetic data; give "
                 "its values with --input ", name, "=FILE"));
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
