//===- InspectJson.cpp - The plan summary as JSON -------------------------===//
//
// `cleave inspect PLAN --json`. The layout is documented in
// docs/plan-format.md and is stable: keys are written in a fixed order,
// every field is present even when zero, and 64-bit integers are JSON
// numbers (protobuf's own JSON mapping would quote them and omit defaults,
// which makes scripts fragile). Bulky fields (instruction streams, values,
// MLIR, trace) are left out; `--rank`, `--mlir` and `--trace` show them.
//
//===----------------------------------------------------------------------===//

#include "Inspect.h"

#include "cleave/runtime/plan/PlanIO.h"
#include "PlanDigest.h"

#include "absl/strings/str_cat.h"

#include <charconv>
#include <cmath>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

namespace cleave::inspect {

using plan::Plan;

namespace {

/// A small streaming JSON writer with two-space indentation; arrays opened
/// with `inlineArray` stay on one line (shapes, rank lists).
class JsonWriter {
public:
  void beginObject() { open('{', false); }
  void endObject() { close('}'); }
  void beginArray(bool inlineArray = false) { open('[', inlineArray); }
  void endArray() { close(']'); }

  void key(std::string_view name) {
    separate();
    string(name);
    out += ": ";
    afterKey = true;
  }

  void value(std::string_view s) {
    separate();
    string(s);
  }
  void value(const char *s) { value(std::string_view(s)); }
  void value(const std::string &s) { value(std::string_view(s)); }
  void value(bool b) {
    separate();
    out += b ? "true" : "false";
  }
  void value(int64_t i) {
    separate();
    absl::StrAppend(&out, i);
  }
  void value(uint64_t i) {
    separate();
    absl::StrAppend(&out, i);
  }
  void value(int32_t i) { value(static_cast<int64_t>(i)); }
  void value(uint32_t i) { value(static_cast<uint64_t>(i)); }
  void value(double d) {
    separate();
    if (!std::isfinite(d)) {
      out += "null";
      return;
    }
    // Shortest text that reads back to the same double.
    char buffer[32];
    auto result = std::to_chars(buffer, buffer + sizeof(buffer), d);
    out.append(buffer, result.ptr);
  }

  template <typename Range> void inlineArray(const Range &values) {
    beginArray(/*inlineArray=*/true);
    for (const auto &v : values)
      value(v);
    endArray();
  }

  std::string take() {
    out += "\n";
    return std::move(out);
  }

private:
  struct Level {
    bool first = true;
    bool isInline = false;
  };

  void open(char bracket, bool isInline) {
    separate();
    out += bracket;
    bool parentInline = !levels.empty() && levels.back().isInline;
    levels.push_back({true, isInline || parentInline});
  }

  void close(char bracket) {
    Level level = levels.back();
    levels.pop_back();
    if (!level.first && !level.isInline)
      newline();
    out += bracket;
  }

  /// Before a value or key: a comma after the previous element and, outside
  /// inline arrays, a new line at the current depth. A value right after its
  /// key needs neither.
  void separate() {
    if (afterKey) {
      afterKey = false;
      return;
    }
    if (levels.empty())
      return;
    Level &level = levels.back();
    if (!level.first)
      out += level.isInline ? ", " : ",";
    level.first = false;
    if (!level.isInline)
      newline();
  }

  void newline() {
    out += "\n";
    out.append(2 * levels.size(), ' ');
  }

  void string(std::string_view s) {
    out += '"';
    for (char c : s) {
      switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buffer[8];
          std::snprintf(buffer, sizeof(buffer), "\\u%04x", c);
          out += buffer;
        } else {
          out += c;
        }
      }
    }
    out += '"';
  }

  std::string out;
  std::vector<Level> levels;
  bool afterKey = false;
};

/// Every singular scalar field of `message` in field-number order, under
/// its proto name, and each singular message field as an object of its
/// own (ModelIdentity, ClusterInfo, Knobs, TrainingConfig have nothing
/// else), so new fields appear without touching this file.
void writeScalarFields(JsonWriter &json,
                       const google::protobuf::Message &message) {
  using google::protobuf::FieldDescriptor;
  const google::protobuf::Descriptor *descriptor = message.GetDescriptor();
  const google::protobuf::Reflection *reflection = message.GetReflection();
  json.beginObject();
  for (int f = 0; f < descriptor->field_count(); ++f) {
    const FieldDescriptor *field = descriptor->field(f);
    if (field->is_repeated())
      continue;
    switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      json.key(field->name());
      json.value(reflection->GetInt32(message, field));
      break;
    case FieldDescriptor::CPPTYPE_INT64:
      json.key(field->name());
      json.value(reflection->GetInt64(message, field));
      break;
    case FieldDescriptor::CPPTYPE_UINT32:
      json.key(field->name());
      json.value(reflection->GetUInt32(message, field));
      break;
    case FieldDescriptor::CPPTYPE_UINT64:
      json.key(field->name());
      json.value(reflection->GetUInt64(message, field));
      break;
    case FieldDescriptor::CPPTYPE_DOUBLE:
      json.key(field->name());
      json.value(reflection->GetDouble(message, field));
      break;
    case FieldDescriptor::CPPTYPE_FLOAT:
      json.key(field->name());
      json.value(static_cast<double>(reflection->GetFloat(message, field)));
      break;
    case FieldDescriptor::CPPTYPE_BOOL:
      json.key(field->name());
      json.value(reflection->GetBool(message, field));
      break;
    case FieldDescriptor::CPPTYPE_STRING:
      if (field->type() == FieldDescriptor::TYPE_BYTES)
        continue;
      json.key(field->name());
      json.value(reflection->GetString(message, field));
      break;
    case FieldDescriptor::CPPTYPE_ENUM:
      json.key(field->name());
      json.value(reflection->GetEnum(message, field)->name());
      break;
    case FieldDescriptor::CPPTYPE_MESSAGE:
      // A small settings message (TrainingConfig.loss_scaling), as an
      // object of its own scalars.
      json.key(field->name());
      writeScalarFields(json, reflection->GetMessage(message, field));
      break;
    default:
      break;
    }
  }
  json.endObject();
}

void writeDims(JsonWriter &json,
               const google::protobuf::RepeatedPtrField<plan::DimSharding>
                   &dims,
               int rank) {
  json.beginArray(/*inlineArray=*/true);
  for (int d = 0; d < std::max(rank, dims.size()); ++d) {
    json.beginArray(true);
    if (d < dims.size())
      for (const std::string &axis : dims[d].axes())
        json.value(axis);
    json.endArray();
  }
  json.endArray();
}

void writeMesh(JsonWriter &json, const Plan &plan) {
  json.beginObject();
  json.key("axes");
  json.beginArray();
  for (const plan::MeshAxis &axis : plan.mesh().axes()) {
    json.beginObject();
    json.key("name");
    json.value(axis.name());
    json.key("size");
    json.value(axis.size());
    json.endObject();
  }
  json.endArray();
  json.key("num_ranks");
  json.value(static_cast<int64_t>(plan.ranks_size()));
  json.key("num_programs");
  json.value(static_cast<int64_t>(plan.programs_size()));
  json.key("num_groups");
  json.value(static_cast<int64_t>(plan.groups_size()));
  // program index per rank: what a script needs to map ranks to stages.
  json.key("rank_programs");
  json.beginArray(true);
  for (const plan::RankAssignment &r : plan.ranks())
    json.value(r.program());
  json.endArray();
  json.endObject();
}

void writeStages(JsonWriter &json, const Plan &plan) {
  json.beginArray();
  for (const plan::StageInfo &stage : plan.stages()) {
    json.beginObject();
    json.key("stage");
    json.value(stage.stage());
    json.key("first_layer");
    json.value(stage.first_layer());
    json.key("num_layers");
    json.value(stage.num_layers());
    if (stage.chunks_size() > 1) {
      json.key("chunks");
      json.beginArray();
      for (const plan::LayerRange &c : stage.chunks()) {
        json.beginObject();
        json.key("first_layer");
        json.value(c.first_layer());
        json.key("num_layers");
        json.value(c.num_layers());
        json.endObject();
      }
      json.endArray();
    }
    json.key("has_embedding");
    json.value(stage.has_embedding());
    json.key("has_head");
    json.value(stage.has_head());
    json.key("ranks");
    json.inlineArray(stage.ranks());
    json.key("predicted_peak_bytes");
    json.value(stage.predicted_peak_bytes());
    json.key("predicted_memory");
    json.beginObject();
    std::map<std::string, double> sorted(stage.predicted_memory().begin(),
                                         stage.predicted_memory().end());
    for (const auto &[name, bytes] : sorted) {
      json.key(name);
      json.value(bytes);
    }
    json.endObject();
    json.key("planned_arena_bytes");
    json.value(stage.planned_arena_bytes());
    json.endObject();
  }
  json.endArray();
}

void writeParameters(JsonWriter &json, const Plan &plan) {
  json.beginArray();
  for (const plan::ParameterSharding &p : plan.parameters()) {
    json.beginObject();
    json.key("name");
    json.value(p.name());
    json.key("global_shape");
    json.inlineArray(p.global_shape());
    json.key("dims");
    writeDims(json, p.dims(), p.global_shape_size());
    json.key("stages");
    json.inlineArray(p.stages());
    json.key("zero_axis");
    json.value(p.zero_axis());
    json.key("init");
    json.value(!plan::hasInitialValue(p)
                   ? plan::InitSpec::Kind_Name(p.init().kind())
                   : std::string("VALUE"));
    json.key("init_std");
    json.value(p.init().std());
    json.endObject();
  }
  json.endArray();
}

void writeParameterGroups(JsonWriter &json, const Plan &plan) {
  json.beginArray();
  for (const ParameterGroup &group : groupParameters(plan)) {
    json.beginObject();
    json.key("prefix");
    json.value(group.prefix);
    json.key("layer");
    json.value(group.layer);
    json.key("parameters");
    json.beginArray(true);
    for (int p : group.params)
      json.value(plan.parameters(p).name());
    json.endArray();
    json.key("same_layers");
    json.inlineArray(group.sameLayers);
    json.endObject();
  }
  json.endArray();
}

void writeCollectives(JsonWriter &json, const Plan &plan) {
  json.beginObject();
  json.key("predicted");
  json.beginArray();
  for (const plan::CommVolume &v : plan.predicted().comm()) {
    json.beginObject();
    json.key("stage");
    json.value(v.stage());
    json.key("kind");
    json.value(v.kind());
    json.key("link");
    json.value(v.link());
    json.key("count");
    json.value(v.count());
    json.key("bytes");
    json.value(v.bytes());
    json.endObject();
  }
  json.endArray();
  json.key("programs");
  json.beginArray();
  std::vector<std::vector<CollectiveCount>> counts = countCollectives(plan);
  for (int p = 0; p < plan.programs_size(); ++p) {
    json.beginObject();
    json.key("program");
    json.value(p);
    json.key("name");
    json.value(plan.programs(p).name());
    json.key("ops");
    json.beginArray();
    for (const CollectiveCount &c : counts[p]) {
      json.beginObject();
      json.key("kind");
      json.value(c.kind);
      json.key("axes");
      json.value(c.axes);
      json.key("count");
      json.value(c.count);
      json.key("bytes");
      json.value(c.bytes);
      json.endObject();
    }
    json.endArray();
    json.endObject();
  }
  json.endArray();
  json.endObject();
}

void writeMemory(JsonWriter &json, const Plan &plan) {
  json.beginArray();
  std::vector<ProgramMemory> memory = programMemory(plan);
  for (int p = 0; p < plan.programs_size(); ++p) {
    const ProgramMemory &m = memory[p];
    json.beginObject();
    json.key("program");
    json.value(p);
    json.key("name");
    json.value(plan.programs(p).name());
    json.key("stage");
    json.value(plan.programs(p).stage());
    json.key("ranks");
    json.value(m.ranks);
    json.key("arena_bytes");
    json.value(m.arenaBytes);
    json.key("planned_by_kind");
    json.beginObject();
    for (const auto &[kind, bytes] : m.planned) {
      json.key(kindName(kind));
      json.value(bytes);
    }
    json.endObject();
    json.key("tensor_bytes_by_kind");
    json.beginObject();
    for (const auto &[kind, bytes] : m.tensors) {
      json.key(kindName(kind));
      json.value(bytes);
    }
    json.endObject();
    json.endObject();
  }
  json.endArray();
}

void writePredicted(JsonWriter &json, const Plan &plan) {
  const plan::PredictedMetrics &m = plan.predicted();
  json.beginObject();
  json.key("step_time_s");
  json.value(m.step_time_s());
  json.key("tflops_per_device");
  json.value(m.tflops_per_device());
  json.key("mfu");
  json.value(m.mfu());
  json.key("bubble_fraction");
  json.value(m.bubble_fraction());
  json.key("tokens_per_s");
  json.value(m.tokens_per_s());
  json.key("peak_memory_per_stage");
  json.inlineArray(m.peak_memory_per_stage());
  json.key("explanation");
  json.beginArray();
  for (const std::string &line : m.explanation())
    json.value(line);
  json.endArray();
  json.key("alternatives");
  json.beginArray();
  for (const plan::Alternative &a : m.alternatives()) {
    json.beginObject();
    json.key("knobs");
    json.value(a.knobs());
    json.key("step_time_s");
    json.value(a.step_time_s());
    json.key("why");
    json.value(a.why());
    json.endObject();
  }
  json.endArray();
  json.endObject();
}

} // namespace

std::string formatPlanJson(const Plan &plan) {
  JsonWriter json;
  json.beginObject();
  json.key("format_version");
  json.value(plan.format_version());
  json.key("producer");
  json.value(plan.producer());
  json.key("model");
  writeScalarFields(json, plan.model());
  json.key("cluster");
  writeScalarFields(json, plan.cluster());
  json.key("mesh");
  writeMesh(json, plan);
  json.key("knobs");
  writeScalarFields(json, plan.knobs());
  json.key("training");
  writeScalarFields(json, plan.training());
  json.key("stages");
  writeStages(json, plan);
  json.key("parameters");
  writeParameters(json, plan);
  json.key("parameter_groups");
  writeParameterGroups(json, plan);
  json.key("collectives");
  writeCollectives(json, plan);
  json.key("memory");
  writeMemory(json, plan);
  json.key("predicted");
  writePredicted(json, plan);
  json.endObject();
  return json.take();
}

} // namespace cleave::inspect
