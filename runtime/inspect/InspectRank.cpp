//===- InspectRank.cpp - One rank's instruction stream --------------------===//
//
// `cleave inspect PLAN --rank N`: what rank N executes in one training step,
// in the order it executes it. Programs are shared by every rank of a stage,
// so this is the rank's program with the schedule expanded, plus the
// coordinates that pick its communication peers and parameter blocks.
//
//===----------------------------------------------------------------------===//

#include "Inspect.h"
#include "PlanDigest.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

#include <algorithm>
#include <charconv>
#include <map>

namespace cleave::inspect {

using plan::Instruction;
using plan::Plan;
using plan::Program;

namespace {

std::string number(double value) {
  char buffer[32];
  auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, result.ptr);
}

std::string attrValue(const plan::Attr &attr) {
  switch (attr.value_case()) {
  case plan::Attr::kI:
    return absl::StrCat(attr.i());
  case plan::Attr::kF:
    return number(attr.f());
  case plan::Attr::kB:
    return attr.b() ? "true" : "false";
  case plan::Attr::kS:
    return attr.s();
  case plan::Attr::kInts:
    return absl::StrCat("[", absl::StrJoin(attr.ints().values(), ", "), "]");
  case plan::Attr::kFloats: {
    std::vector<std::string> values;
    for (double v : attr.floats().values())
      values.push_back(number(v));
    return absl::StrCat("[", absl::StrJoin(values, ", "), "]");
  }
  case plan::Attr::kStrings:
    return absl::StrCat("[", absl::StrJoin(attr.strings().values(), ", "),
                        "]");
  default:
    return "?";
  }
}

/// "{transpose_rhs, axes=[tp]}": attributes sorted by name (protobuf maps
/// have no order); a true flag prints as its bare name, as in MLIR.
std::string attrText(const Instruction &inst) {
  if (inst.attrs().empty())
    return "";
  std::map<std::string, const plan::Attr *> sorted;
  for (const auto &[name, attr] : inst.attrs())
    sorted[name] = &attr;
  std::vector<std::string> parts;
  for (const auto &[name, attr] : sorted) {
    if (attr->value_case() == plan::Attr::kB && attr->b())
      parts.push_back(name);
    else
      parts.push_back(absl::StrCat(name, "=", attrValue(*attr)));
  }
  return absl::StrCat(" {", absl::StrJoin(parts, ", "), "}");
}

std::string operand(int32_t id) {
  return id < 0 ? std::string("none") : absl::StrCat("%", id);
}

std::string tensorType(const Program &program, int32_t id) {
  if (id < 0 || id >= program.tensors_size())
    return "?";
  const plan::TensorDecl &t = program.tensors(id);
  std::string shape = absl::StrJoin(t.shape(), "x");
  return shape.empty() ? dtypeName(t.dtype())
                       : absl::StrCat(shape, "x", dtypeName(t.dtype()));
}

/// "  %12 = graph.matmul %10, %11 {transpose_rhs} : 2x16x64xf32   loc";
/// a guarded update reads "graph.adamw_update unless(%40) ...".
/// The types are the outputs' (the inputs' for ops without outputs).
std::string instructionText(const Program &program, const Instruction &inst) {
  std::string line = "  ";
  if (!inst.outputs().empty()) {
    std::vector<std::string> outs;
    for (int32_t id : inst.outputs())
      outs.push_back(operand(id));
    absl::StrAppend(&line, absl::StrJoin(outs, ", "), " = ");
  }
  absl::StrAppend(&line, inst.op());
  if (inst.has_async_handle())
    absl::StrAppend(&line, " async(", inst.async_handle(), ")");
  if (inst.has_unless())
    absl::StrAppend(&line, " unless(", operand(inst.unless()), ")");
  std::vector<std::string> ins;
  for (int32_t id : inst.inputs())
    ins.push_back(operand(id));
  if (!ins.empty())
    absl::StrAppend(&line, " ", absl::StrJoin(ins, ", "));
  absl::StrAppend(&line, attrText(inst));
  const auto &typed = inst.outputs().empty() ? inst.inputs() : inst.outputs();
  std::vector<std::string> types;
  for (int32_t id : typed)
    if (id >= 0)
      types.push_back(tensorType(program, id));
  if (!types.empty())
    absl::StrAppend(&line, " : ", absl::StrJoin(types, ", "));
  if (!inst.location().empty())
    absl::StrAppend(&line, "   ", inst.location());
  line += "\n";
  return line;
}

void appendTensorTable(std::string &out, const Program &program) {
  absl::StrAppend(&out, "Tensors (", program.tensors_size(), ", arena ",
                  formatBytes(static_cast<double>(program.arena_bytes())),
                  " = ", program.arena_bytes(), " bytes)\n");
  std::vector<std::vector<std::string>> rows = {
      {"id", "name", "kind", "shape", "dtype", "offset", "bytes", "slots",
       "notes"}};
  for (const plan::TensorDecl &t : program.tensors()) {
    std::vector<std::string> notes;
    if (t.kind() == plan::TensorDecl::OPTIMIZER_STATE && !t.state().empty())
      notes.push_back(t.state());
    if (t.kind() == plan::TensorDecl::INPUT)
      notes.push_back(absl::StrCat("input ", t.input_name(), ", batch dim ",
                                   t.batch_dim(), t.seq_dim() >= 0
                                                      ? absl::StrCat(
                                                            ", seq dim ",
                                                            t.seq_dim())
                                                      : "",
                                   t.vocab() > 0
                                       ? absl::StrCat(", ids < ", t.vocab())
                                       : ""));
    bool split = std::any_of(t.dims().begin(), t.dims().end(),
                             [](const plan::DimSharding &d) {
                               return !d.axes().empty();
                             });
    if (split)
      notes.push_back(absl::StrCat("split ", formatDims(t.dims(),
                                                        t.shape_size())));
    if (t.kind() == plan::TensorDecl::CONSTANT)
      notes.push_back(absl::StrCat(t.constant_value().size(),
                                   " constant bytes"));
    if (t.fused_away())
      notes.push_back("fused away (no memory: the next instruction sums it "
                      "in the same GEMM)");
    std::string slots = t.slots() > 1 ? absl::StrCat(t.slots(), " x ",
                                                     t.slot_stride())
                                      : "";
    rows.push_back({absl::StrCat("%", t.id()), t.name(), kindName(t.kind()),
                    formatShape(t.shape()), dtypeName(t.dtype()),
                    absl::StrCat(t.offset()), absl::StrCat(t.bytes()), slots,
                    absl::StrJoin(notes, "; ")});
  }
  out += renderTable(rows, "  ");
}

} // namespace

absl::StatusOr<std::string> formatRankProgram(const Plan &plan, int rank) {
  if (plan.ranks_size() == 0)
    return absl::InvalidArgumentError("the plan has no ranks");
  if (rank < 0 || rank >= plan.ranks_size())
    return absl::OutOfRangeError(absl::StrCat(
        "rank ", rank, " is not in the plan: its ranks are 0-",
        plan.ranks_size() - 1));
  const plan::RankAssignment &assignment = plan.ranks(rank);
  if (assignment.program() < 0 || assignment.program() >= plan.programs_size())
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", rank, " runs program ", assignment.program(),
                     " but the plan has ", plan.programs_size()));
  const Program &program = plan.programs(assignment.program());

  std::string out;
  std::vector<std::string> coords;
  for (int a = 0; a < plan.mesh().axes_size(); ++a)
    coords.push_back(absl::StrCat(
        plan.mesh().axes(a).name(), "=",
        a < assignment.coords_size() ? absl::StrCat(assignment.coords(a))
                                     : std::string("?")));
  absl::StrAppend(&out, "Rank ", rank, " of ", plan.ranks_size(), ": ",
                  absl::StrJoin(coords, " "), ", node ", assignment.node(),
                  " device ", assignment.local_device(), "\n");
  absl::StrAppend(&out, "Program ", program.id(), " '", program.name(),
                  "' (stage ", program.stage(), "): ",
                  program.segments_size(), " segments, ",
                  program.schedule_size(), " schedule steps");
  if (program.has_loss_tensor())
    absl::StrAppend(&out, ", loss in %", program.loss_tensor());
  absl::StrAppend(&out, "\n\n");
  appendTensorTable(out, program);

  // Each segment is printed once and copied per schedule step: a step of a
  // large plan runs the same few segments hundreds of times.
  std::vector<std::string> segmentText(program.segments_size());
  for (int s = 0; s < program.segments_size(); ++s)
    for (const Instruction &inst : program.segments(s).instructions())
      segmentText[s] += instructionText(program, inst);

  absl::StrAppend(&out, "\nOne training step (", program.schedule_size(),
                  " schedule steps)\n");
  for (const plan::ScheduleStep &step : program.schedule()) {
    if (step.segment() < 0 || step.segment() >= program.segments_size()) {
      absl::StrAppend(&out, "== segment ", step.segment(),
                      " (not in the program)\n");
      continue;
    }
    const plan::Segment &segment = program.segments(step.segment());
    absl::StrAppend(&out, "== ", segmentKindName(segment.kind()));
    if (step.microbatch() >= 0)
      absl::StrAppend(&out, " mb ", step.microbatch());
    if (segment.chunk() > 0)
      absl::StrAppend(&out, " chunk ", segment.chunk());
    absl::StrAppend(&out, " (segment '", segment.name(), "')\n",
                    segmentText[step.segment()]);
  }
  return out;
}

} // namespace cleave::inspect
