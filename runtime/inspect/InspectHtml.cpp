//===- InspectHtml.cpp - A plan as one self-contained web page ------------===//
//
// `cleave inspect PLAN --html FILE`: the facts of `--json` (the page is
// built from that object, so the two cannot disagree) drawn as a reader
// wants to see them: the device mesh with what each rank holds, the
// simulated pipeline timeline, memory per stage against the device,
// collectives per step, and why the plan was chosen. Inline CSS and SVG
// only: no script, no network access needed to view it. Every figure the
// JSON gives carries an id and a data-value attribute, so a test can read
// the rendered page and compare.
//
//===----------------------------------------------------------------------===//

#include "Inspect.h"
#include "PlanDigest.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <map>
#include <sstream>

namespace cleave::inspect {

namespace {

using nlohmann::json;

std::string escape(const std::string &text) {
  std::string out;
  for (char c : text) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

/// A number for a data-value attribute: full precision, as the JSON has it.
std::string exact(double value) { return absl::StrFormat("%.17g", value); }

/// A figure: shown formatted, carried exactly.
std::string figure(const std::string &id, double value,
                   const std::string &shown) {
  return absl::StrCat("<span id=\"", id, "\" data-value=\"", exact(value),
                      "\">", escape(shown), "</span>");
}

const char *kStyle = R"css(
body { font-family: system-ui, sans-serif; margin: 24px; color: #1d2330; }
h1 { font-size: 22px; margin-bottom: 4px; }
h2 { font-size: 17px; margin-top: 28px; border-bottom: 1px solid #d5d9e0; }
table { border-collapse: collapse; font-size: 13px; }
td, th { padding: 3px 10px; text-align: left; border-bottom: 1px solid #eceef2; }
th { background: #f4f6f9; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.summary td:first-child { color: #5a6275; }
.mesh { display: flex; flex-direction: column; gap: 10px; }
.stage { display: flex; gap: 8px; align-items: stretch; flex-wrap: wrap; }
.stage-label { width: 170px; font-size: 13px; }
.rank { border: 1px solid #9aa5b8; border-radius: 6px; padding: 6px 8px;
        font-size: 12px; min-width: 92px; }
.legend span { display: inline-block; margin-right: 14px; font-size: 12px; }
.swatch { display: inline-block; width: 11px; height: 11px;
          margin-right: 4px; vertical-align: middle; }
svg text { font-size: 11px; fill: #1d2330; }
.note { color: #5a6275; font-size: 12px; }
)css";

/// Colours: stages, trace categories, memory parts.
const char *stageColour(int64_t stage) {
  static const char *colours[] = {"#dbe8fb", "#fde2c8", "#d8f0dc", "#f3d9f2",
                                  "#fbf3c4", "#d4f0f0", "#f6d5d5", "#e3e0f8"};
  return colours[stage % 8];
}

const char *categoryColour(const std::string &cat) {
  if (cat == "forward")
    return "#4a7fd4";
  if (cat == "backward")
    return "#e8853d";
  if (cat == "weight")
    return "#58a866";
  if (cat == "optimizer")
    return "#8a8f9c";
  if (cat == "send" || cat == "recv")
    return "#a46cc4";
  return "#c2a33a";
}

const std::vector<std::pair<std::string, const char *>> &memoryParts() {
  static const std::vector<std::pair<std::string, const char *>> parts = {
      {"params", "#4a7fd4"},      {"grads", "#e8853d"},
      {"optimizer", "#58a866"},   {"activations", "#c44e52"},
      {"comm_buffers", "#a46cc4"}, {"workspace", "#c2a33a"},
      {"fragmentation", "#b7bcc6"}};
  return parts;
}

std::string header(const json &j) {
  const json &p = j.value("predicted", json::object());
  const json &model = j["model"];
  std::ostringstream out;
  out << "<h1>" << escape(model.value("name", "model")) << " on "
      << escape(j["cluster"].value("spec", "")) << "</h1>\n";
  out << "<p class=\"note\">" << escape(model.value("source", ""))
      << " &middot; plan format " << j.value("format_version", 0)
      << " &middot; written by " << escape(j.value("producer", "")) << "</p>\n";
  out << "<table class=\"summary\">\n";
  auto row = [&](const std::string &name, const std::string &value) {
    out << "<tr><td>" << name << "</td><td>" << value << "</td></tr>\n";
  };
  row("plan", "<span id=\"knobs\">" +
                  escape(j["knobs"].value("text", "")) + "</span>");
  row("parameters", figure("num-parameters",
                           model.value("num_parameters", 0.0),
                           formatCount(model.value("num_parameters", 0.0))));
  if (p.contains("step_time_s")) {
    double step = p["step_time_s"];
    row("step time (predicted)",
        figure("step-time", step, absl::StrFormat("%.4g s", step)));
    row("throughput", figure("tflops-per-device",
                             p.value("tflops_per_device", 0.0),
                             absl::StrFormat("%.3g TFLOP/s per device",
                                             p.value("tflops_per_device",
                                                     0.0))) +
                          " &middot; MFU " +
                          figure("mfu", p.value("mfu", 0.0),
                                 absl::StrFormat("%.1f%%",
                                                 100 * p.value("mfu", 0.0))));
    row("tokens per second",
        figure("tokens-per-s", p.value("tokens_per_s", 0.0),
               absl::StrFormat("%.0f", p.value("tokens_per_s", 0.0))));
    row("pipeline bubble",
        figure("bubble", p.value("bubble_fraction", 0.0),
               absl::StrFormat("%.1f%% of the step",
                               100 * p.value("bubble_fraction", 0.0))));
  }
  const json &t = j["training"];
  row("training", absl::StrCat("global batch ", t.value("global_batch", 0),
                               ", sequence ", t.value("seq_len", 0),
                               ", optimizer ",
                               escape(t.value("optimizer", ""))));
  out << "</table>\n";
  return out.str();
}

/// The ranks of each pipeline stage, with their coordinates on the other
/// mesh axes and what their stage holds.
std::string meshView(const json &j) {
  std::vector<std::pair<std::string, int64_t>> axes;
  for (const json &axis : j["mesh"]["axes"])
    axes.emplace_back(axis.value("name", ""), axis.value("size", 1));
  auto coordinates = [&](int64_t rank) {
    std::string text;
    int64_t rest = rank;
    std::vector<std::pair<std::string, int64_t>> coords(axes.size());
    for (size_t i = axes.size(); i-- > 0;) {
      coords[i] = {axes[i].first, rest % std::max<int64_t>(1, axes[i].second)};
      rest /= std::max<int64_t>(1, axes[i].second);
    }
    for (size_t i = 0; i < axes.size(); ++i)
      if (axes[i].first != "pp" && axes[i].second > 1)
        text += absl::StrCat(text.empty() ? "" : " &middot; ", axes[i].first,
                             " ", coords[i].second);
    return text.empty() ? std::string("whole") : text;
  };
  std::ostringstream out;
  out << "<h2>Devices</h2>\n<p class=\"note\">Each box is a rank; a row is "
         "a pipeline stage, with the layers and embedding or head it holds "
         "(chunks under interleaving).</p>\n<div class=\"mesh\">\n";
  for (const json &stage : j.value("stages", json::array())) {
    int64_t s = stage.value("stage", 0);
    std::string layers;
    for (const json &chunk : stage.value("chunks", json::array())) {
      int64_t first = chunk.value("first_layer", 0),
              n = chunk.value("num_layers", 0);
      if (n <= 0)
        continue;
      layers += absl::StrCat(layers.empty() ? "" : ", ", first,
                             n > 1 ? absl::StrCat("-", first + n - 1) : "");
    }
    std::string holds = layers.empty() ? "no layers" : "layers " + layers;
    if (stage.value("has_embedding", false))
      holds += " + embedding";
    if (stage.value("has_head", false))
      holds += " + head";
    out << "<div class=\"stage\" id=\"stage-" << s << "\"><div "
        << "class=\"stage-label\"><b>stage " << s << "</b><br>" << holds
        << "</div>\n";
    for (const json &rank : stage.value("ranks", json::array())) {
      int64_t r = rank.get<int64_t>();
      out << "<div class=\"rank\" id=\"rank-" << r << "\" data-stage=\"" << s
          << "\" style=\"background:" << stageColour(s) << "\"><b>rank " << r
          << "</b><br>" << coordinates(r) << "</div>\n";
    }
    out << "</div>\n";
  }
  out << "</div>\n";
  return out.str();
}

/// A Chrome trace as a timeline: one row per rank and stream, one box per
/// task. `segmentsOnly`: a measured trace (`cleave run --trace`), drawn by
/// its segments (thread 0: a microbatch's forward, backward, ...), whose
/// instructions would be thousands of boxes per step.
std::string timelineView(const std::string &trace, const std::string &title,
                         const std::string &id, bool segmentsOnly) {
  std::ostringstream out;
  out << "<h2>" << escape(title) << "</h2>\n";
  json t = json::parse(trace, nullptr, /*allow_exceptions=*/false);
  if (t.is_discarded() || !t.contains("traceEvents")) {
    out << "<p class=\"note\">" << (id == "timeline"
                                          ? "The plan carries no simulated step."
                                          : "The trace holds no events.")
        << "</p>\n";
    return out.str();
  }
  if (segmentsOnly) {
    json kept = json::array();
    for (json &e : t["traceEvents"])
      if (e.value("ph", "") != "X" || e.value("tid", 0) == 0) {
        // FORWARD, BACKWARD, ... as the simulated trace names them.
        std::string cat = e.value("cat", "");
        for (char &c : cat)
          c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        if (e.contains("cat"))
          e["cat"] = cat;
        kept.push_back(std::move(e));
      }
    t["traceEvents"] = std::move(kept);
  }
  std::map<std::pair<int64_t, int64_t>, std::string> rows; // (pid, tid)
  std::map<int64_t, std::string> processes;
  double end = 0;
  for (const json &e : t["traceEvents"]) {
    std::string ph = e.value("ph", "");
    int64_t pid = e.value("pid", 0), tid = e.value("tid", 0);
    if (ph == "M" && e.value("name", "") == "process_name")
      processes[pid] = e["args"].value("name", "");
    else if (ph == "M" && e.value("name", "") == "thread_name")
      rows[{pid, tid}] = e["args"].value("name", "");
    else if (ph == "X")
      end = std::max(end, e.value("ts", 0.0) + e.value("dur", 0.0));
  }
  // Streams with no task are left out.
  std::map<std::pair<int64_t, int64_t>, int> used;
  for (const json &e : t["traceEvents"])
    if (e.value("ph", "") == "X")
      used[{e.value("pid", 0), e.value("tid", 0)}] = 1;
  int index = 0;
  for (auto &[key, n] : used)
    n = index++;
  const double left = 170, width = 900, rowHeight = 16;
  double height = 30 + rowHeight * used.size();
  double scale = end > 0 ? width / end : 1;
  out << absl::StrFormat("<svg id=\"%s\" data-events=\"%d\" "
                         "width=\"%.0f\" height=\"%.0f\" role=\"img\">\n",
                         id, static_cast<int>(t["traceEvents"].size()),
                         left + width + 60, height);
  for (const auto &[key, row] : used) {
    double y = 20 + rowHeight * row;
    out << absl::StrFormat("<text x=\"4\" y=\"%.1f\">%s, %s</text>\n",
                           y + 11, escape(processes[key.first]),
                           escape(rows[key]));
  }
  for (const json &e : t["traceEvents"]) {
    if (e.value("ph", "") != "X")
      continue;
    int row = used[{e.value("pid", 0), e.value("tid", 0)}];
    double x = left + e.value("ts", 0.0) * scale;
    double w = std::max(0.5, e.value("dur", 0.0) * scale);
    std::string cat = e.value("cat", "");
    out << absl::StrFormat(
        "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.0f\" "
        "fill=\"%s\"><title>%s: %.3f ms from %.3f ms</title></rect>\n",
        x, 20 + rowHeight * row + 2, w, rowHeight - 4, categoryColour(cat),
        escape(e.value("name", "")), e.value("dur", 0.0) / 1e3,
        e.value("ts", 0.0) / 1e3);
  }
  // A time axis in milliseconds.
  for (int tick = 0; tick <= 5; ++tick) {
    double x = left + width * tick / 5;
    out << absl::StrFormat("<text x=\"%.1f\" y=\"12\">%.3g ms</text>\n", x,
                           end / 1e3 * tick / 5);
  }
  out << "</svg>\n<p class=\"legend\">";
  for (const char *cat : {"forward", "backward", "weight", "send", "optimizer"})
    out << "<span><i class=\"swatch\" style=\"background:"
        << categoryColour(cat) << "\"></i>" << cat << "</span>";
  out << "</p>\n";
  return out.str();
}

/// Predicted memory per stage, stacked, against the device's memory.
std::string memoryView(const json &j) {
  std::ostringstream out;
  out << "<h2>Memory per device, by stage (predicted)</h2>\n";
  double capacity = j["cluster"].value("memory_bytes", 0.0);
  double most = capacity;
  for (const json &stage : j.value("stages", json::array()))
    most = std::max(most, stage.value("predicted_peak_bytes", 0.0));
  if (most <= 0) {
    out << "<p class=\"note\">No memory prediction in the plan.</p>\n";
    return out.str();
  }
  const double left = 80, width = 760, barHeight = 22;
  size_t stages = j.value("stages", json::array()).size();
  out << absl::StrFormat("<svg id=\"memory\" width=\"%.0f\" height=\"%.0f\" "
                         "role=\"img\">\n",
                         left + width + 140, 24 + (barHeight + 8) * stages);
  int row = 0;
  for (const json &stage : j.value("stages", json::array())) {
    int64_t s = stage.value("stage", 0);
    const json &m = stage.value("predicted_memory", json::object());
    double y = 10 + (barHeight + 8) * row++;
    double x = left;
    out << absl::StrFormat("<text x=\"4\" y=\"%.1f\">stage %d</text>\n",
                           y + 15, static_cast<int>(s));
    for (const auto &[part, colour] : memoryParts()) {
      double bytes = m.value(part, 0.0);
      if (bytes <= 0)
        continue;
      double w = bytes / most * width;
      out << absl::StrFormat(
          "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.0f\" "
          "fill=\"%s\"><title>%s: %s</title></rect>\n",
          x, y, w, barHeight, colour, part, formatBytes(bytes));
      x += w;
    }
    double total = stage.value("predicted_peak_bytes", 0.0);
    out << absl::StrFormat("<text x=\"%.1f\" y=\"%.1f\" id=\"memory-stage-%d\" "
                           "data-value=\"%s\">%s</text>\n",
                           x + 6, y + 15, static_cast<int>(s), exact(total),
                           formatBytes(total));
  }
  if (capacity > 0) {
    double x = left + capacity / most * width;
    double bottom = 14 + (barHeight + 8) * static_cast<double>(stages);
    out << "<line x1=\"" << absl::StrFormat("%.1f", x) << "\" x2=\""
        << absl::StrFormat("%.1f", x) << "\" y1=\"4\" y2=\""
        << absl::StrFormat("%.0f", bottom)
        << "\" stroke=\"#c0392b\" stroke-dasharray=\"4 3\"/>\n"
        << "<text x=\"" << absl::StrFormat("%.1f", x - 40) << "\" y=\""
        << absl::StrFormat("%.0f", bottom + 8)
        << "\" id=\"device-memory\" data-value=\"" << exact(capacity)
        << "\">device " << formatBytes(capacity) << "</text>\n";
  }
  out << "</svg>\n<p class=\"legend\">";
  for (const auto &[part, colour] : memoryParts())
    out << "<span><i class=\"swatch\" style=\"background:" << colour
        << "\"></i>" << part << "</span>";
  out << "</p>\n";
  return out.str();
}

/// The communication streams' busy time in the simulated step, per
/// process (a pipeline stage's device) and stream: the collectives' and
/// sends' predicted time. Tensor-parallel collectives run inside the
/// layers' compute tasks and are not among them.
std::string communicationTimes(const std::string &trace) {
  json t = json::parse(trace, nullptr, /*allow_exceptions=*/false);
  if (t.is_discarded() || !t.contains("traceEvents"))
    return "";
  std::map<std::pair<int64_t, int64_t>, std::string> names;
  std::map<int64_t, std::string> processes;
  std::map<std::pair<int64_t, int64_t>, double> busy; // microseconds
  for (const json &e : t["traceEvents"]) {
    int64_t pid = e.value("pid", 0), tid = e.value("tid", 0);
    if (e.value("ph", "") == "M" && e.value("name", "") == "thread_name")
      names[{pid, tid}] = e["args"].value("name", "");
    else if (e.value("ph", "") == "M" && e.value("name", "") == "process_name")
      processes[pid] = e["args"].value("name", "");
    else if (e.value("ph", "") == "X")
      busy[{pid, tid}] += e.value("dur", 0.0);
  }
  std::ostringstream out;
  for (const auto &[key, us] : busy) {
    const std::string &stream = names[key];
    if (stream == "compute" || stream.empty())
      continue;
    out << "<tr><td>" << escape(processes[key.first]) << "</td><td>"
        << escape(stream) << "</td><td class=\"num\">"
        << figure(absl::StrCat("comm-time-", key.first, "-", key.second),
                  us * 1e-6, absl::StrFormat("%.4g ms", us * 1e-3))
        << "</td></tr>\n";
  }
  if (out.str().empty())
    return "";
  return "<p class=\"note\">Their time in the simulated step: each "
         "communication stream's busy time (tensor-parallel collectives run "
         "inside the layers' compute and count there).</p>\n<table "
         "id=\"comm-times\"><tr><th>device</th><th>stream</th><th>busy "
         "(predicted)</th></tr>\n" +
         out.str() + "</table>\n";
}

std::string collectivesView(const json &j, const std::string &trace) {
  std::ostringstream out;
  out << "<h2>Collectives per step and device (predicted)</h2>\n";
  const json &predicted =
      j.value("collectives", json::object()).value("predicted", json::array());
  if (predicted.empty()) {
    out << "<p class=\"note\">None predicted.</p>\n";
    return out.str();
  }
  out << "<table id=\"collectives\"><tr><th>stage</th><th>kind</th>"
         "<th>link</th><th>count</th><th>bytes</th></tr>\n";
  int index = 0;
  for (const json &c : predicted) {
    out << "<tr><td>" << c.value("stage", 0) << "</td><td>"
        << escape(c.value("kind", "")) << "</td><td>"
        << escape(c.value("link", "")) << "</td><td class=\"num\">"
        << c.value("count", 0) << "</td><td class=\"num\" id=\"collective-"
        << index++ << "\" data-value=\"" << exact(c.value("bytes", 0.0))
        << "\">" << formatBytes(c.value("bytes", 0.0)) << "</td></tr>\n";
  }
  out << "</table>\n" << communicationTimes(trace);
  return out.str();
}

std::string whyView(const json &j) {
  std::ostringstream out;
  out << "<h2>Why this plan</h2>\n<ul id=\"explanation\">\n";
  for (const json &line : j.value("predicted", json::object())
                              .value("explanation", json::array()))
    out << "<li>" << escape(line.get<std::string>()) << "</li>\n";
  out << "</ul>\n";
  const json &alternatives = j.value("predicted", json::object())
                                 .value("alternatives", json::array());
  if (alternatives.empty())
    return out.str();
  out << "<h2>The search's next best plans</h2>\n<table id=\"alternatives\">"
         "<tr><th>plan</th><th>step (predicted)</th><th>why it lost</th></tr>\n";
  int i = 0;
  for (const json &a : alternatives) {
    double step = a.value("step_time_s", 0.0);
    out << "<tr><td>" << escape(a.value("knobs", "")) << "</td><td class=\"num\">"
        << figure(absl::StrCat("alternative-", i++, "-step"), step,
                  absl::StrFormat("%.4g s", step))
        << "</td><td>" << escape(a.value("why", "")) << "</td></tr>\n";
  }
  out << "</table>\n";
  return out.str();
}

std::string parametersView(const json &j) {
  std::ostringstream out;
  const json &params = j.value("parameters", json::array());
  out << "<h2>Parameters</h2>\n<details><summary>" << params.size()
      << " parameters: shape, how each dimension is split over the mesh "
         "(- whole), stages, ZeRO</summary>\n<table><tr><th>name</th>"
         "<th>shape</th><th>dims</th><th>stages</th><th>ZeRO</th></tr>\n";
  for (const json &p : params) {
    std::string shape, dims;
    for (const json &d : p.value("global_shape", json::array()))
      shape += (shape.empty() ? "" : "x") + std::to_string(d.get<int64_t>());
    for (const json &d : p.value("dims", json::array())) {
      std::string axes;
      for (const json &a : d)
        axes += (axes.empty() ? "" : ",") + a.get<std::string>();
      dims += (dims.empty() ? "" : ", ") + (axes.empty() ? "-" : axes);
    }
    std::string stages;
    for (const json &s : p.value("stages", json::array()))
      stages += (stages.empty() ? "" : ", ") + std::to_string(s.get<int64_t>());
    out << "<tr><td>" << escape(p.value("name", "")) << "</td><td>" << shape
        << "</td><td>[" << escape(dims) << "]</td><td>" << stages
        << "</td><td>" << escape(p.value("zero_axis", "")) << "</td></tr>\n";
  }
  out << "</table></details>\n";
  return out.str();
}

} // namespace

std::string formatPlanHtml(const plan::Plan &plan,
                           const std::string &measuredTrace) {
  json j = json::parse(formatPlanJson(plan));
  std::ostringstream out;
  out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
         "<title>"
      << escape(j["model"].value("name", "plan")) << " plan (cleave)"
      << "</title>\n<style>" << kStyle << "</style></head>\n<body>\n";
  out << header(j) << meshView(j)
      << timelineView(plan.simulated_trace(),
                      "Pipeline timeline (simulated step)", "timeline",
                      /*segmentsOnly=*/false);
  if (!measuredTrace.empty())
    out << timelineView(measuredTrace,
                        "Measured timeline (cleave run --trace)",
                        "measured-timeline", /*segmentsOnly=*/true);
  out << memoryView(j) << collectivesView(j, plan.simulated_trace()) << whyView(j) << parametersView(j);
  out << "<p class=\"note\">Written by cleave inspect --html from the same "
         "facts as cleave inspect --json.</p>\n</body></html>\n";
  return out.str();
}

} // namespace cleave::inspect
