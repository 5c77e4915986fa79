//===- PlanIO.cpp - Read and write plan artifacts -------------------------===//

#include "cleave/runtime/plan/PlanIO.h"

#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/util/field_mask_util.h"

#include <xxhash.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>

namespace cleave::plan {

namespace {

constexpr char kMagic[8] = {'C', 'L', 'E', 'A', 'V', 'E', 'P', 'L'};
/// Weights start at multiples of this in the weight section, so that a
/// reader may map them and hand them to vector loads or a DMA as they are.
constexpr uint64_t kWeightAlignment = 64;

uint64_t fnv1a(const char *data, size_t size) {
  uint64_t h = 14695981039346656037ull; // FNV-1a 64 offset basis
  for (size_t i = 0; i < size; ++i) {
    h ^= static_cast<unsigned char>(data[i]);
    h *= 1099511628211ull;
  }
  return h;
}

template <typename T> void putLE(std::string &out, T value) {
  for (size_t i = 0; i < sizeof(T); ++i)
    out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

template <typename T> T getLE(const char *p) {
  T value = 0;
  for (size_t i = 0; i < sizeof(T); ++i)
    value |= static_cast<T>(static_cast<unsigned char>(p[i])) << (8 * i);
  return value;
}

std::string where(const Program &program) {
  return absl::StrCat("program ", program.id(), " (", program.name(), ")");
}

absl::Status checkTensorRef(const Program &program, const Segment &segment,
                            int index, const Instruction &inst, int32_t id,
                            const char *role, bool optional) {
  if (optional && id == -1)
    return absl::OkStatus();
  if (id < 0 || id >= program.tensors_size())
    return absl::InvalidArgumentError(absl::StrCat(
        where(program), ", segment '", segment.name(), "', instruction ",
        index, " (", inst.op(), "): ", role, " ", id, " is not a tensor"));
  return absl::OkStatus();
}

/// Every field of `descriptor` but `skip`, as a field mask.
google::protobuf::FieldMask allFieldsBut(
    const google::protobuf::Descriptor *descriptor, int skip) {
  google::protobuf::FieldMask mask;
  for (int i = 0; i < descriptor->field_count(); ++i)
    if (descriptor->field(i)->number() != skip)
      mask.add_paths(std::string(descriptor->field(i)->name()));
  return mask;
}

/// What a file holds besides its weights: `plan` without initial_value,
/// each parameter's place in the weight section in initial_value_at, and
/// the section's length. Copied field by field (by reflection, so a field
/// added to plan.proto is never left out) so the weights are never copied.
struct FileLayout {
  Plan meta;
  uint64_t weightBytes = 0;
};

FileLayout layoutOf(const Plan &plan) {
  using google::protobuf::util::FieldMaskUtil;
  static const google::protobuf::FieldMask planMask = allFieldsBut(
      Plan::descriptor(), Plan::kParametersFieldNumber);
  static const google::protobuf::FieldMask paramMask =
      allFieldsBut(ParameterSharding::descriptor(),
                   ParameterSharding::kInitialValueFieldNumber);
  FileLayout layout;
  FieldMaskUtil::MergeOptions options;
  FieldMaskUtil::MergeMessageTo(plan, planMask, options, &layout.meta);
  for (const ParameterSharding &p : plan.parameters()) {
    ParameterSharding *q = layout.meta.add_parameters();
    FieldMaskUtil::MergeMessageTo(p, paramMask, options, q);
    q->clear_initial_value_at();
    if (p.initial_value().empty())
      continue;
    q->mutable_initial_value_at()->set_offset(layout.weightBytes);
    q->mutable_initial_value_at()->set_bytes(p.initial_value().size());
    layout.weightBytes += (p.initial_value().size() + kWeightAlignment - 1) /
                          kWeightAlignment * kWeightAlignment;
  }
  layout.meta.set_format_version(kFormatVersion);
  return layout;
}

/// The payload: deterministic (map fields, such as instruction attributes,
/// in key order), so the same plan always gives the same bytes.
std::string payloadOf(const Plan &meta) {
  std::string payload;
  google::protobuf::io::StringOutputStream stream(&payload);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  meta.SerializeToCodedStream(&coded);
  coded.Trim();
  return payload;
}

/// Calls `put(data, size)` with the weight section's pieces in order: each
/// parameter's bytes, then the zeros that pad it to the next alignment.
template <typename Put>
void forEachWeightPiece(const Plan &plan, Put &&put) {
  static const char zeros[kWeightAlignment] = {};
  for (const ParameterSharding &p : plan.parameters()) {
    const std::string &v = p.initial_value();
    if (v.empty())
      continue;
    put(v.data(), v.size());
    if (size_t pad = (kWeightAlignment - v.size() % kWeightAlignment) %
                     kWeightAlignment)
      put(zeros, pad);
  }
}

std::string headerOf(const std::string &payload, uint64_t weightBytes,
                     uint64_t weightHash) {
  std::string out(kMagic, sizeof(kMagic));
  putLE<uint32_t>(out, kFormatVersion);
  putLE<uint64_t>(out, payload.size());
  putLE<uint64_t>(out, fnv1a(payload.data(), payload.size()));
  putLE<uint64_t>(out, weightBytes);
  putLE<uint64_t>(out, weightHash);
  return out;
}

/// Random access to a plan's bytes: a string in memory or an open file.
struct ByteSource {
  uint64_t size = 0;
  std::function<bool(uint64_t offset, uint64_t n, char *dst)> read;
};

absl::StatusOr<Plan> parseFrom(const ByteSource &src, Weights weights) {
  char header[kHeaderBytes];
  if (src.size < sizeof(kMagic) || !src.read(0, sizeof(kMagic), header) ||
      std::memcmp(header, kMagic, sizeof(kMagic)) != 0)
    return absl::InvalidArgumentError(
        "not a cleave plan (no CLEAVEPL header); plans are written by "
        "`cleave compile -o`");
  if (src.size < 12 || !src.read(8, 4, header + 8))
    return absl::DataLossError(absl::StrCat(
        "truncated plan: ", src.size, " bytes, shorter than the header"));
  uint32_t version = getLE<uint32_t>(header + 8);
  if (version != kFormatVersion)
    return absl::FailedPreconditionError(absl::StrCat(
        "plan format version ", version, " is not supported (this cleave reads "
        "version ", kFormatVersion, "); recompile the model with this cleave"));
  if (src.size < kHeaderBytes || !src.read(12, kHeaderBytes - 12, header + 12))
    return absl::DataLossError(absl::StrCat(
        "truncated plan: ", src.size, " bytes, shorter than the header"));
  uint64_t length = getLE<uint64_t>(header + 12);
  uint64_t hash = getLE<uint64_t>(header + 20);
  uint64_t weightBytes = getLE<uint64_t>(header + 28);
  uint64_t weightHash = getLE<uint64_t>(header + 36);
  uint64_t present = src.size - kHeaderBytes;
  if (length > present || weightBytes > present - length)
    return absl::DataLossError(absl::StrCat(
        "truncated plan: the header announces ", length,
        " bytes of payload and ", weightBytes, " of weights but only ",
        present, " are present"));
  if (present > length + weightBytes)
    return absl::DataLossError(
        absl::StrCat("corrupt plan: ", present - length - weightBytes,
                     " bytes after the ", weightBytes ? "weights" : "payload"));
  if (length > uint64_t(std::numeric_limits<int>::max()))
    return absl::DataLossError(absl::StrCat(
        "corrupt plan: a payload of ", length, " bytes (weights belong in the "
        "weight section)"));
  std::string payload(length, '\0');
  if (!src.read(kHeaderBytes, length, payload.data()))
    return absl::DataLossError("the plan's payload cannot be read");
  if (fnv1a(payload.data(), length) != hash)
    return absl::DataLossError(
        "corrupt plan: the payload does not match its checksum");
  Plan plan;
  if (!plan.ParseFromArray(payload.data(), static_cast<int>(length)))
    return absl::DataLossError("corrupt plan: the payload does not parse");
  if (plan.format_version() != kFormatVersion)
    return absl::FailedPreconditionError(absl::StrCat(
        "corrupt plan: header version ", version, " but payload version ",
        plan.format_version()));

  // The weight section: every span inside it, in order, not overlapping;
  // read into the parameters' initial_value piece by piece while hashing,
  // so the bytes are read once and never held twice.
  uint64_t next = 0;
  for (const ParameterSharding &p : plan.parameters()) {
    const WeightSpan &span = p.initial_value_at();
    if (span.bytes() == 0)
      continue;
    if (span.offset() < next || span.offset() > weightBytes ||
        span.bytes() > weightBytes - span.offset())
      return absl::DataLossError(absl::StrCat(
          "corrupt plan: parameter '", p.name(), "' names bytes ",
          span.offset(), " to ", span.offset() + span.bytes(),
          " of a weight section of ", weightBytes));
    next = span.offset() + span.bytes();
  }
  if (weights == Weights::kLoad) {
    XXH3_state_t *state = XXH3_createState();
    XXH3_64bits_reset(state);
    uint64_t at = 0;
    std::vector<char> gap;
    absl::Status status;
    auto readGap = [&](uint64_t until) {
      while (at < until && status.ok()) {
        uint64_t n = std::min<uint64_t>(until - at, 1 << 20);
        gap.resize(n);
        if (!src.read(kHeaderBytes + length + at, n, gap.data()))
          status = absl::DataLossError("the plan's weights cannot be read");
        XXH3_64bits_update(state, gap.data(), n);
        at += n;
      }
    };
    for (ParameterSharding &p : *plan.mutable_parameters()) {
      const WeightSpan &span = p.initial_value_at();
      if (span.bytes() == 0 || !status.ok())
        continue;
      readGap(span.offset());
      std::string &dst = *p.mutable_initial_value();
      dst.resize(span.bytes());
      if (status.ok() &&
          !src.read(kHeaderBytes + length + at, span.bytes(), dst.data()))
        status = absl::DataLossError(absl::StrCat(
            "the weights of parameter '", p.name(), "' cannot be read"));
      XXH3_64bits_update(state, dst.data(), dst.size());
      at += span.bytes();
      p.clear_initial_value_at();
    }
    readGap(weightBytes);
    uint64_t computed = XXH3_64bits_digest(state);
    XXH3_freeState(state);
    if (!status.ok())
      return status;
    if (computed != weightHash)
      return absl::DataLossError(
          "corrupt plan: the weights do not match their checksum");
  }
  if (absl::Status s = validatePlan(plan); !s.ok())
    return absl::InvalidArgumentError(
        absl::StrCat("invalid plan: ", s.message()));
  return plan;
}

} // namespace

bool hasInitialValue(const ParameterSharding &param) {
  return !param.initial_value().empty() || param.initial_value_at().bytes() > 0;
}

bool isIntegerDType(DType dtype) {
  switch (dtype) {
  case I8:
  case I16:
  case I32:
  case I64:
  case U8:
  case U16:
  case U32:
  case U64:
    return true;
  default:
    return false;
  }
}

int64_t dtypeBytes(DType dtype) {
  switch (dtype) {
  case F32:
  case I32:
  case U32:
    return 4;
  case BF16:
  case F16:
  case I16:
  case U16:
    return 2;
  case I64:
  case U64:
    return 8;
  case BOOL:
  case I8:
  case U8:
    return 1;
  default:
    return 4;
  }
}

std::string serializePlan(const Plan &plan) {
  FileLayout layout = layoutOf(plan);
  std::string payload = payloadOf(layout.meta);
  std::string weights;
  weights.reserve(layout.weightBytes);
  forEachWeightPiece(plan, [&](const char *data, size_t n) {
    weights.append(data, n);
  });
  std::string out = headerOf(payload, weights.size(),
                             XXH3_64bits(weights.data(), weights.size()));
  out += payload;
  out += weights;
  return out;
}

absl::StatusOr<Plan> parsePlan(const std::string &bytes, Weights weights) {
  ByteSource src;
  src.size = bytes.size();
  src.read = [&](uint64_t offset, uint64_t n, char *dst) {
    if (offset > bytes.size() || n > bytes.size() - offset)
      return false;
    std::memcpy(dst, bytes.data() + offset, n);
    return true;
  };
  return parseFrom(src, weights);
}

absl::Status writePlanFile(const std::string &path, const Plan &plan) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    return absl::NotFoundError(absl::StrCat(path, ": cannot open for writing"));
  FileLayout layout = layoutOf(plan);
  std::string payload = payloadOf(layout.meta);
  // The weights' checksum is known once they are written: the header goes
  // first with a placeholder and is written again at the end.
  std::string header = headerOf(payload, layout.weightBytes, 0);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(payload.data(), static_cast<std::streamsize>(payload.size()));
  XXH3_state_t *state = XXH3_createState();
  XXH3_64bits_reset(state);
  forEachWeightPiece(plan, [&](const char *data, size_t n) {
    XXH3_64bits_update(state, data, n);
    out.write(data, static_cast<std::streamsize>(n));
  });
  uint64_t weightHash = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  header = headerOf(payload, layout.weightBytes, weightHash);
  out.seekp(0);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.close();
  if (!out)
    return absl::DataLossError(absl::StrCat(path, ": write failed"));
  return absl::OkStatus();
}

absl::StatusOr<Plan> readPlanFile(const std::string &path, Weights weights) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": a directory, not a plan file"));
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  ByteSource src;
  src.size = std::filesystem::file_size(path, ec);
  if (ec)
    return absl::NotFoundError(absl::StrCat(path, ": ", ec.message()));
  src.read = [&](uint64_t offset, uint64_t n, char *dst) {
    in.clear();
    in.seekg(static_cast<std::streamoff>(offset));
    in.read(dst, static_cast<std::streamsize>(n));
    return static_cast<uint64_t>(in.gcount()) == n;
  };
  absl::StatusOr<Plan> plan = parseFrom(src, weights);
  if (!plan.ok())
    return absl::Status(plan.status().code(),
                        absl::StrCat(path, ": ", plan.status().message()));
  return plan;
}

namespace {

/// The training settings a hand-edited plan could make nonsense of: the
/// runtime would train with them (a NaN learning rate, a negative batch)
/// instead of refusing the plan.
absl::Status validateTraining(const TrainingConfig &t) {
  const std::string &opt = t.optimizer();
  if (opt != "adamw" && opt != "sgd" && opt != "none")
    return absl::InvalidArgumentError(
        absl::StrCat("training: optimizer '", opt,
                     "' is not one of adamw, sgd, none"));
  if (t.global_batch() < 1)
    return absl::InvalidArgumentError(absl::StrCat(
        "training: global_batch is ", t.global_batch(), "; at least 1"));
  if (t.seq_len() < 0 || t.tokens_per_step() < 0)
    return absl::InvalidArgumentError(
        "training: seq_len and tokens_per_step cannot be negative");
  struct Setting {
    const char *name;
    double value, low, high; // low <= value < high
  };
  const Setting settings[] = {
      {"lr", t.lr(), 0, HUGE_VAL},
      {"beta1", t.beta1(), 0, 1},
      {"beta2", t.beta2(), 0, 1},
      {"eps", t.eps(), 0, HUGE_VAL},
      {"weight_decay", t.weight_decay(), 0, HUGE_VAL},
      {"momentum", t.momentum(), 0, 1},
      {"flops_per_step", t.flops_per_step(), 0, HUGE_VAL},
  };
  for (const Setting &s : settings)
    if (!(s.value >= s.low && s.value < s.high))
      return absl::InvalidArgumentError(absl::StrCat(
          "training: ", s.name, " is ", s.value, "; expected a number in [",
          s.low, ", ", s.high == HUGE_VAL ? "inf" : absl::StrCat(s.high),
          ")"));
  return absl::OkStatus();
}

} // namespace

absl::Status validatePlan(const Plan &plan) {
  if (absl::Status s = validateTraining(plan.training()); !s.ok())
    return s;
  int64_t meshRanks = 1;
  for (const MeshAxis &axis : plan.mesh().axes()) {
    if (axis.size() < 1)
      return absl::InvalidArgumentError(
          absl::StrCat("mesh axis '", axis.name(), "' has size ", axis.size()));
    meshRanks *= axis.size();
  }
  if (meshRanks != plan.ranks_size())
    return absl::InvalidArgumentError(
        absl::StrCat("the mesh has ", meshRanks, " devices but the plan lists ",
                     plan.ranks_size(), " ranks"));
  for (int r = 0; r < plan.ranks_size(); ++r) {
    const RankAssignment &rank = plan.ranks(r);
    if (rank.rank() != r)
      return absl::InvalidArgumentError(
          absl::StrCat("rank entry ", r, " says it is rank ", rank.rank()));
    if (rank.program() < 0 || rank.program() >= plan.programs_size())
      return absl::InvalidArgumentError(absl::StrCat(
          "rank ", r, " runs program ", rank.program(), " of ",
          plan.programs_size()));
    if (rank.coords_size() != plan.mesh().axes_size())
      return absl::InvalidArgumentError(absl::StrCat(
          "rank ", r, " has ", rank.coords_size(), " coordinates for ",
          plan.mesh().axes_size(), " mesh axes"));
  }
  for (int p = 0; p < plan.programs_size(); ++p) {
    const Program &program = plan.programs(p);
    if (program.id() != p)
      return absl::InvalidArgumentError(
          absl::StrCat("program entry ", p, " says it is program ", program.id()));
    for (int t = 0; t < program.tensors_size(); ++t) {
      const TensorDecl &tensor = program.tensors(t);
      if (tensor.id() != t)
        return absl::InvalidArgumentError(absl::StrCat(
            where(program), ": tensor entry ", t, " has id ", tensor.id()));
      int64_t slots = std::max<int64_t>(1, tensor.slots());
      int64_t end = tensor.offset() + (slots - 1) * tensor.slot_stride() +
                    (tensor.fused_away() ? 0 : tensor.bytes());
      if (tensor.offset() < 0 || end > program.arena_bytes())
        return absl::InvalidArgumentError(absl::StrCat(
            where(program), ": tensor ", t, " '", tensor.name(),
            "' lies outside the arena of ", program.arena_bytes(), " bytes"));
      bool stateful = tensor.kind() == TensorDecl::PARAMETER ||
                      tensor.kind() == TensorDecl::GRADIENT ||
                      tensor.kind() == TensorDecl::OPTIMIZER_STATE;
      if (stateful && (tensor.param_index() < 0 ||
                       tensor.param_index() >= plan.parameters_size()))
        return absl::InvalidArgumentError(absl::StrCat(
            where(program), ": tensor ", t, " '", tensor.name(),
            "' refers to parameter ", tensor.param_index(), " of ",
            plan.parameters_size()));
    }
    for (const Segment &segment : program.segments())
      for (int i = 0; i < segment.instructions_size(); ++i) {
        const Instruction &inst = segment.instructions(i);
        for (int32_t id : inst.inputs())
          if (absl::Status s = checkTensorRef(program, segment, i, inst, id,
                                              "input", /*optional=*/true);
              !s.ok())
            return s;
        for (int32_t id : inst.outputs())
          if (absl::Status s = checkTensorRef(program, segment, i, inst, id,
                                              "output", /*optional=*/true);
              !s.ok())
            return s;
      }
    for (const ScheduleStep &step : program.schedule())
      if (step.segment() < 0 || step.segment() >= program.segments_size())
        return absl::InvalidArgumentError(
            absl::StrCat(where(program), ": the schedule runs segment ",
                         step.segment(), " of ", program.segments_size()));
    if (program.has_loss_tensor() &&
        (program.loss_tensor() < 0 ||
         program.loss_tensor() >= program.tensors_size()))
      return absl::InvalidArgumentError(absl::StrCat(
          where(program), ": loss tensor ", program.loss_tensor(),
          " is not a tensor"));
    for (int32_t id : program.output_tensors())
      if (id < 0 || id >= program.tensors_size())
        return absl::InvalidArgumentError(absl::StrCat(
            where(program), ": output tensor ", id, " is not a tensor"));
  }
  return absl::OkStatus();
}

} // namespace cleave::plan
