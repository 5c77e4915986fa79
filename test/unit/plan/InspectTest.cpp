//===- InspectTest.cpp - What `cleave inspect` prints ---------------------===//

#include "TestPlans.h"

#include "inspect/Inspect.h"
#include "inspect/PlanDigest.h"

#include "cleave/runtime/plan/PlanIO.h"

#include "absl/strings/str_split.h"

#include <gmock/gmock.h>
#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace cleave::inspect {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using google::protobuf::Struct;
using google::protobuf::Value;

Struct parseJson(const std::string &json) {
  Struct out;
  auto status = google::protobuf::util::JsonStringToMessage(json, &out);
  EXPECT_TRUE(status.ok()) << status.ToString() << "\n" << json;
  return out;
}

const Value &field(const Struct &s, const std::string &key) {
  static const Value empty;
  auto it = s.fields().find(key);
  EXPECT_TRUE(it != s.fields().end()) << "no key " << key;
  return it == s.fields().end() ? empty : it->second;
}

/// Positions of `needles` in `text`, which must appear in this order.
void expectInOrder(const std::string &text,
                   const std::vector<std::string> &needles) {
  size_t at = 0;
  for (const std::string &needle : needles) {
    size_t found = text.find(needle, at);
    ASSERT_NE(found, std::string::npos)
        << "'" << needle << "' not found after offset " << at << " in\n"
        << text;
    at = found + needle.size();
  }
}

TEST(InspectSummary, ShowsMeshStagesAndShardings) {
  std::string s = formatPlanSummary(plan::testing::makeTwoStagePlan());
  EXPECT_THAT(s, HasSubstr("Model: gpt (zoo:gpt,layers=2,hidden=8"));
  EXPECT_THAT(s, HasSubstr("Cluster: cpu-local,devices=4"));
  EXPECT_THAT(s, HasSubstr("Mesh: pp=2 x tp=2 (4 ranks, 2 programs"));
  EXPECT_THAT(s, HasSubstr("Knobs: dp=1,tp=2,pp=2"));
  EXPECT_THAT(s, HasSubstr("optimizer adamw"));
  // Stage rows: stage, layers, what it holds, ranks.
  EXPECT_THAT(s, HasSubstr("  0      0       embedding  0-1    4.00 KiB"));
  // The predicted breakdown (parameters ...) and the planned arena.
  EXPECT_THAT(s, HasSubstr("  1      1       head       2-3    5.00 KiB   "
                           "1.25 KiB"));
  EXPECT_THAT(s, HasSubstr("predicted  parameters  gradients  optimizer  "
                           "activations  arena"));
  // Parameter shardings.
  EXPECT_THAT(s, HasSubstr("wte"));
  EXPECT_THAT(s, HasSubstr("16x8  [tp, -]"));
  EXPECT_THAT(s, HasSubstr("h.0.mlp.fc.weight"));
  EXPECT_THAT(s, HasSubstr("8x32  [-, tp]"));
  EXPECT_THAT(s, HasSubstr("... same for h layers 1"));
  EXPECT_THAT(s, HasSubstr("stages 0-1"));
  // Collectives, memory, predictions, reasons.
  EXPECT_THAT(s, HasSubstr("all_reduce  shm   10     3.00 KiB"));
  EXPECT_THAT(s, HasSubstr("0 stage0  2           all_reduce  pp    1      "
                           "256 B"));
  EXPECT_THAT(s, HasSubstr("Memory per device"));
  EXPECT_THAT(s, HasSubstr("0 stage0  0      2      8.38 KiB"));
  EXPECT_THAT(s, HasSubstr("MFU 4.0%, bubble 33.3%"));
  EXPECT_THAT(s, HasSubstr("  - bounded by compute on stage 1"));
  expectInOrder(s, {"Model:", "Cluster:", "Mesh:", "Knobs:", "Stages",
                    "Parameters", "Collectives", "Memory per device",
                    "Predicted:"});
}

TEST(InspectSummary, FoldsIdenticalLayersOfLargeModels) {
  plan::Plan plan = plan::testing::makeLargePlan(96, 16, 8, 8, 64);
  auto start = std::chrono::steady_clock::now();
  std::string s = formatPlanSummary(plan);
  double seconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - start)
                       .count();
  EXPECT_LT(seconds, 2.0);
  EXPECT_THAT(s, HasSubstr("Mesh: pp=16 x dp=8 x tp=8 (1024 ranks, 16 "
                           "programs"));
  EXPECT_THAT(s, HasSubstr("h.0.attn.qkv.weight"));
  EXPECT_THAT(s, HasSubstr("12288x36864  [-, tp]  zero: dp"));
  EXPECT_THAT(s, HasSubstr("... same for h layers 1-95"));
  EXPECT_THAT(s, Not(HasSubstr("h.1.attn.qkv.weight")));
  EXPECT_THAT(s, HasSubstr("  15     90-95   head       960-1023"));
  // One screen or so, not one line per parameter or rank.
  std::vector<std::string> lines = absl::StrSplit(s, '\n');
  EXPECT_LT(lines.size(), 150u) << s;
}

TEST(InspectSummary, EmptyPlanDoesNotCrash) {
  std::string s = formatPlanSummary(plan::Plan());
  EXPECT_THAT(s, HasSubstr("Mesh: (no axes)"));
  EXPECT_FALSE(formatPlanJson(plan::Plan()).empty());
  parseJson(formatPlanJson(plan::Plan()));
}

TEST(InspectDigest, CountsCollectivesFromTheSchedule) {
  std::vector<std::vector<CollectiveCount>> counts =
      countCollectives(plan::testing::makeTwoStagePlan());
  ASSERT_EQ(counts.size(), 2u);
  // Stage 0 per step: 2 forward + 1 backward tp all-reduces of 2x4x8 f32
  // (256 bytes) per microbatch, 2 microbatches; one pp all-reduce of the
  // tied embedding's 8x8 gradient; one send and one recv per microbatch.
  // comm.wait is not a collective.
  std::map<std::string, CollectiveCount> byKey;
  for (const CollectiveCount &c : counts[0])
    byKey[c.kind + "/" + c.axes] = c;
  ASSERT_EQ(byKey.size(), 4u);
  EXPECT_EQ(byKey["all_reduce/tp"].count, 6);
  EXPECT_EQ(byKey["all_reduce/tp"].bytes, 6 * 256);
  EXPECT_EQ(byKey["all_reduce/pp"].count, 1);
  EXPECT_EQ(byKey["all_reduce/pp"].bytes, 256);
  EXPECT_EQ(byKey["send/pp"].count, 2);
  EXPECT_EQ(byKey["send/pp"].bytes, 512);
  EXPECT_EQ(byKey["recv/pp"].count, 2);
}

TEST(InspectDigest, CollectiveExcessComparesCountedWithPredicted) {
  plan::Plan plan = plan::testing::makeTwoStagePlan();
  plan.mutable_predicted()->clear_comm();
  // No predicted tally (a graph plan): nothing to compare with.
  EXPECT_TRUE(collectiveExcess(plan, 1.5, 0).empty());
  auto predict = [&](int64_t stage, const std::string &kind, double bytes) {
    plan::CommVolume *v = plan.mutable_predicted()->add_comm();
    v->set_stage(stage);
    v->set_kind(kind);
    v->set_bytes(bytes);
    v->set_count(1);
  };
  // Stage 0 runs 6 x 256 + 256 bytes of all-reduces a step
  // (CountsCollectivesFromTheSchedule); pipeline messages are left out on
  // both sides.
  predict(0, "all_reduce", 1000);
  predict(0, "send_recv", 1e9);
  predict(1, "all_reduce", 1e9);
  std::vector<CollectiveExcess> excess = collectiveExcess(plan, 1.5, 100);
  ASSERT_EQ(excess.size(), 1u);
  EXPECT_EQ(excess[0].stage, 0);
  EXPECT_EQ(excess[0].countedBytes, 6 * 256 + 256);
  EXPECT_EQ(excess[0].predictedBytes, 1000);
  // Within the ratio, or within the margin in bytes: no excess.
  EXPECT_TRUE(collectiveExcess(plan, 2.0, 100).empty());
  EXPECT_TRUE(collectiveExcess(plan, 1.5, 1000).empty());
}

TEST(InspectDigest, MemoryPerProgram) {
  plan::Plan plan = plan::testing::makeTwoStagePlan();
  std::vector<ProgramMemory> memory = programMemory(plan);
  ASSERT_EQ(memory.size(), 2u);
  EXPECT_EQ(memory[0].ranks, 2);
  EXPECT_EQ(memory[0].arenaBytes, plan.programs(0).arena_bytes());
  // Stage 0 parameters: 8x8 + 8x16 + 16x8 fp32.
  EXPECT_EQ(memory[0].planned[plan::TensorDecl::PARAMETER], (64 + 256) * 4);
  EXPECT_EQ(memory[0].tensors[plan::TensorDecl::STASH], 2 * 512);
}

TEST(InspectDigest, Ranges) {
  EXPECT_EQ(formatRanges({}), "none");
  EXPECT_EQ(formatRanges({3}), "3");
  EXPECT_EQ(formatRanges({5, 1, 2, 3, 7, 8}), "1-3, 5, 7-8");
  EXPECT_EQ(formatRanges({1, 3, 5, 7}), "1, 3, ..., 7 (every 2)");
  EXPECT_EQ(formatRanges({0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 21}, 3),
            "0, 2, 4, ... (11 in all)");
  EXPECT_EQ(formatBytes(512), "512 B");
  EXPECT_EQ(formatBytes(1536), "1.50 KiB");
  EXPECT_EQ(formatBytes(80.0 * (1ull << 30)), "80.00 GiB");
}

TEST(InspectDigest, GroupsAlternatingLayers) {
  // MoE every other layer: dense and expert layers fold separately.
  plan::Plan plan;
  auto add = [&](const std::string &name, std::vector<int64_t> shape,
                 const char *axis) {
    plan::ParameterSharding *p = plan.add_parameters();
    p->set_name(name);
    for (int64_t d : shape)
      p->add_global_shape(d);
    p->add_dims()->add_axes(axis);
    p->add_dims();
  };
  add("wte", {100, 8}, "tp");
  for (int l = 0; l < 8; ++l) {
    if (l % 2 == 0)
      add(absl::StrCat("h.", l, ".mlp.fc.weight"), {8, 32}, "tp");
    else
      add(absl::StrCat("h.", l, ".moe.experts.weight"), {4, 8, 32}, "ep");
  }
  add("ln_f.weight", {8}, "tp");
  std::vector<ParameterGroup> groups = groupParameters(plan);
  ASSERT_EQ(groups.size(), 4u);
  EXPECT_EQ(groups[0].prefix, "");
  EXPECT_EQ(groups[1].layer, 0);
  EXPECT_EQ(groups[1].sameLayers, (std::vector<int64_t>{2, 4, 6}));
  EXPECT_EQ(groups[2].layer, 1);
  EXPECT_EQ(groups[2].sameLayers, (std::vector<int64_t>{3, 5, 7}));
  EXPECT_EQ(plan.parameters(groups[3].params[0]).name(), "ln_f.weight");
  EXPECT_THAT(formatPlanSummary(plan),
              HasSubstr("... same for h layers 2, 4, ..., 6 (every 2)"));
}

TEST(InspectJson, ParsesWithTheDocumentedKeys) {
  plan::Plan plan = plan::testing::makeTwoStagePlan();
  std::string json = formatPlanJson(plan);
  Struct root = parseJson(json);
  for (const char *key :
       {"format_version", "producer", "model", "cluster", "mesh", "knobs",
        "training", "stages", "parameters", "parameter_groups",
        "collectives", "memory", "predicted"})
    EXPECT_TRUE(root.fields().count(key)) << key;
  EXPECT_EQ(field(root, "format_version").number_value(),
            cleave::plan::kFormatVersion);
  EXPECT_EQ(field(field(root, "model").struct_value(), "name").string_value(),
            "gpt");
  EXPECT_EQ(field(field(root, "model").struct_value(), "num_parameters")
                .number_value(),
            1160);
  const Struct &mesh = field(root, "mesh").struct_value();
  ASSERT_EQ(field(mesh, "axes").list_value().values_size(), 2);
  EXPECT_EQ(field(field(mesh, "axes").list_value().values(0).struct_value(),
                  "name")
                .string_value(),
            "pp");
  EXPECT_EQ(field(mesh, "num_ranks").number_value(), 4);
  EXPECT_EQ(field(field(root, "knobs").struct_value(), "schedule")
                .string_value(),
            "1f1b");
  // Defaults are written, not omitted.
  EXPECT_EQ(field(field(root, "knobs").struct_value(), "zero").number_value(),
            0);

  const auto &stages = field(root, "stages").list_value();
  ASSERT_EQ(stages.values_size(), 2);
  const Struct &stage1 = stages.values(1).struct_value();
  EXPECT_TRUE(field(stage1, "has_head").bool_value());
  EXPECT_EQ(field(stage1, "ranks").list_value().values_size(), 2);
  EXPECT_EQ(field(stage1, "planned_arena_bytes").number_value(),
            plan.programs(1).arena_bytes());

  const auto &params = field(root, "parameters").list_value();
  ASSERT_EQ(params.values_size(), 6);
  const Struct &fc = params.values(1).struct_value();
  EXPECT_EQ(field(fc, "name").string_value(), "h.0.mlp.fc.weight");
  const auto &dims = field(fc, "dims").list_value();
  ASSERT_EQ(dims.values_size(), 2);
  EXPECT_EQ(dims.values(0).list_value().values_size(), 0);
  EXPECT_EQ(dims.values(1).list_value().values(0).string_value(), "tp");
  EXPECT_EQ(field(params.values(5).struct_value(), "init").string_value(),
            "ONES");

  const Struct &collectives = field(root, "collectives").struct_value();
  EXPECT_EQ(field(collectives, "predicted").list_value().values_size(), 2);
  const auto &programs = field(collectives, "programs").list_value();
  ASSERT_EQ(programs.values_size(), 2);
  EXPECT_EQ(field(programs.values(0).struct_value(), "ops")
                .list_value()
                .values_size(),
            4);

  const auto &memory = field(root, "memory").list_value();
  ASSERT_EQ(memory.values_size(), 2);
  EXPECT_EQ(field(memory.values(0).struct_value(), "arena_bytes")
                .number_value(),
            plan.programs(0).arena_bytes());
  EXPECT_TRUE(field(memory.values(0).struct_value(), "planned_by_kind")
                  .struct_value()
                  .fields()
                  .count("parameter"));

  const Struct &predicted = field(root, "predicted").struct_value();
  EXPECT_EQ(field(predicted, "mfu").number_value(), 0.04);
  EXPECT_EQ(field(predicted, "explanation").list_value().values_size(), 2);

  // The bulky fields stay out.
  EXPECT_THAT(json, Not(HasSubstr("graph.matmul")));
  EXPECT_THAT(json, Not(HasSubstr("traceEvents")));
  EXPECT_THAT(json, Not(HasSubstr("func.func")));
}

TEST(InspectJson, EscapesStrings) {
  plan::Plan plan = plan::testing::makeTwoStagePlan();
  plan.mutable_model()->set_source("dir \"a\\b\"\n\x01.onnx");
  Struct root = parseJson(formatPlanJson(plan));
  EXPECT_EQ(field(field(root, "model").struct_value(), "source").string_value(),
            "dir \"a\\b\"\n\x01.onnx");
}

TEST(InspectJson, LargePlanIsFastAndValid) {
  plan::Plan plan = plan::testing::makeLargePlan(96, 16, 8, 8, 64);
  auto start = std::chrono::steady_clock::now();
  std::string json = formatPlanJson(plan);
  double seconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - start)
                       .count();
  EXPECT_LT(seconds, 2.0);
  Struct root = parseJson(json);
  EXPECT_EQ(field(field(root, "mesh").struct_value(), "rank_programs")
                .list_value()
                .values_size(),
            1024);
  const auto &groups = field(root, "parameter_groups").list_value();
  ASSERT_EQ(groups.values_size(), 3);
  EXPECT_EQ(field(groups.values(1).struct_value(), "same_layers")
                .list_value()
                .values_size(),
            95);
}

TEST(InspectRank, ListsInstructionsInScheduleOrder) {
  plan::Plan plan = plan::testing::makeTwoStagePlan();
  absl::StatusOr<std::string> text = formatRankProgram(plan, 1);
  ASSERT_TRUE(text.ok()) << text.status();
  const std::string &s = *text;
  EXPECT_THAT(s, HasSubstr("Rank 1 of 4: pp=0 tp=1, node 0 device 1"));
  EXPECT_THAT(s, HasSubstr("Program 0 'stage0' (stage 0)"));
  // Tensor table rows: id, name, kind, shape, dtype, offset, bytes, slots.
  EXPECT_THAT(s, HasSubstr("%0   tokens"));
  EXPECT_THAT(s, HasSubstr("input tokens, batch dim 0"));
  EXPECT_THAT(s, HasSubstr("split [-, tp]"));
  // 1F1B on the first of two stages: F0 F1 B0 B1.
  expectInOrder(s, {"== step_begin (segment 'step_begin')",
                    "  %9, %10, %11 = runtime.zero",
                    "== forward mb 0 (segment 'forward')",
                    "  %4 = graph.gather %1, %0 : 2x4x8xf32   loc(\"wte\")",
                    "  %4 = comm.all_reduce %4 {axes=[tp], reduction=sum} : "
                    "2x4x8xf32",
                    "  %5 = graph.matmul %4, %2 : 2x4x16xf32",
                    "comm.send async(0) %7 {axis=pp, offset=1, tag=0} : "
                    "2x4x8xf32",
                    "  comm.wait {handle=0}",
                    "== forward mb 1 (segment 'forward')",
                    "== backward mb 0 (segment 'backward')",
                    "  %8 = comm.recv {axis=pp, offset=-1, tag=1}",
                    "  %12 = graph.matmul %8, %3 {transpose_rhs} : "
                    "2x4x16xf32",
                    "{accumulate, transpose_lhs}",
                    "== backward mb 1 (segment 'backward')",
                    "== optimizer (segment 'optimizer')",
                    "graph.adamw_update %1, %9, %14, %15 {lr=0.001}"});
  // Each schedule step prints its segment once.
  size_t forwards = 0;
  for (size_t at = s.find("== forward"); at != std::string::npos;
       at = s.find("== forward", at + 1))
    ++forwards;
  EXPECT_EQ(forwards, 2u);
}

TEST(InspectRank, LastStage) {
  absl::StatusOr<std::string> text =
      formatRankProgram(plan::testing::makeTwoStagePlan(), 3);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_THAT(*text, HasSubstr("Rank 3 of 4: pp=1 tp=1"));
  EXPECT_THAT(*text, HasSubstr("loss in %10"));
  EXPECT_THAT(*text, HasSubstr("graph.rms_norm %7, %4, none {eps=1e-05}"));
  EXPECT_THAT(*text, HasSubstr("4 constant bytes"));
  expectInOrder(*text, {"== forward mb 0", "== backward mb 0",
                        "== forward mb 1", "== backward mb 1",
                        "== optimizer"});
}

TEST(InspectRank, RejectsRanksOutsideThePlan) {
  plan::Plan plan = plan::testing::makeTwoStagePlan();
  for (int rank : {99, 4, -1}) {
    absl::StatusOr<std::string> text = formatRankProgram(plan, rank);
    ASSERT_FALSE(text.ok());
    EXPECT_EQ(text.status().code(), absl::StatusCode::kOutOfRange);
    EXPECT_THAT(std::string(text.status().message()),
                HasSubstr(absl::StrCat("rank ", rank,
                                       " is not in the plan: its ranks are "
                                       "0-3")));
  }
}

TEST(InspectRank, LargePlan) {
  plan::Plan plan = plan::testing::makeLargePlan(96, 16, 8, 8, 64);
  auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::string> text = formatRankProgram(plan, 1023);
  double seconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - start)
                       .count();
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_LT(seconds, 2.0);
  EXPECT_THAT(*text, HasSubstr("Rank 1023 of 1024: pp=15 dp=7 tp=7"));
  EXPECT_THAT(*text, HasSubstr("== backward mb 63"));
}

TEST(InspectExtras, MlirAndTrace) {
  plan::Plan plan = plan::testing::makeTwoStagePlan();
  absl::StatusOr<std::string> mlir = planMlir(plan);
  ASSERT_TRUE(mlir.ok());
  EXPECT_THAT(*mlir, HasSubstr("func.func @stage0_forward"));

  std::string path = ::testing::TempDir() + "/trace.json";
  ASSERT_TRUE(writeSimulatedTrace(plan, path).ok());
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  EXPECT_EQ(buffer.str(), plan.simulated_trace());
  std::remove(path.c_str());

  absl::Status bad = writeSimulatedTrace(plan, "/no/such/dir/trace.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.message()), HasSubstr("/no/such/dir/trace.json"));

  plan.clear_partitioned_mlir();
  plan.clear_simulated_trace();
  EXPECT_FALSE(planMlir(plan).ok());
  EXPECT_THAT(std::string(planMlir(plan).status().message()),
              HasSubstr("no partitioned MLIR"));
  absl::Status none = writeSimulatedTrace(plan, path);
  ASSERT_FALSE(none.ok());
  EXPECT_THAT(std::string(none.message()), HasSubstr("no simulated trace"));
}

} // namespace
} // namespace cleave::inspect
