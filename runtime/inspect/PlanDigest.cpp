//===- PlanDigest.cpp - What the inspect views compute from a plan --------===//

#include "PlanDigest.h"

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

#include <algorithm>
#include <cmath>
#include <string_view>
#include <unordered_map>

namespace cleave::inspect {

using plan::Instruction;
using plan::Plan;
using plan::Program;
using plan::TensorDecl;

namespace {

/// "h.12.mlp.fc.weight" -> ("h", 12, "mlp.fc.weight"). The first all-digit
/// component after the first one is the layer index; names without one (or
/// with nothing after it) have no layer.
struct LayerName {
  bool hasLayer = false;
  std::string prefix;
  int64_t layer = -1;
  std::string rest;
};

LayerName splitLayerName(const std::string &name) {
  std::vector<std::string> parts = absl::StrSplit(name, '.');
  LayerName out;
  for (size_t k = 1; k + 1 < parts.size(); ++k) {
    const std::string &part = parts[k];
    if (part.empty() || part.size() > 12 ||
        !std::all_of(part.begin(), part.end(), absl::ascii_isdigit))
      continue;
    int64_t layer;
    if (!absl::SimpleAtoi(part, &layer))
      continue;
    out.hasLayer = true;
    out.prefix = absl::StrJoin(parts.begin(), parts.begin() + k, ".");
    out.layer = layer;
    out.rest = absl::StrJoin(parts.begin() + k + 1, parts.end(), ".");
    return out;
  }
  return out;
}

int64_t tensorBytes(const Program &program, int32_t id) {
  if (id < 0 || id >= program.tensors_size())
    return 0;
  return program.tensors(id).bytes();
}

} // namespace

std::vector<ParameterGroup> groupParameters(const Plan &plan) {
  int n = plan.parameters_size();
  std::vector<LayerName> names(n);
  // prefix -> layer -> parameters of that layer, in plan order.
  std::map<std::string, std::map<int64_t, std::vector<int>>> layered;
  for (int i = 0; i < n; ++i) {
    names[i] = splitLayerName(plan.parameters(i).name());
    if (names[i].hasLayer)
      layered[names[i].prefix][names[i].layer].push_back(i);
  }

  std::vector<ParameterGroup> groups;
  std::map<std::string, bool> emitted;
  for (int i = 0; i < n; ++i) {
    if (!names[i].hasLayer) {
      groups.push_back({"", -1, {i}, {}});
      continue;
    }
    const std::string &prefix = names[i].prefix;
    if (emitted[prefix])
      continue;
    emitted[prefix] = true;
    // One group per distinct signature, in order of the first layer that
    // has it, so alternating layers (MoE every other layer) fold too.
    std::unordered_map<std::string, size_t> bySignature;
    for (const auto &[layer, params] : layered[prefix]) {
      std::string signature;
      for (int p : params) {
        const plan::ParameterSharding &param = plan.parameters(p);
        absl::StrAppend(&signature, names[p].rest, "|",
                        formatShape(param.global_shape()), "|",
                        formatDims(param.dims(), param.global_shape_size()),
                        "|", param.zero_axis(), ";");
      }
      auto [it, inserted] = bySignature.emplace(signature, groups.size());
      if (inserted)
        groups.push_back({prefix, layer, params, {}});
      else
        groups[it->second].sameLayers.push_back(layer);
      ParameterGroup &group = groups[it->second];
      const auto &stages = plan.parameters(group.params.front()).stages();
      for (int p : params)
        if (!std::equal(stages.begin(), stages.end(),
                        plan.parameters(p).stages().begin(),
                        plan.parameters(p).stages().end()))
          group.sameStages = false;
    }
  }
  return groups;
}

std::vector<std::vector<CollectiveCount>> countCollectives(const Plan &plan) {
  std::vector<std::vector<CollectiveCount>> result;
  result.reserve(plan.programs_size());
  for (const Program &program : plan.programs()) {
    // Tally each segment once, then weigh it by how often the schedule runs
    // it: a step of a 1024-rank plan repeats a few segments hundreds of
    // times.
    std::vector<int64_t> runs(program.segments_size(), 0);
    for (const plan::ScheduleStep &step : program.schedule())
      if (step.segment() >= 0 && step.segment() < program.segments_size())
        ++runs[step.segment()];
    std::map<std::pair<std::string, std::string>, CollectiveCount> tally;
    for (int s = 0; s < program.segments_size(); ++s) {
      if (runs[s] == 0)
        continue;
      for (const Instruction &inst : program.segments(s).instructions()) {
        std::string_view op = inst.op();
        if (op.substr(0, 5) != "comm." || op == "comm.wait")
          continue;
        std::string kind(op.substr(5));
        std::string axes = instructionAxes(inst);
        CollectiveCount &count = tally[{kind, axes}];
        count.kind = kind;
        count.axes = axes;
        int64_t in = inst.inputs_size() ? tensorBytes(program, inst.inputs(0))
                                        : 0;
        int64_t out =
            inst.outputs_size() ? tensorBytes(program, inst.outputs(0)) : 0;
        // Instructions of the last microbatch's run only (an overlapped
        // gradient reduction) run once a step.
        auto last = inst.attrs().find("last_microbatch");
        int64_t times =
            last != inst.attrs().end() && last->second.b() ? 1 : runs[s];
        count.count += times;
        count.bytes += static_cast<double>(std::max(in, out)) * times;
      }
    }
    std::vector<CollectiveCount> counts;
    for (auto &[key, count] : tally)
      counts.push_back(count);
    result.push_back(std::move(counts));
  }
  return result;
}

std::vector<CollectiveExcess> collectiveExcess(const Plan &plan, double ratio,
                                               double minBytes) {
  auto priced = [](std::string_view kind) {
    return kind == "all_reduce" || kind == "all_gather" ||
           kind == "reduce_scatter" || kind == "all_to_all";
  };
  std::map<int64_t, double> predicted;
  for (const plan::CommVolume &v : plan.predicted().comm())
    if (priced(v.kind()))
      predicted[v.stage()] += v.bytes();
  std::vector<CollectiveExcess> result;
  if (plan.predicted().comm().empty())
    return result;
  std::map<int64_t, double> counted;
  std::vector<std::vector<CollectiveCount>> counts = countCollectives(plan);
  for (int p = 0; p < plan.programs_size(); ++p) {
    double bytes = 0;
    for (const CollectiveCount &c : counts[p])
      if (priced(c.kind))
        bytes += c.bytes;
    double &stage = counted[plan.programs(p).stage()];
    stage = std::max(stage, bytes);
  }
  for (auto [stage, bytes] : counted) {
    double expected = predicted[stage];
    if (bytes > ratio * expected && bytes - expected > minBytes)
      result.push_back({stage, bytes, expected});
  }
  return result;
}

std::vector<ProgramMemory> programMemory(const Plan &plan) {
  std::vector<ProgramMemory> result(plan.programs_size());
  for (const plan::RankAssignment &rank : plan.ranks())
    if (rank.program() >= 0 && rank.program() < plan.programs_size())
      ++result[rank.program()].ranks;
  for (int p = 0; p < plan.programs_size(); ++p) {
    const Program &program = plan.programs(p);
    ProgramMemory &memory = result[p];
    memory.arenaBytes = program.arena_bytes();
    for (const plan::KindBytes &kb : program.memory())
      memory.planned[kb.kind()] += kb.bytes();
    for (const TensorDecl &tensor : program.tensors())
      if (!tensor.fused_away()) // never materialised
        memory.tensors[tensor.kind()] +=
            tensor.bytes() * std::max<int64_t>(1, tensor.slots());
  }
  return result;
}

std::string kindName(TensorDecl::Kind kind) {
  return absl::AsciiStrToLower(TensorDecl::Kind_Name(kind));
}

std::string segmentKindName(plan::Segment::Kind kind) {
  return absl::AsciiStrToLower(plan::Segment::Kind_Name(kind));
}

std::string dtypeName(plan::DType dtype) {
  return absl::AsciiStrToLower(plan::DType_Name(dtype));
}

std::string formatShape(const google::protobuf::RepeatedField<int64_t> &shape) {
  if (shape.empty())
    return "scalar";
  return absl::StrJoin(shape, "x");
}

std::string formatDims(
    const google::protobuf::RepeatedPtrField<plan::DimSharding> &dims,
    int rank) {
  std::vector<std::string> parts;
  for (int d = 0; d < std::max(rank, dims.size()); ++d) {
    if (d >= dims.size() || dims[d].axes().empty())
      parts.push_back("-");
    else if (dims[d].axes_size() == 1)
      parts.push_back(dims[d].axes(0));
    else
      parts.push_back(absl::StrCat("(", absl::StrJoin(dims[d].axes(), ","),
                                   ")"));
  }
  return absl::StrCat("[", absl::StrJoin(parts, ", "), "]");
}

std::string formatBytes(double bytes) {
  static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int unit = 0;
  double value = bytes;
  while (std::fabs(value) >= 1024 && unit < 5) {
    value /= 1024;
    ++unit;
  }
  if (unit == 0)
    return absl::StrFormat("%.0f B", value);
  return absl::StrFormat("%.2f %s", value, units[unit]);
}

std::string formatCount(double count) {
  static const char *suffixes[] = {"", " K", " M", " G", " T", " P"};
  int s = 0;
  double value = count;
  while (std::fabs(value) >= 1000 && s < 5) {
    value /= 1000;
    ++s;
  }
  if (s == 0)
    return absl::StrFormat("%.0f", value);
  return absl::StrFormat("%.2f%s", value, suffixes[s]);
}

std::string formatRanges(std::vector<int64_t> values, int maxRanges) {
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  if (values.empty())
    return "none";
  // A stride other than one ("every 2nd layer") reads better than a list of
  // single values.
  if (values.size() >= 3) {
    int64_t step = values[1] - values[0];
    bool progression = step > 1;
    for (size_t i = 2; progression && i < values.size(); ++i)
      progression = values[i] - values[i - 1] == step;
    if (progression)
      return absl::StrCat(values[0], ", ", values[1], ", ..., ",
                          values.back(), " (every ", step, ")");
  }
  std::vector<std::string> ranges;
  size_t i = 0;
  while (i < values.size()) {
    size_t j = i;
    while (j + 1 < values.size() && values[j + 1] == values[j] + 1)
      ++j;
    if (static_cast<int>(ranges.size()) == maxRanges) {
      ranges.push_back(absl::StrCat("... (", values.size(), " in all)"));
      break;
    }
    ranges.push_back(j == i ? absl::StrCat(values[i])
                            : absl::StrCat(values[i], "-", values[j]));
    i = j + 1;
  }
  return absl::StrJoin(ranges, ", ");
}

std::string instructionAxes(const Instruction &inst) {
  auto it = inst.attrs().find("axes");
  if (it != inst.attrs().end()) {
    if (it->second.has_strings())
      return absl::StrJoin(it->second.strings().values(), ",");
    if (it->second.value_case() == plan::Attr::kS)
      return it->second.s();
  }
  it = inst.attrs().find("axis");
  if (it != inst.attrs().end() && it->second.value_case() == plan::Attr::kS)
    return it->second.s();
  return "";
}

std::string renderTable(const std::vector<std::vector<std::string>> &rows,
                        const std::string &indent) {
  std::vector<size_t> widths;
  for (const auto &row : rows)
    for (size_t c = 0; c < row.size(); ++c) {
      if (widths.size() <= c)
        widths.push_back(0);
      widths[c] = std::max(widths[c], row[c].size());
    }
  std::string out;
  for (const auto &row : rows) {
    std::string line = indent;
    for (size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size())
        line.append(widths[c] - row[c].size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ')
      line.pop_back();
    absl::StrAppend(&out, line, "\n");
  }
  return out;
}

} // namespace cleave::inspect
