//===- Dumps.cpp - What a rank writes besides training --------------------===//

#include "Dumps.h"
#include "Job.h"

#include "cleave/runtime/launcher/RunDumps.h"

#include <cstdio>
#include <filesystem>
#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace cleave::worker {

void dumpParameters(const plan::Plan &plan, const executor::Executor &ex,
                    const std::string &dir,
                    const std::vector<double> &losses) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  for (const plan::TensorDecl &t : ex.program().tensors()) {
    if (t.kind() != plan::TensorDecl::PARAMETER)
      continue;
    std::string name = plan.parameters(t.param_index()).name();
    std::string path = launcher::parameterDumpPath(
        dir, name.empty() ? t.name() : name, rank());
    std::vector<float> values = ex.tensorValues(t.id());
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char *>(values.data()),
              static_cast<std::streamsize>(values.size() * sizeof(float)));
    if (!out)
      fail("cannot write " + path);
  }
  if (rank() == 0) {
    std::ofstream out(launcher::lossDumpPath(dir), std::ios::trunc);
    char line[64];
    for (double loss : losses) {
      std::snprintf(line, sizeof(line), "%.9g\n", loss);
      out << line;
    }
    if (!out)
      fail("cannot write " + launcher::lossDumpPath(dir));
  }
}

void dumpGradients(const plan::Plan &plan, const executor::Executor &ex,
                   const std::string &dir, bool firstStep) {
  // Only where this rank holds them whole and reduced (no ZeRO: with it
  // the blocks are sharded or unreduced).
  if (plan.knobs().zero() != 0)
    return;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  for (const plan::TensorDecl &t : ex.program().tensors()) {
    if (t.kind() != plan::TensorDecl::PARAMETER)
      continue;
    const std::string &name = plan.parameters(t.param_index()).name();
    for (const plan::TensorDecl &g : ex.program().tensors()) {
      if (g.kind() != plan::TensorDecl::GRADIENT ||
          g.name() != t.name() + ".grad" ||
          !std::equal(g.shape().begin(), g.shape().end(), t.shape().begin(),
                      t.shape().end()))
        continue;
      std::string path = launcher::gradientDumpPath(
          dir, name.empty() ? t.name() : name, rank());
      std::vector<float> values = ex.tensorValues(g.id());
      std::ofstream out(path, std::ios::binary |
                                  (firstStep ? std::ios::trunc : std::ios::app));
      out.write(reinterpret_cast<const char *>(values.data()),
                static_cast<std::streamsize>(values.size() * sizeof(float)));
      if (!out)
        fail("cannot write " + path);
    }
  }
}

void dumpOutputs(const executor::Executor &ex, const std::string &dir) {
  const plan::Program &p = ex.program();
  if (p.output_tensors_size() == 0)
    return;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  for (int i = 0; i < p.output_tensors_size(); ++i)
    for (int64_t m = 0; m < ex.numMicrobatches(); ++m) {
      std::string path = launcher::outputDumpPath(dir, i, m, rank());
      std::string bytes = ex.outputBytes(i, m);
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      if (!out)
        fail("cannot write " + path);
    }
}

std::vector<std::string> pointToPointAxes(const plan::Plan &plan) {
  std::set<std::string> axes;
  for (const plan::Program &program : plan.programs())
    for (const plan::Segment &segment : program.segments())
      for (const plan::Instruction &inst : segment.instructions()) {
        if (inst.op() != "comm.send" && inst.op() != "comm.recv")
          continue;
        auto axis = inst.attrs().find("axis");
        if (axis != inst.attrs().end())
          axes.insert(axis->second.s());
      }
  return {axes.begin(), axes.end()};
}

std::string listProgram(const plan::Plan &plan) {
  const plan::Program &p = plan.programs(plan.ranks(rank()).program());
  std::string text = "rank " + std::to_string(rank()) + ": program " +
                     std::to_string(p.id()) + " (" + p.name() + "), arena " +
                     std::to_string(p.arena_bytes()) + " bytes\n  schedule:";
  for (const plan::ScheduleStep &s : p.schedule())
    text += " " + p.segments(s.segment()).name() + ":" +
            std::to_string(s.microbatch());
  text += "\n";
  for (int s = 0; s < p.segments_size(); ++s) {
    const plan::Segment &segment = p.segments(s);
    text += "  segment " + std::to_string(s) + " '" + segment.name() + "'\n";
    for (int i = 0; i < segment.instructions_size(); ++i) {
      const plan::Instruction &inst = segment.instructions(i);
      text += "    " + std::to_string(i) + " " + inst.op() + " (";
      for (int k = 0; k < inst.inputs_size(); ++k)
        text += (k ? ", " : "") + std::to_string(inst.inputs(k));
      text += ") -> (";
      for (int k = 0; k < inst.outputs_size(); ++k)
        text += (k ? ", " : "") + std::to_string(inst.outputs(k));
      text += ")";
      std::map<std::string, std::string> attrs;
      for (const auto &[name, value] : inst.attrs())
        attrs[name] = value.ShortDebugString();
      for (const auto &[name, value] : attrs)
        text += " " + name + "={" + value + "}";
      if (inst.has_async_handle())
        text += " async=" + std::to_string(inst.async_handle());
      text += "\n";
    }
  }
  return text;
}

void writeTrace(comm::Communicator &comm, const executor::Executor &ex,
                const std::string &path, double originUs) {
  std::string part = path + ".rank" + std::to_string(rank());
  {
    std::ofstream out(part, std::ios::trunc);
    bool first = true;
    executor::writeChromeTraceRankNames(rank(), out, first);
    executor::writeChromeTraceEvents(ex.traceEvents(), rank(), originUs, out,
                                     first);
    if (!out)
      fail("cannot write " + part);
  }
  float token = 0;
  comm::CommTensor barrier{&token, {1}, comm::ElementType::F32};
  comm.allReduce(comm.mesh().axisNames, barrier, barrier, comm::Reduction::Sum);
  if (rank() != 0)
    return;
  std::ofstream out(path, std::ios::trunc);
  executor::writeChromeTraceHeader(out);
  for (int r = 0; r < worldSize(); ++r) {
    std::string name = path + ".rank" + std::to_string(r);
    std::ifstream in(name);
    std::stringstream text;
    text << in.rdbuf();
    if (r > 0)
      out << ",\n";
    out << text.str();
    std::remove(name.c_str());
  }
  executor::writeChromeTraceFooter(out);
  if (!out)
    fail("cannot write " + path);
}

} // namespace cleave::worker
