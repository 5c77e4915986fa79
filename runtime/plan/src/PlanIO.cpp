//===- PlanIO.cpp - Read and write plan artifacts -------------------------===//

#include "cleave/runtime/plan/PlanIO.h"

#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace cleave::plan {

namespace {

constexpr char kMagic[8] = {'C', 'L', 'E', 'A', 'V', 'E', 'P', 'L'};
constexpr size_t kHeaderBytes = 28;

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

} // namespace

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
  Plan copy = plan;
  copy.set_format_version(kFormatVersion);
  // Deterministic: map fields (instruction attributes) in key order, so the
  // same plan always gives the same bytes and checksum.
  std::string payload;
  {
    google::protobuf::io::StringOutputStream stream(&payload);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    copy.SerializeToCodedStream(&coded);
  }
  std::string out(kMagic, sizeof(kMagic));
  putLE<uint32_t>(out, kFormatVersion);
  putLE<uint64_t>(out, payload.size());
  putLE<uint64_t>(out, fnv1a(payload.data(), payload.size()));
  out += payload;
  return out;
}

absl::StatusOr<Plan> parsePlan(const std::string &bytes) {
  if (bytes.size() < sizeof(kMagic) ||
      std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0)
    return absl::InvalidArgumentError(
        "not a cleave plan (no CLEAVEPL header); plans are written by "
        "`cleave compile -o`");
  if (bytes.size() < kHeaderBytes)
    return absl::DataLossError(absl::StrCat(
        "truncated plan: ", bytes.size(), " bytes, shorter than the header"));
  uint32_t version = getLE<uint32_t>(bytes.data() + 8);
  if (version != kFormatVersion)
    return absl::FailedPreconditionError(absl::StrCat(
        "plan format version ", version, " is not supported (this cleave reads "
        "version ", kFormatVersion, "); recompile the model with this cleave"));
  uint64_t length = getLE<uint64_t>(bytes.data() + 12);
  uint64_t hash = getLE<uint64_t>(bytes.data() + 20);
  if (bytes.size() - kHeaderBytes < length)
    return absl::DataLossError(absl::StrCat(
        "truncated plan: the header announces ", length,
        " bytes of payload but only ", bytes.size() - kHeaderBytes,
        " are present"));
  if (bytes.size() - kHeaderBytes > length)
    return absl::DataLossError(absl::StrCat(
        "corrupt plan: ", bytes.size() - kHeaderBytes - length,
        " bytes after the payload"));
  const char *payload = bytes.data() + kHeaderBytes;
  if (fnv1a(payload, length) != hash)
    return absl::DataLossError(
        "corrupt plan: the payload does not match its checksum");
  Plan plan;
  if (!plan.ParseFromArray(payload, static_cast<int>(length)))
    return absl::DataLossError("corrupt plan: the payload does not parse");
  if (plan.format_version() != kFormatVersion)
    return absl::FailedPreconditionError(absl::StrCat(
        "corrupt plan: header version ", version, " but payload version ",
        plan.format_version()));
  if (absl::Status s = validatePlan(plan); !s.ok())
    return absl::InvalidArgumentError(
        absl::StrCat("invalid plan: ", s.message()));
  return plan;
}

absl::Status writePlanFile(const std::string &path, const Plan &plan) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    return absl::NotFoundError(absl::StrCat(path, ": cannot open for writing"));
  std::string bytes = serializePlan(plan);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out)
    return absl::DataLossError(absl::StrCat(path, ": write failed"));
  return absl::OkStatus();
}

absl::StatusOr<Plan> readPlanFile(const std::string &path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": a directory, not a plan file"));
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  absl::StatusOr<Plan> plan = parsePlan(buffer.str());
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
