//===- InspectText.cpp - The readable summary of a plan -------------------===//
//
// `cleave inspect PLAN`: one screen per concern, sized so that a 96-layer
// model on 1024 ranks still reads: identical layers fold into one, rank
// lists become ranges, collectives are tallied per program rather than per
// instruction.
//
//===----------------------------------------------------------------------===//

#include "Inspect.h"
#include "PlanDigest.h"

#include "cleave/runtime/plan/LossScaling.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>

namespace cleave::inspect {

using plan::Plan;

namespace {

std::string percent(double fraction) {
  return absl::StrFormat("%.1f%%", fraction * 100);
}

std::string meshText(const Plan &plan) {
  if (plan.mesh().axes().empty())
    return "(no axes)";
  std::vector<std::string> axes;
  for (const plan::MeshAxis &axis : plan.mesh().axes())
    axes.push_back(absl::StrCat(axis.name(), "=", axis.size()));
  return absl::StrJoin(axes, " x ");
}

std::string knobsText(const plan::Knobs &k) {
  if (!k.text().empty())
    return k.text();
  return absl::StrCat("dp=", k.dp(), ",tp=", k.tp(), ",pp=", k.pp(),
                      ",cp=", k.cp(), ",ep=", k.ep(),
                      ",sp=", k.sp() ? "on" : "off", ",zero=", k.zero(),
                      ",microbatch=", k.microbatch_size(),
                      ",schedule=", k.schedule(), ",recompute=", k.recompute(),
                      ",precision=", k.precision());
}

void appendHeader(std::string &out, const Plan &plan) {
  const plan::ModelIdentity &model = plan.model();
  absl::StrAppend(&out, "Model: ", model.name().empty() ? "?" : model.name(),
                  " (", model.source(), "), ",
                  formatCount(static_cast<double>(model.num_parameters())),
                  " parameters");
  if (!model.graph_hash().empty())
    absl::StrAppend(&out, ", graph ", model.graph_hash());
  if (!model.initial_weights().empty())
    absl::StrAppend(&out, "\n  weights from ", model.initial_weights());
  absl::StrAppend(&out, "\n  plan format version ", plan.format_version());
  if (!plan.producer().empty())
    absl::StrAppend(&out, ", written by ", plan.producer());
  absl::StrAppend(&out, "\n");

  const plan::ClusterInfo &cluster = plan.cluster();
  absl::StrAppend(&out, "Cluster: ", cluster.spec(), ": ", cluster.nodes(),
                  " node(s) x ", cluster.devices_per_node(), " ",
                  cluster.device_kind(), ", ",
                  absl::StrFormat("%.1f", cluster.peak_flops() / 1e12),
                  " TFLOP/s and ", formatBytes(cluster.memory_bytes()),
                  " per device\n");
  absl::StrAppend(&out, "Mesh: ", meshText(plan), " (", plan.ranks_size(),
                  " ranks, ", plan.programs_size(), " programs, ",
                  plan.groups_size(), " communicator groups)\n");
  absl::StrAppend(&out, "Knobs: ", knobsText(plan.knobs()), " (",
                  plan.knobs().num_microbatches(), " microbatches of ",
                  plan.knobs().microbatch_size(), ")\n");

  if (plan.has_generation()) {
    const plan::GenerationConfig &g = plan.generation();
    absl::StrAppend(
        &out, "Generation: ", g.max_batch(),
        " tokens a step (a row each: the next token of every running "
        "sequence, prompt tokens in the rows left), ",
        g.max_sequences() > 0 ? g.max_sequences() : g.max_batch(),
        " sequences at once of up to ",
        g.max_length(), " positions, ", g.blocks(), " cache blocks of ",
        g.block_size(), " positions (",
        g.blocks() * g.block_size(), " in all), vocabulary ", g.vocab(),
        "\n  chosen for prompts of ", g.prompt_len(), " and outputs of ",
        g.output_len(), " tokens; run it with cleave generate PLAN "
        "--prompt-file FILE\n");
    return;
  }
  const plan::TrainingConfig &t = plan.training();
  absl::StrAppend(&out, "Training: global batch ", t.global_batch(),
                  ", sequence ", t.seq_len(), ", optimizer ", t.optimizer());
  if (t.optimizer() == "adamw")
    absl::StrAppend(&out, absl::StrFormat(" (lr %g, betas %g/%g, eps %g, "
                                          "weight decay %g)",
                                          t.lr(), t.beta1(), t.beta2(),
                                          t.eps(), t.weight_decay()));
  else if (t.optimizer() == "sgd")
    absl::StrAppend(&out, absl::StrFormat(" (lr %g, momentum %g)", t.lr(),
                                          t.momentum()));
  if (t.loss_scaling().mode() != plan::LossScaling::NONE)
    absl::StrAppend(&out, ", loss scaling ",
                    plan::lossScalingText(t.loss_scaling()));
  absl::StrAppend(&out, ", seed ", t.seed(), "\n  ",
                  absl::StrFormat("%.3g", t.flops_per_step()),
                  " FLOP and ", t.tokens_per_step(), " tokens per step\n");
}

/// The cost model's breakdown keys in the order it reports them, then any
/// others (sorted), as found in the stages.
std::vector<std::string> breakdownKeys(const Plan &plan) {
  static const char *order[] = {"parameters",    "gradients",
                                "optimizer",     "activations",
                                "communication", "fragmentation"};
  std::set<std::string> present;
  for (const plan::StageInfo &stage : plan.stages())
    for (const auto &[key, bytes] : stage.predicted_memory())
      present.insert(key);
  std::vector<std::string> keys;
  for (const char *key : order)
    if (present.erase(key))
      keys.push_back(key);
  keys.insert(keys.end(), present.begin(), present.end());
  return keys;
}

void appendStages(std::string &out, const Plan &plan) {
  absl::StrAppend(&out, "\nStages (", plan.stages_size(),
                  "; memory per device: the cost model's prediction, then "
                  "the planned arena)\n");
  std::vector<std::string> keys = breakdownKeys(plan);
  std::vector<std::string> header = {"stage", "layers", "holds", "ranks",
                                     "predicted"};
  header.insert(header.end(), keys.begin(), keys.end());
  header.push_back("arena");
  std::vector<std::vector<std::string>> rows = {header};
  for (const plan::StageInfo &stage : plan.stages()) {
    auto range = [](int64_t first, int64_t count) {
      return count == 0   ? std::string("none")
             : count == 1 ? absl::StrCat(first)
                          : absl::StrCat(first, "-", first + count - 1);
    };
    std::string layers = range(stage.first_layer(), stage.num_layers());
    if (stage.chunks_size() > 1) {
      layers.clear();
      for (const plan::LayerRange &c : stage.chunks())
        absl::StrAppend(&layers, layers.empty() ? "" : ",",
                        range(c.first_layer(), c.num_layers()));
    }
    std::vector<std::string> holds;
    if (stage.has_embedding())
      holds.push_back("embedding");
    if (stage.has_head())
      holds.push_back("head");
    std::vector<int64_t> ranks(stage.ranks().begin(), stage.ranks().end());
    std::vector<std::string> row = {
        absl::StrCat(stage.stage()), layers,
        holds.empty() ? "-" : absl::StrJoin(holds, "+"),
        formatRanges(ranks, 4), formatBytes(stage.predicted_peak_bytes())};
    for (const std::string &key : keys) {
      auto it = stage.predicted_memory().find(key);
      row.push_back(it == stage.predicted_memory().end()
                        ? "-"
                        : formatBytes(it->second));
    }
    row.push_back(
        formatBytes(static_cast<double>(stage.planned_arena_bytes())));
    rows.push_back(std::move(row));
  }
  out += renderTable(rows, "  ");
}

/// Every model input once (the first program that reads it), with the
/// per-rank shape and how a run makes it up without --data or --input.
void appendInputs(std::string &out, const Plan &plan) {
  std::vector<std::vector<std::string>> rows;
  std::set<std::string> seen;
  for (const plan::Program &program : plan.programs())
    for (const plan::TensorDecl &t : program.tensors()) {
      if (t.kind() != plan::TensorDecl::INPUT ||
          !seen.insert(t.input_name()).second)
        continue;
      std::string synthetic;
      if (plan.has_generation()) {
        // A generation step's inputs come from `cleave generate`'s
        // scheduler, never from synthetic data.
        static const std::map<std::string, std::string> fed = {
            {"tokens", "each row's token (cleave generate)"},
            {"positions", "each row's position in its sequence"},
            {"slots", "each row's cache slot (block x size + offset; -1: "
                      "none)"},
            {"block_table", "each row's sequence's cache blocks"},
            {"lengths", "each row's position + 1 (0: an empty row)"}};
        auto it = fed.find(t.input_name());
        rows.push_back({t.input_name(), formatShape(t.shape()),
                        plan::DType_Name(t.dtype()),
                        it != fed.end() ? it->second : "cleave generate"});
        continue;
      }
      if (t.input_name() == "step" || t.input_name() == "loss_scale") {
        // Filled by the runtime, never data: AdamW's bias correction and
        // fp16's loss scale.
        rows.push_back({t.input_name(), formatShape(t.shape()),
                        plan::DType_Name(t.dtype()),
                        t.input_name() == "step" ? "the step number (runtime)"
                                                 : "the loss scale (runtime)"});
        continue;
      }
      switch (t.synthesis()) {
      case plan::TensorDecl::SYNTH_ONES:
        synthetic = "ones";
        break;
      case plan::TensorDecl::SYNTH_ZEROS:
        synthetic = "zeros";
        break;
      case plan::TensorDecl::SYNTH_POSITIONS:
        synthetic = "positions 0, 1, ... along the sequence";
        break;
      default:
        if (t.dtype() == plan::F32 || t.dtype() == plan::BF16 ||
            t.dtype() == plan::F16)
          synthetic = "normal N(0, 1)";
        else if (t.dtype() == plan::BOOL)
          synthetic = "ones";
        else if (t.vocab() > 0)
          synthetic = absl::StrCat("ids uniform below ", t.vocab());
        else
          synthetic = "none: give --input " + t.input_name() + "=FILE";
      }
      rows.push_back({t.input_name(), formatShape(t.shape()),
                      plan::DType_Name(t.dtype()), synthetic});
    }
  if (rows.empty())
    return;
  absl::StrAppend(&out, "\nInputs (", rows.size(),
                  plan.has_generation()
                      ? "; per-rank shape; what each row holds)\n"
                      : "; per-rank shape; synthetic values without --data "
                        "or --input)\n");
  out += renderTable(rows, "  ");
}

void appendParameters(std::string &out, const Plan &plan) {
  absl::StrAppend(&out, "\nParameters (", plan.parameters_size(),
                  "; dims: mesh axes splitting each dimension, - = whole)\n");
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> notes; // printed after the row at the same index
  auto addParam = [&](int index, bool withStages) {
    const plan::ParameterSharding &p = plan.parameters(index);
    std::vector<std::string> row = {
        p.name(), formatShape(p.global_shape()),
        formatDims(p.dims(), p.global_shape_size())};
    row.push_back(p.zero_axis().empty() ? ""
                                        : absl::StrCat("zero: ", p.zero_axis()));
    if (withStages) {
      std::vector<int64_t> stages(p.stages().begin(), p.stages().end());
      row.push_back(stages.empty() ? ""
                                   : absl::StrCat("stages ",
                                                  formatRanges(stages)));
    }
    rows.push_back(std::move(row));
  };
  for (const ParameterGroup &group : groupParameters(plan)) {
    // Layered parameters print without stages where the stage table's
    // layer ranges give them and folded layers sit on different stages;
    // with them where every folded layer sits on the same stages.
    bool stages = group.prefix.empty() ||
                  (group.sameStages && plan.stages_size() > 1);
    for (int p : group.params)
      addParam(p, stages);
    if (!group.sameLayers.empty())
      rows.push_back({absl::StrCat("... same for ", group.prefix, " layers ",
                                   formatRanges(group.sameLayers))});
  }
  out += renderTable(rows, "  ");
}

void appendCollectives(std::string &out, const Plan &plan) {
  absl::StrAppend(&out, "\nCollectives per step and device (predicted)\n");
  if (plan.predicted().comm().empty())
    absl::StrAppend(&out, "  none predicted\n");
  else {
    // Stage by stage, as the counted table below lists programs.
    std::vector<std::vector<std::string>> rows = {
        {"stage", "kind", "link", "count", "bytes"}};
    int64_t shown = -1;
    for (const plan::CommVolume &v : plan.predicted().comm()) {
      rows.push_back({v.stage() == shown ? "" : absl::StrCat(v.stage()),
                      v.kind(), v.link(), absl::StrCat(v.count()),
                      formatBytes(v.bytes())});
      shown = v.stage();
    }
    out += renderTable(rows, "  ");
  }

  absl::StrAppend(&out, "Collectives per step and device (counted in the "
                        "programs; programs with the same counts folded)\n");
  std::vector<std::vector<CollectiveCount>> counts = countCollectives(plan);
  std::vector<ProgramMemory> memory = programMemory(plan);
  // Middle stages of a deep pipeline run the same collectives; one block
  // per distinct tally keeps 64 programs readable.
  std::map<std::string, std::vector<int64_t>> programsOf;
  std::vector<std::string> keyOf(plan.programs_size());
  for (int p = 0; p < plan.programs_size(); ++p) {
    std::string key = absl::StrCat(memory[p].ranks, ";");
    for (const CollectiveCount &c : counts[p])
      absl::StrAppend(&key, c.kind, "/", c.axes, "/", c.count, "/", c.bytes,
                      ";");
    keyOf[p] = key;
    programsOf[key].push_back(p);
  }
  std::vector<std::vector<std::string>> rows = {
      {"programs", "ranks each", "kind", "axes", "count", "bytes"}};
  for (int p = 0; p < plan.programs_size(); ++p) {
    const std::vector<int64_t> &same = programsOf[keyOf[p]];
    if (same.front() != p)
      continue;
    std::string name = same.size() == 1
                           ? absl::StrCat(p, " ", plan.programs(p).name())
                           : formatRanges(same);
    std::string ranks = absl::StrCat(memory[p].ranks);
    if (counts[p].empty())
      rows.push_back({name, ranks, "none"});
    for (const CollectiveCount &c : counts[p]) {
      rows.push_back({name, ranks, c.kind, c.axes.empty() ? "-" : c.axes,
                      absl::StrCat(c.count), formatBytes(c.bytes)});
      name.clear();
      ranks.clear();
    }
  }
  out += renderTable(rows, "  ");
}

void appendMemory(std::string &out, const Plan &plan) {
  absl::StrAppend(&out, "\nMemory per device (the planned arena by tensor "
                        "kind; in parentheses the tensors' own sizes where "
                        "they differ, as transients share space)\n");
  std::vector<ProgramMemory> memory = programMemory(plan);
  std::set<plan::TensorDecl::Kind> kinds;
  for (const ProgramMemory &m : memory) {
    for (const auto &[kind, bytes] : m.planned)
      kinds.insert(kind);
    for (const auto &[kind, bytes] : m.tensors)
      kinds.insert(kind);
  }
  std::vector<std::string> header = {"program", "stage", "ranks", "arena"};
  for (plan::TensorDecl::Kind kind : kinds)
    header.push_back(kindName(kind));
  std::vector<std::vector<std::string>> rows = {header};
  for (int p = 0; p < plan.programs_size(); ++p) {
    const ProgramMemory &m = memory[p];
    std::vector<std::string> row = {
        absl::StrCat(p, " ", plan.programs(p).name()),
        absl::StrCat(plan.programs(p).stage()), absl::StrCat(m.ranks),
        formatBytes(static_cast<double>(m.arenaBytes))};
    for (plan::TensorDecl::Kind kind : kinds) {
      auto planned = m.planned.find(kind);
      auto tensors = m.tensors.find(kind);
      std::string cell =
          planned != m.planned.end()
              ? formatBytes(static_cast<double>(planned->second))
              : "-";
      if (tensors != m.tensors.end() &&
          (planned == m.planned.end() || planned->second != tensors->second))
        absl::StrAppend(&cell, " (",
                        formatBytes(static_cast<double>(tensors->second)),
                        ")");
      row.push_back(cell);
    }
    rows.push_back(std::move(row));
  }
  out += renderTable(rows, "  ");
}

void appendPredicted(std::string &out, const Plan &plan) {
  const plan::PredictedMetrics &m = plan.predicted();
  absl::StrAppend(
      &out, "\nPredicted: step ", absl::StrFormat("%.4g", m.step_time_s()),
      " s, ", absl::StrFormat("%.4g", m.tflops_per_device()),
      " TFLOP/s per device, MFU ", percent(m.mfu()), ", bubble ",
      percent(m.bubble_fraction()), ", ",
      absl::StrFormat("%.0f", m.tokens_per_s()), " tokens/s\n");
  if (!m.peak_memory_per_stage().empty()) {
    std::vector<std::string> peaks;
    for (double bytes : m.peak_memory_per_stage())
      peaks.push_back(formatBytes(bytes));
    absl::StrAppend(&out, "  peak memory per stage: ",
                    absl::StrJoin(peaks, ", "), "\n");
  }
  if (!m.explanation().empty()) {
    absl::StrAppend(&out, "Why this plan:\n");
    for (const std::string &line : m.explanation())
      absl::StrAppend(&out, "  - ", line, "\n");
  }
  if (!m.alternatives().empty()) {
    absl::StrAppend(&out, "Next best plans:\n");
    for (const plan::Alternative &a : m.alternatives())
      absl::StrAppend(&out, "  - ", a.knobs(), ": ",
                      absl::StrFormat("%.4g", a.step_time_s()), " s; ",
                      a.why(), "\n");
  }
}

} // namespace

std::string formatPlanSummary(const Plan &plan) {
  std::string out;
  appendHeader(out, plan);
  appendStages(out, plan);
  appendInputs(out, plan);
  appendParameters(out, plan);
  appendCollectives(out, plan);
  appendMemory(out, plan);
  appendPredicted(out, plan);
  return out;
}

absl::StatusOr<std::string> planMlir(const Plan &plan) {
  if (plan.partitioned_mlir().empty())
    return absl::NotFoundError(
        "the plan carries no partitioned MLIR (it was compiled without it)");
  return plan.partitioned_mlir();
}

absl::Status writeSimulatedTrace(const Plan &plan, const std::string &path) {
  if (plan.simulated_trace().empty())
    return absl::NotFoundError("the plan carries no simulated trace");
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    return absl::NotFoundError(absl::StrCat(path, ": cannot open for writing"));
  out << plan.simulated_trace();
  out.close();
  if (!out)
    return absl::DataLossError(absl::StrCat(path, ": write failed"));
  return absl::OkStatus();
}

} // namespace cleave::inspect
