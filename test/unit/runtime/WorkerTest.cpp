//===- WorkerTest.cpp - cleave-worker under mpirun, through the launcher --===//
//
// Multi-rank runs of the MLP plan against one-rank runs (data and tensor
// parallel give the same losses and parameters), and faults: a killed
// rank, a hanging rank (the watchdog), a rank count that does not match.
//
//===----------------------------------------------------------------------===//

#include "MlpPlan.h"

#include "cleave/runtime/launcher/Launch.h"
#include "cleave/runtime/plan/PlanIO.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

using namespace cleave;
namespace fs = std::filesystem;

namespace {

bool mpirunOnPath() {
  const char *path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':'))
    if (!dir.empty() && access((dir + "/mpirun").c_str(), X_OK) == 0)
      return true;
  return false;
}

class WorkerTest : public ::testing::Test {
protected:
  void SetUp() override {
    if (!mpirunOnPath())
      GTEST_SKIP() << "mpirun is not on PATH";
    dir_ = fs::temp_directory_path() /
           ("cleave-worker-test-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty())
      fs::remove_all(dir_);
  }

  std::string writePlan(const std::string &name,
                        const test::MlpPlanOptions &options,
                        bool pipeline = false) {
    std::string path = (dir_ / (name + ".cleave")).string();
    absl::Status s = plan::writePlanFile(
        path, pipeline ? test::buildMlpPipelinePlan(options)
                       : test::buildMlpPlan(options));
    EXPECT_TRUE(plan::validatePlan(pipeline ? test::buildMlpPipelinePlan(options)
                                            : test::buildMlpPlan(options))
                    .ok());
    EXPECT_TRUE(s.ok()) << s;
    return path;
  }

  std::string writeInferencePlan(const std::string &name,
                                 const test::MlpPlanOptions &options) {
    std::string path = (dir_ / (name + ".cleave")).string();
    plan::Plan p = test::buildInferencePlan(options);
    EXPECT_TRUE(plan::validatePlan(p).ok());
    absl::Status s = plan::writePlanFile(path, p);
    EXPECT_TRUE(s.ok()) << s;
    return path;
  }

  std::string writeBytes(const std::string &name, const void *data,
                         size_t bytes) {
    std::string path = (dir_ / name).string();
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(static_cast<const char *>(data), bytes);
    return path;
  }

  struct Outcome {
    int exitStatus = -1;
    bool timedOut = false;
    double seconds = 0;
    std::string output;
  };

  Outcome run(int ranks, std::vector<std::string> args,
              double timeout = 120) {
    launcher::LaunchOptions options;
    options.worker = CLEAVE_WORKER;
    options.ranks = ranks;
    options.workerArgs = std::move(args);
    options.timeoutSeconds = timeout;
    Outcome outcome;
    options.onLine = [&](const std::string &line) {
      outcome.output += line + "\n";
    };
    auto start = std::chrono::steady_clock::now();
    auto result = launcher::launch(options);
    outcome.seconds = std::chrono::duration<double>(
                          std::chrono::steady_clock::now() - start)
                          .count();
    EXPECT_TRUE(result.ok()) << result.status();
    if (result.ok()) {
      outcome.exitStatus = result->exitStatus;
      outcome.timedOut = result->timedOut;
    }
    return outcome;
  }

  std::vector<float> readFloats(const std::string &dump,
                                const std::string &file) {
    std::ifstream in(dir_ / dump / file, std::ios::binary | std::ios::ate);
    EXPECT_TRUE(in) << file;
    std::vector<float> values(static_cast<size_t>(in.tellg()) / 4);
    in.seekg(0);
    in.read(reinterpret_cast<char *>(values.data()), values.size() * 4);
    return values;
  }

  std::vector<double> readLosses(const std::string &dump) {
    std::ifstream in(dir_ / dump / "loss.txt");
    std::vector<double> losses;
    double loss;
    while (in >> loss)
      losses.push_back(loss);
    return losses;
  }

  std::string dumpDir(const std::string &name) {
    return (dir_ / name).string();
  }

  fs::path dir_;
};

TEST_F(WorkerTest, LaunchCommand) {
  launcher::LaunchOptions options;
  options.worker = "/bin/cleave-worker";
  options.ranks = 4;
  options.workerArgs = {"model.cleave", "--steps", "3"};
  std::vector<std::string> argv = launcher::launchCommand(options);
  std::string text;
  for (const std::string &a : argv)
    text += a + " ";
  EXPECT_EQ(text.rfind("mpirun -n 4 ", 0), 0u) << text;
  EXPECT_NE(text.find("--oversubscribe"), std::string::npos);
  EXPECT_EQ(text.find("--allow-run-as-root") != std::string::npos,
            geteuid() == 0);
  EXPECT_NE(text.find("/bin/cleave-worker model.cleave --steps 3"),
            std::string::npos);
  // Settings of the ranks' environment go before the worker (--check's
  // reference takes the plan's ranks' thread count so).
  options.environment = {"OMP_NUM_THREADS=1"};
  text.clear();
  for (const std::string &a : launcher::launchCommand(options))
    text += a + " ";
  EXPECT_NE(text.find(" -x OMP_NUM_THREADS=1 /bin/cleave-worker model.cleave"),
            std::string::npos)
      << text;
}

TEST_F(WorkerTest, OneRankPrintsSteps) {
  std::string planPath = writePlan("mlp", {});
  Outcome o = run(1, {planPath, "--steps", "3"});
  ASSERT_EQ(o.exitStatus, 0) << o.output;
  EXPECT_NE(o.output.find("step 3  loss "), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("tokens/s"), std::string::npos);
  EXPECT_NE(o.output.find("TFLOP/s"), std::string::npos);
}

// dp=2 x tp=2 with two microbatches: the same losses and parameters as one
// rank, W1 split by columns and W2 by rows.
TEST_F(WorkerTest, DataAndTensorParallelMatchOneRank) {
  test::MlpPlanOptions single;
  test::MlpPlanOptions sharded;
  sharded.dp = 2;
  sharded.tp = 2;
  sharded.microbatches = 2;
  Outcome a = run(1, {writePlan("single", single), "--steps", "4",
                      "--dump-params", dumpDir("single")});
  ASSERT_EQ(a.exitStatus, 0) << a.output;
  std::string trace = (dir_ / "trace.json").string();
  Outcome b = run(4, {writePlan("sharded", sharded), "--steps", "4",
                      "--dump-params", dumpDir("sharded"), "--trace", trace});
  ASSERT_EQ(b.exitStatus, 0) << b.output;

  std::vector<double> la = readLosses("single"), lb = readLosses("sharded");
  ASSERT_EQ(la.size(), 4u);
  ASSERT_EQ(lb.size(), 4u);
  for (size_t i = 0; i < la.size(); ++i)
    EXPECT_NEAR(la[i], lb[i], 1e-5) << "step " << i + 1;

  std::vector<float> w1 = readFloats("single", "w1.rank0.bin");
  std::vector<float> w2 = readFloats("single", "w2.rank0.bin");
  int64_t in = single.in, hidden = single.hidden, classes = single.classes;
  for (int rank = 0; rank < 4; ++rank) {
    int64_t t = rank % 2; // tp coordinate
    std::vector<float> p1 =
        readFloats("sharded", "w1.rank" + std::to_string(rank) + ".bin");
    std::vector<float> p2 =
        readFloats("sharded", "w2.rank" + std::to_string(rank) + ".bin");
    ASSERT_EQ(p1.size(), static_cast<size_t>(in * hidden / 2));
    ASSERT_EQ(p2.size(), static_cast<size_t>(hidden / 2 * classes));
    for (int64_t r = 0; r < in; ++r)
      for (int64_t c = 0; c < hidden / 2; ++c)
        EXPECT_NEAR(p1[r * hidden / 2 + c], w1[r * hidden + t * hidden / 2 + c],
                    1e-5);
    for (int64_t i = 0; i < hidden / 2 * classes; ++i)
      EXPECT_NEAR(p2[i], w2[t * hidden / 2 * classes + i], 1e-5);
  }

  std::ifstream traceFile(trace);
  std::stringstream json;
  json << traceFile.rdbuf();
  EXPECT_EQ(json.str().rfind("{\"displayTimeUnit\": \"ms\"", 0), 0u);
  EXPECT_NE(json.str().find("\"name\": \"rank 3\""), std::string::npos);
  EXPECT_NE(json.str().find("\"name\": \"comm.all_reduce\""),
            std::string::npos);
  EXPECT_FALSE(fs::exists(trace + ".rank1"));
}

// Two pipeline stages exchanging activations and their gradients: the
// loss (held by rank 1, printed by rank 0) and the parameters (W1 on rank 0,
// W2 on rank 1) match one rank.
TEST_F(WorkerTest, PipelineMatchesOneRank) {
  test::MlpPlanOptions options;
  options.microbatches = 2;
  Outcome a = run(1, {writePlan("single", options), "--steps", "3",
                      "--dump-params", dumpDir("single")});
  ASSERT_EQ(a.exitStatus, 0) << a.output;
  Outcome b = run(2, {writePlan("pipeline", options, /*pipeline=*/true),
                      "--steps", "3", "--dump-params", dumpDir("pipeline")});
  ASSERT_EQ(b.exitStatus, 0) << b.output;
  EXPECT_NE(b.output.find("step 3  loss "), std::string::npos) << b.output;
  std::vector<double> la = readLosses("single"), lb = readLosses("pipeline");
  ASSERT_EQ(lb.size(), 3u);
  for (size_t i = 0; i < la.size(); ++i)
    EXPECT_NEAR(la[i], lb[i], 1e-5) << "step " << i + 1;
  std::vector<float> w1 = readFloats("single", "w1.rank0.bin");
  std::vector<float> w2 = readFloats("single", "w2.rank0.bin");
  std::vector<float> p1 = readFloats("pipeline", "w1.rank0.bin");
  std::vector<float> p2 = readFloats("pipeline", "w2.rank1.bin");
  ASSERT_EQ(p1.size(), w1.size());
  ASSERT_EQ(p2.size(), w2.size());
  for (size_t i = 0; i < w1.size(); ++i)
    EXPECT_NEAR(p1[i], w1[i], 1e-5);
  for (size_t i = 0; i < w2.size(); ++i)
    EXPECT_NEAR(p2[i], w2[i], 1e-5);
}

// 1F1B with messages above Open MPI's eager limit: stage 0 sends the next
// activation while stage 1 sends the last gradient. Blocking sends would
// wait for each other's receive forever; `buffered` ones complete at the
// end of the step.
TEST_F(WorkerTest, OneFOneBWithLargeMessages) {
  test::MlpPlanOptions options;
  options.microbatches = 4;
  options.hidden = 1024;
  options.lr = 0.05;
  options.oneFOneB = true;
  Outcome a = run(1, {writePlan("single", options), "--steps", "2",
                      "--dump-params", dumpDir("single")});
  ASSERT_EQ(a.exitStatus, 0) << a.output;
  Outcome b = run(2, {writePlan("pipeline", options, /*pipeline=*/true),
                      "--steps", "2", "--timeout", "20", "--dump-params",
                      dumpDir("pipeline")},
                  /*timeout=*/60);
  ASSERT_EQ(b.exitStatus, 0) << b.output;
  std::vector<double> la = readLosses("single"), lb = readLosses("pipeline");
  ASSERT_EQ(lb.size(), 2u);
  for (size_t i = 0; i < la.size(); ++i)
    EXPECT_NEAR(la[i], lb[i], 1e-4) << "step " << i + 1;
}

TEST_F(WorkerTest, KilledRankEndsTheJob) {
  test::MlpPlanOptions options;
  options.dp = 2;
  Outcome o = run(2,
                  {writePlan("mlp", options), "--steps", "50", "--fault",
                   "kill", "--fault-rank", "1", "--fault-step", "2"},
                  /*timeout=*/90);
  EXPECT_FALSE(o.timedOut) << o.output;
  EXPECT_NE(o.exitStatus, 0) << o.output;
  EXPECT_LT(o.seconds, 60) << o.output;
  EXPECT_NE(o.output.find("process rank 1"), std::string::npos) << o.output;
}

TEST_F(WorkerTest, HangingPeerTripsTheWatchdog) {
  test::MlpPlanOptions options;
  options.dp = 2;
  Outcome o = run(2,
                  {writePlan("mlp", options), "--steps", "3", "--timeout", "3",
                   "--fault", "hang", "--fault-rank", "1", "--fault-step",
                   "2"},
                  /*timeout=*/90);
  EXPECT_FALSE(o.timedOut) << o.output;
  EXPECT_NE(o.exitStatus, 0) << o.output;
  EXPECT_LT(o.seconds, 60) << o.output;
  EXPECT_NE(o.output.find("rank 0: timed out on program 0 segment 3 "
                          "instruction 2 (comm.wait"),
            std::string::npos)
      << o.output;
}

TEST_F(WorkerTest, RankCountMustMatchThePlan) {
  test::MlpPlanOptions options;
  options.dp = 2;
  Outcome o = run(1, {writePlan("mlp", options)});
  EXPECT_EQ(o.exitStatus, 1) << o.output;
  EXPECT_NE(o.output.find("the plan has 2 ranks but mpirun started 1"),
            std::string::npos)
      << o.output;
}

TEST_F(WorkerTest, ListShowsEachRanksProgram) {
  test::MlpPlanOptions options;
  Outcome o = run(2, {writePlan("pipeline", options, /*pipeline=*/true),
                      "--list"});
  ASSERT_EQ(o.exitStatus, 0) << o.output;
  size_t rank0 = o.output.find("rank 0: program 0 (stage0)");
  size_t rank1 = o.output.find("rank 1: program 1 (stage1)");
  ASSERT_NE(rank0, std::string::npos) << o.output;
  ASSERT_NE(rank1, std::string::npos) << o.output;
  EXPECT_LT(rank0, rank1);
  EXPECT_NE(o.output.find("schedule: forward:0 backward:0 optimizer:-1"),
            std::string::npos)
      << o.output;
  EXPECT_NE(o.output.find("2 comm.send (3) -> () axis={s: \"pp\"} buffered={b: true}"),
            std::string::npos)
      << o.output;
}

TEST_F(WorkerTest, BadPlanIsReported) {
  std::string path = (dir_ / "bad.cleave").string();
  std::ofstream(path) << "not a plan";
  Outcome o = run(1, {path});
  EXPECT_NE(o.exitStatus, 0);
  EXPECT_NE(o.output.find("bad.cleave"), std::string::npos) << o.output;
}

//===----------------------------------------------------------------------===//
// Inference plans, --input and --dump-outputs.

// A dp=2 inference plan fed the same global batch as one rank: rank d's
// output of microbatch m holds rows [4m + 2d, +2) of the one-rank output
// of microbatch m, which is relu(X W) of the file's rows [4m, +4).
TEST_F(WorkerTest, InferenceInputsAndOutputsAcrossDataParallelRanks) {
  test::MlpPlanOptions single, sharded;
  single.microbatches = sharded.microbatches = 2;
  sharded.dp = 2;
  int64_t B = single.batch, in = single.in, hidden = single.hidden;
  std::vector<float> global(B * in);
  for (size_t i = 0; i < global.size(); ++i)
    global[i] = 0.01f * static_cast<float>((i * 37) % 101) - 0.5f;
  std::string input =
      "pixels=" + writeBytes("pixels.bin", global.data(), global.size() * 4);
  Outcome a = run(1, {writeInferencePlan("single", single), "--steps", "2",
                      "--input", input, "--dump-outputs", dumpDir("single"),
                      "--dump-params", dumpDir("params")});
  ASSERT_EQ(a.exitStatus, 0) << a.output;
  EXPECT_NE(a.output.find("step 2  time "), std::string::npos) << a.output;
  EXPECT_NE(a.output.find("samples/s"), std::string::npos) << a.output;
  EXPECT_EQ(a.output.find("loss"), std::string::npos) << a.output;
  Outcome b = run(2, {writeInferencePlan("sharded", sharded), "--input", input,
                      "--dump-outputs", dumpDir("sharded")});
  ASSERT_EQ(b.exitStatus, 0) << b.output;

  // Only output files: rank 0 writes nothing else.
  int files = 0;
  for (const auto &entry : fs::directory_iterator(dir_ / "sharded")) {
    (void)entry;
    ++files;
  }
  EXPECT_EQ(files, 4);
  std::vector<float> w = readFloats("params", "w.rank0.bin");
  ASSERT_EQ(w.size(), static_cast<size_t>(in * hidden));
  for (int64_t m = 0; m < 2; ++m) {
    std::vector<float> whole =
        readFloats("single", "output0.mb" + std::to_string(m) + ".rank0.bin");
    ASSERT_EQ(whole.size(), static_cast<size_t>(4 * hidden));
    for (int64_t r = 0; r < 4; ++r)
      for (int64_t c = 0; c < hidden; ++c) {
        float sum = 0;
        for (int64_t k = 0; k < in; ++k)
          sum += global[(4 * m + r) * in + k] * w[k * hidden + c];
        EXPECT_NEAR(whole[r * hidden + c], std::max(sum, 0.0f), 1e-5);
      }
    for (int d = 0; d < 2; ++d) {
      std::vector<float> part =
          readFloats("sharded", "output0.mb" + std::to_string(m) + ".rank" +
                                    std::to_string(d) + ".bin");
      ASSERT_EQ(part.size(), static_cast<size_t>(2 * hidden));
      for (int64_t i = 0; i < 2 * hidden; ++i)
        EXPECT_NEAR(part[i], whole[2 * d * hidden + i], 1e-6)
            << "mb " << m << " rank " << d;
    }
  }
}

TEST_F(WorkerTest, InputFlagErrors) {
  std::string planPath = writeInferencePlan("plan", {});
  Outcome o = run(1, {planPath, "--input", "pixels.bin"});
  EXPECT_EQ(o.exitStatus, 2) << o.output;
  EXPECT_NE(o.output.find("--input needs NAME=FILE"), std::string::npos)
      << o.output;

  // On two ranks: reported once, by rank 0.
  test::MlpPlanOptions dp2;
  dp2.dp = 2;
  std::vector<float> data(8 * 6);
  std::string file = writeBytes("x.bin", data.data(), data.size() * 4);
  o = run(2, {writeInferencePlan("dp2", dp2), "--input", "image=" + file});
  EXPECT_EQ(o.exitStatus, 1) << o.output;
  std::string message =
      "the plan has no input 'image'; its inputs are: pixels";
  size_t at = o.output.find(message);
  ASSERT_NE(at, std::string::npos) << o.output;
  EXPECT_EQ(o.output.find(message, at + 1), std::string::npos) << o.output;

  std::string shortFile = writeBytes("short.bin", data.data(), 100);
  o = run(1, {planPath, "--input", "pixels=" + shortFile});
  EXPECT_EQ(o.exitStatus, 1) << o.output;
  EXPECT_NE(o.output.find("expected 192 bytes"), std::string::npos)
      << o.output;
  EXPECT_NE(o.output.find("the file has 100 bytes"), std::string::npos)
      << o.output;

  // --dump-outputs of a training plan: it has no outputs.
  o = run(1, {writePlan("mlp", {}), "--dump-outputs", dumpDir("out")});
  EXPECT_EQ(o.exitStatus, 1) << o.output;
  EXPECT_NE(o.output.find("the plan has no output tensors"), std::string::npos)
      << o.output;
}

// Two pipeline stages of inference: only the last stage (rank 1) holds and
// writes the outputs, relu(X W1) W2 of the input file's rows.
TEST_F(WorkerTest, PipelineInferenceOutputsOnTheLastStage) {
  test::MlpPlanOptions o;
  o.microbatches = 2;
  int64_t B = o.batch, in = o.in, h = o.hidden, c = o.classes;
  std::vector<float> global(B * in);
  for (size_t i = 0; i < global.size(); ++i)
    global[i] = 0.02f * static_cast<float>((i * 13) % 71) - 0.7f;
  std::string planPath = (dir_ / "pipeline.cleave").string();
  plan::Plan p = test::buildInferencePipelinePlan(o);
  ASSERT_TRUE(plan::validatePlan(p).ok()) << plan::validatePlan(p);
  ASSERT_TRUE(plan::writePlanFile(planPath, p).ok());
  Outcome r = run(2, {planPath, "--steps", "2", "--input",
                      "pixels=" + writeBytes("x.bin", global.data(),
                                             global.size() * 4),
                      "--dump-outputs", dumpDir("out"), "--dump-params",
                      dumpDir("params")});
  ASSERT_EQ(r.exitStatus, 0) << r.output;
  EXPECT_NE(r.output.find("step 2  time "), std::string::npos) << r.output;
  std::vector<float> w1 = readFloats("params", "w1.rank0.bin");
  std::vector<float> w2 = readFloats("params", "w2.rank1.bin");
  int files = 0;
  for (const auto &entry : fs::directory_iterator(dir_ / "out")) {
    EXPECT_NE(entry.path().filename().string().find(".rank1.bin"),
              std::string::npos)
        << entry.path();
    ++files;
  }
  EXPECT_EQ(files, 2);
  int64_t rows = B / 2;
  for (int64_t m = 0; m < 2; ++m) {
    std::vector<float> y =
        readFloats("out", "output0.mb" + std::to_string(m) + ".rank1.bin");
    ASSERT_EQ(y.size(), static_cast<size_t>(rows * c));
    for (int64_t r0 = 0; r0 < rows; ++r0) {
      std::vector<float> act(h, 0);
      for (int64_t j = 0; j < h; ++j) {
        for (int64_t k = 0; k < in; ++k)
          act[j] += global[(m * rows + r0) * in + k] * w1[k * h + j];
        act[j] = std::max(act[j], 0.0f);
      }
      for (int64_t j = 0; j < c; ++j) {
        float sum = 0;
        for (int64_t k = 0; k < h; ++k)
          sum += act[k] * w2[k * c + j];
        EXPECT_NEAR(y[r0 * c + j], sum, 1e-4) << "mb " << m << " row " << r0;
      }
    }
  }
}

} // namespace
