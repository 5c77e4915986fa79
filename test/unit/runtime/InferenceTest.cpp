//===- InferenceTest.cpp - Inference plans and real inputs, one rank ------===//
//
// An inference plan (forward segments only, outputs in
// Program.output_tensors) on the local communicator: its outputs equal the
// kernels called directly, from synthetic inputs and from an `--input`
// file; the cutting of a global-batch file into a rank's rows
// (cutInputRows) for dp and cp; and the errors of input files.
//
//===----------------------------------------------------------------------===//

#include "MlpPlan.h"

#include "cleave/runtime/comm/Communicator.h"
#include "cleave/runtime/executor/Executor.h"
#include "cleave/runtime/executor/Initialization.h"
#include "cleave/runtime/kernels/Elementwise.h"
#include "cleave/runtime/kernels/Matmul.h"
#include "cleave/runtime/plan/PlanIO.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>

using namespace cleave;
namespace k = cleave::kernels;

namespace {

comm::MeshInfo meshOf(const plan::Plan &p, int rank) {
  comm::MeshInfo mesh;
  for (const plan::MeshAxis &axis : p.mesh().axes()) {
    mesh.axisNames.push_back(axis.name());
    mesh.axisSizes.push_back(axis.size());
  }
  mesh.coords.assign(p.ranks(rank).coords().begin(),
                     p.ranks(rank).coords().end());
  return mesh;
}

comm::MeshInfo mesh(std::vector<std::string> names, std::vector<int64_t> sizes,
                    std::vector<int64_t> coords) {
  comm::MeshInfo m;
  m.axisNames = std::move(names);
  m.axisSizes = std::move(sizes);
  m.coords = std::move(coords);
  return m;
}

std::vector<float> ramp(int64_t n, float scale = 0.01f) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i)
    v[i] = scale * static_cast<float>((i * 37) % 101) - 0.5f;
  return v;
}

std::string writeFile(const std::string &name, const void *data,
                      size_t bytes) {
  std::string path = ::testing::TempDir() + "/cleave-inference-" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(static_cast<const char *>(data), bytes);
  return path;
}

std::vector<float> floats(const std::string &bytes) {
  std::vector<float> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), v.size() * 4);
  return v;
}

/// relu(X W) for X [rows, in] and W [in, hidden].
std::vector<float> direct(const std::vector<float> &x,
                          const std::vector<float> &w, int64_t rows,
                          int64_t in, int64_t hidden) {
  k::Tensor X({rows, in}, x), W({in, hidden}, w), pre({rows, hidden}),
      y({rows, hidden});
  k::matmul(X, W, false, false, pre);
  k::unary(k::UnaryOp::Relu, pre, y);
  return std::vector<float>(y.data(), y.data() + rows * hidden);
}

struct LocalRun {
  std::unique_ptr<comm::Communicator> comm;
  std::unique_ptr<executor::Executor> executor;
  absl::Status status;
};

LocalRun start(const plan::Plan &p, executor::ExecutorOptions options = {}) {
  LocalRun run;
  run.comm = comm::createLocalCommunicator(meshOf(p, 0));
  auto ex = executor::Executor::create(p, 0, *run.comm, options);
  run.status = ex.status();
  if (ex.ok())
    run.executor = *std::move(ex);
  return run;
}

TEST(InferenceTest, PlanIsValid) {
  plan::Plan p = test::buildInferencePlan({});
  EXPECT_TRUE(plan::validatePlan(p).ok()) << plan::validatePlan(p);
  auto parsed = plan::parsePlan(plan::serializePlan(p));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->programs(0).output_tensors_size(), 1);
  EXPECT_EQ(parsed->programs(0).output_tensors(0), test::kInferY);
  p.mutable_programs(0)->add_output_tensors(99);
  absl::Status bad = plan::validatePlan(p);
  EXPECT_NE(bad.message().find("output tensor 99 is not a tensor"),
            std::string::npos)
      << bad;
}

// Synthetic inputs: each microbatch's output slot is relu(x W) of that
// microbatch's input slot; there is no loss.
TEST(InferenceTest, OutputsMatchDirectKernels) {
  test::MlpPlanOptions o;
  o.microbatches = 2;
  LocalRun run = start(test::buildInferencePlan(o));
  ASSERT_TRUE(run.executor) << run.status;
  executor::Executor &ex = *run.executor;
  EXPECT_EQ(ex.numMicrobatches(), 2);
  auto result = ex.runStep(1);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(std::isnan(result->loss));
  std::vector<float> w = ex.tensorValues(test::kInferW);
  int64_t rows = o.batch / 2;
  for (int64_t m = 0; m < 2; ++m) {
    std::vector<float> x = ex.tensorValues(test::kInferX, m);
    std::vector<float> y = floats(ex.outputBytes(0, m));
    std::vector<float> want = direct(x, w, rows, o.in, o.hidden);
    ASSERT_EQ(y.size(), want.size());
    for (size_t i = 0; i < y.size(); ++i)
      EXPECT_NEAR(y[i], want[i], 1e-6) << "microbatch " << m << " " << i;
  }
}

// An input file of the global batch: microbatch m's output is relu of rows
// [m B/M, (m+1) B/M) of the file times W, the same every step.
TEST(InferenceTest, InputFileFeedsTheGlobalBatch) {
  test::MlpPlanOptions o;
  o.microbatches = 2;
  std::vector<float> global = ramp(o.batch * o.in);
  executor::ExecutorOptions options;
  options.inputFiles["pixels"] =
      writeFile("pixels.bin", global.data(), global.size() * 4);
  LocalRun run = start(test::buildInferencePlan(o), options);
  ASSERT_TRUE(run.executor) << run.status;
  executor::Executor &ex = *run.executor;
  std::vector<float> w = ex.tensorValues(test::kInferW);
  int64_t rows = o.batch / 2;
  for (int64_t s = 1; s <= 2; ++s) {
    ASSERT_TRUE(ex.runStep(s).ok());
    for (int64_t m = 0; m < 2; ++m) {
      std::vector<float> x(global.begin() + m * rows * o.in,
                           global.begin() + (m + 1) * rows * o.in);
      EXPECT_EQ(ex.tensorValues(test::kInferX, m), x);
      std::vector<float> y = floats(ex.outputBytes(0, m));
      std::vector<float> want = direct(x, w, rows, o.in, o.hidden);
      for (size_t i = 0; i < y.size(); ++i)
        EXPECT_NEAR(y[i], want[i], 1e-6) << "step " << s << " mb " << m;
    }
  }
}

// A training plan fed from a file too (labels as I64).
TEST(InferenceTest, TrainingPlanTakesAnInputFile) {
  test::MlpPlanOptions o;
  std::vector<int64_t> labels(o.batch);
  for (int64_t i = 0; i < o.batch; ++i)
    labels[i] = (i * 3) % o.classes;
  executor::ExecutorOptions options;
  options.inputFiles["labels"] =
      writeFile("labels.bin", labels.data(), labels.size() * 8);
  LocalRun run = start(test::buildMlpPlan(o), options);
  ASSERT_TRUE(run.executor) << run.status;
  auto result = run.executor->runStep(1);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(std::isfinite(result->loss));
  executor::TensorView view = run.executor->tensor(test::kLabels);
  const int64_t *got = static_cast<const int64_t *>(view.data);
  EXPECT_EQ(std::vector<int64_t>(got, got + o.batch), labels);
}

// dp=2, 2 microbatches of a global batch of 8: rank d of microbatch m holds
// rows [4m + 2d, 4m + 2d + 2).
TEST(InferenceTest, CutRowsForDataParallelRanks) {
  plan::TensorDecl t;
  t.set_id(1);
  t.set_name("x");
  t.set_kind(plan::TensorDecl::INPUT);
  t.set_input_name("pixels");
  t.set_dtype(plan::F32);
  t.add_shape(2);
  t.add_shape(3);
  t.set_batch_dim(0);
  t.set_seq_dim(-1);
  std::vector<float> global(8 * 3);
  for (size_t i = 0; i < global.size(); ++i)
    global[i] = static_cast<float>(i);
  for (int64_t d = 0; d < 2; ++d)
    for (int64_t m = 0; m < 2; ++m) {
      comm::MeshInfo ms = mesh({"dp", "tp"}, {2, 2}, {d, 1});
      EXPECT_EQ(executor::inputRowBytes(t, ms), 12);
      std::vector<float> out(6, -1);
      absl::Status s = executor::cutInputRows(t, ms, 8, 2, m, global.data(),
                                              global.size() * 4, out.data());
      ASSERT_TRUE(s.ok()) << s;
      int64_t row0 = 4 * m + 2 * d;
      for (int64_t i = 0; i < 6; ++i)
        EXPECT_EQ(out[i], global[row0 * 3 + i]) << "d " << d << " m " << m;
    }
  // A buffer of the wrong size is refused.
  std::vector<float> out(6);
  absl::Status s = executor::cutInputRows(
      t, mesh({"dp"}, {2}, {0}), 8, 2, 0, global.data(), 20, out.data());
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("expected 96 bytes"), std::string::npos) << s;
}

// Token ids [seq, batch] (batch_dim 1) split over dp and cp: the file is
// [batch, whole sequence]; rank (d, c) takes its rows and its half of the
// positions, transposed into the local layout.
TEST(InferenceTest, CutRowsAndSequenceForContextParallelRanks) {
  plan::TensorDecl t;
  t.set_kind(plan::TensorDecl::INPUT);
  t.set_input_name("tokens");
  t.set_dtype(plan::I64);
  t.add_shape(3); // local sequence (global 6)
  t.add_shape(2); // local rows
  t.set_batch_dim(1);
  t.set_seq_dim(0);
  // Global batch 8, one microbatch, dp=4 -> 2 rows each.
  std::vector<int64_t> global(8 * 6);
  for (int64_t r = 0; r < 8; ++r)
    for (int64_t p = 0; p < 6; ++p)
      global[r * 6 + p] = 100 * r + p;
  for (int64_t d = 0; d < 4; ++d)
    for (int64_t c = 0; c < 2; ++c) {
      comm::MeshInfo ms = mesh({"dp", "cp"}, {4, 2}, {d, c});
      EXPECT_EQ(executor::inputRowBytes(t, ms), 48);
      std::vector<int64_t> out(6, -1);
      absl::Status s = executor::cutInputRows(t, ms, 8, 1, 0, global.data(),
                                              global.size() * 8, out.data());
      ASSERT_TRUE(s.ok()) << s;
      for (int64_t p = 0; p < 3; ++p)
        for (int64_t r = 0; r < 2; ++r)
          EXPECT_EQ(out[p * 2 + r], 100 * (2 * d + r) + 3 * c + p)
              << "d " << d << " c " << c;
    }
}

//===----------------------------------------------------------------------===//
// Errors of --input files.

TEST(InferenceErrorTest, UnknownInputListsThePlansInputs) {
  std::vector<float> data(48);
  executor::ExecutorOptions options;
  options.inputFiles["image"] = writeFile("image.bin", data.data(), 192);
  LocalRun run = start(test::buildMlpPlan({}), options);
  ASSERT_FALSE(run.status.ok());
  EXPECT_NE(run.status.message().find(
                "the plan has no input 'image'; its inputs are: pixels, labels"),
            std::string::npos)
      << run.status;
}

TEST(InferenceErrorTest, FileSizeMustMatchTheGlobalBatch) {
  std::vector<float> data(47);
  executor::ExecutorOptions options;
  options.inputFiles["pixels"] = writeFile("short.bin", data.data(), 188);
  LocalRun run = start(test::buildInferencePlan({}), options);
  ASSERT_FALSE(run.status.ok());
  // Global batch 8 x 6 F32 values = 192 bytes.
  EXPECT_NE(run.status.message().find("expected 192 bytes"), std::string::npos)
      << run.status;
  EXPECT_NE(run.status.message().find("the file has 188 bytes"),
            std::string::npos)
      << run.status;
  EXPECT_NE(run.status.message().find("F32 [8, 6]"), std::string::npos)
      << run.status;
}

TEST(InferenceErrorTest, MissingFileIsNamed) {
  executor::ExecutorOptions options;
  options.inputFiles["pixels"] = "/nonexistent/pixels.bin";
  LocalRun run = start(test::buildInferencePlan({}), options);
  ASSERT_FALSE(run.status.ok());
  EXPECT_NE(run.status.message().find("cannot open /nonexistent/pixels.bin"),
            std::string::npos)
      << run.status;
}

TEST(InferenceErrorTest, OutputNeedsASlotPerMicrobatch) {
  test::MlpPlanOptions o;
  o.microbatches = 2;
  plan::Plan p = test::buildInferencePlan(o);
  p.mutable_programs(0)->mutable_tensors(test::kInferY)->set_slots(1);
  LocalRun run = start(p);
  ASSERT_FALSE(run.status.ok());
  EXPECT_NE(run.status.message().find("needs a slot per microbatch (2)"),
            std::string::npos)
      << run.status;
}

} // namespace
