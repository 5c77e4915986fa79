//===- ExecutorTest.cpp - The executor on hand-built plans, one rank ------===//

#include "MlpPlan.h"

#include "cleave/runtime/comm/Communicator.h"
#include "cleave/runtime/executor/Executor.h"
#include "cleave/runtime/kernels/Elementwise.h"
#include "cleave/runtime/kernels/Loss.h"
#include "cleave/runtime/kernels/Matmul.h"
#include "cleave/runtime/plan/PlanIO.h"

#include <gtest/gtest.h>

#include <cmath>

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

struct LocalRun {
  std::unique_ptr<comm::Communicator> comm;
  std::unique_ptr<executor::Executor> executor;
};

LocalRun start(const plan::Plan &p, executor::ExecutorOptions options = {}) {
  LocalRun run;
  run.comm = comm::createLocalCommunicator(meshOf(p, 0));
  auto ex = executor::Executor::create(p, 0, *run.comm, options);
  EXPECT_TRUE(ex.ok()) << ex.status();
  if (ex.ok())
    run.executor = *std::move(ex);
  return run;
}

double step(executor::Executor &ex, int64_t n) {
  auto result = ex.runStep(n);
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? result->loss : NAN;
}

TEST(ExecutorTest, PlanIsValid) {
  plan::Plan p = test::buildMlpPlan({});
  EXPECT_TRUE(plan::validatePlan(p).ok()) << plan::validatePlan(p);
  // And survives the file format.
  auto parsed = plan::parsePlan(plan::serializePlan(p));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
}

TEST(ExecutorTest, SgdLossDecreases) {
  LocalRun run = start(test::buildMlpPlan({}));
  ASSERT_TRUE(run.executor);
  // Synthetic data differ per step, so compare averages of a few steps.
  double first = 0, last = 0;
  for (int s = 1; s <= 60; ++s) {
    double loss = step(*run.executor, s);
    ASSERT_TRUE(std::isfinite(loss));
    if (s <= 5)
      first += loss / 5;
    if (s > 55)
      last += loss / 5;
  }
  EXPECT_LT(last, first * 0.9) << "first " << first << " last " << last;
}

TEST(ExecutorTest, AdamwLossDecreases) {
  test::MlpPlanOptions o;
  o.optimizer = "adamw";
  o.lr = 0.02;
  LocalRun run = start(test::buildMlpPlan(o));
  ASSERT_TRUE(run.executor);
  double first = 0, last = 0;
  for (int s = 1; s <= 60; ++s) {
    double loss = step(*run.executor, s);
    if (s <= 5)
      first += loss / 5;
    if (s > 55)
      last += loss / 5;
  }
  EXPECT_LT(last, first * 0.9) << "first " << first << " last " << last;
}

// The loss and the SGD update of one step equal the kernels called directly
// on the same parameters and batch.
TEST(ExecutorTest, MatchesDirectKernels) {
  test::MlpPlanOptions o;
  plan::Plan p = test::buildMlpPlan(o);
  LocalRun run = start(p);
  ASSERT_TRUE(run.executor);
  executor::Executor &ex = *run.executor;
  std::vector<float> w1 = ex.tensorValues(test::kW1);
  std::vector<float> w2 = ex.tensorValues(test::kW2);
  double loss = step(ex, 1);
  std::vector<float> x = ex.tensorValues(test::kX);
  executor::TensorView labelsView = ex.tensor(test::kLabels);
  const int64_t *labelData = static_cast<const int64_t *>(labelsView.data);
  k::IndexTensor labels({o.batch}, std::vector<int64_t>(
                                       labelData, labelData + o.batch));
  for (int64_t l : labels.values()) {
    EXPECT_GE(l, 0);
    EXPECT_LT(l, o.classes);
  }

  k::Tensor X({o.batch, o.in}, x), W1({o.in, o.hidden}, w1),
      W2({o.hidden, o.classes}, w2);
  k::Tensor pre({o.batch, o.hidden}), act({o.batch, o.hidden}),
      logits({o.batch, o.classes}), l(k::Shape{});
  k::matmul(X, W1, false, false, pre);
  k::unary(k::UnaryOp::Relu, pre, act);
  k::matmul(act, W2, false, false, logits);
  k::crossEntropy(logits, labels, -100, l);
  EXPECT_NEAR(loss, l[0], 1e-6);

  k::Tensor one(k::Shape{}, std::vector<float>{1.0f}), dlogits({o.batch, o.classes}),
      dw2({o.hidden, o.classes}), dact({o.batch, o.hidden}),
      dpre({o.batch, o.hidden}), dw1({o.in, o.hidden});
  k::crossEntropyBackward(logits, labels, -100, one, dlogits);
  k::matmul(act, dlogits, true, false, dw2);
  k::matmul(dlogits, W2, false, true, dact);
  k::unaryBackward(k::UnaryOp::Relu, pre, dact, dpre);
  k::matmul(X, dpre, true, false, dw1);
  std::vector<float> newW1 = ex.tensorValues(test::kW1);
  std::vector<float> newW2 = ex.tensorValues(test::kW2);
  for (size_t i = 0; i < w1.size(); ++i)
    EXPECT_NEAR(newW1[i], w1[i] - o.lr * dw1[i], 1e-6) << i;
  for (size_t i = 0; i < w2.size(); ++i)
    EXPECT_NEAR(newW2[i], w2[i] - o.lr * dw2[i], 1e-6) << i;
}

// Two microbatches of 4 rows accumulate the gradient of one batch of 8.
TEST(ExecutorTest, MicrobatchesMatchOneBatch) {
  test::MlpPlanOptions one, two;
  two.microbatches = 2;
  LocalRun a = start(test::buildMlpPlan(one)), b = start(test::buildMlpPlan(two));
  ASSERT_TRUE(a.executor && b.executor);
  for (int s = 1; s <= 3; ++s)
    EXPECT_NEAR(step(*a.executor, s), step(*b.executor, s), 1e-5);
  std::vector<float> wa = a.executor->tensorValues(test::kW1);
  std::vector<float> wb = b.executor->tensorValues(test::kW1);
  for (size_t i = 0; i < wa.size(); ++i)
    EXPECT_NEAR(wa[i], wb[i], 1e-5);
}

TEST(ExecutorTest, TraceRecordsSegmentsAndInstructions) {
  executor::ExecutorOptions options;
  options.trace = true;
  LocalRun run = start(test::buildMlpPlan({}), options);
  ASSERT_TRUE(run.executor);
  step(*run.executor, 1);
  const auto &events = run.executor->traceEvents();
  int segments = 0, comm = 0;
  for (const executor::TraceEvent &e : events) {
    segments += e.thread == 0;
    comm += e.thread == 2;
    EXPECT_GE(e.durationUs, 0);
  }
  EXPECT_EQ(segments, 4);
  EXPECT_EQ(comm, 4); // two async all-reduces and their waits
  std::ostringstream os;
  bool first = true;
  executor::writeChromeTraceHeader(os);
  executor::writeChromeTraceRankNames(0, os, first);
  executor::writeChromeTraceEvents(events, 0, events.front().startUs, os,
                                   first);
  executor::writeChromeTraceFooter(os);
  EXPECT_NE(os.str().find("\"name\": \"graph.matmul\""), std::string::npos);
  EXPECT_NE(os.str().find("\"ph\": \"X\""), std::string::npos);
}

// A plan may give every integer input the model's vocab; ids are kept
// within what the cross entropy (or a gather table) they reach accepts.
TEST(ExecutorTest, SyntheticIdsStayWithinTheirTables) {
  plan::Plan p = test::buildMlpPlan({});
  p.mutable_programs(0)->mutable_tensors(test::kLabels)->set_vocab(1000);
  LocalRun run = start(p);
  ASSERT_TRUE(run.executor);
  for (int s = 1; s <= 3; ++s)
    EXPECT_TRUE(std::isfinite(step(*run.executor, s)));
  executor::TensorView labels = run.executor->tensor(test::kLabels);
  for (int64_t i = 0; i < labels.numElements(); ++i)
    EXPECT_LT(static_cast<const int64_t *>(labels.data)[i], 5);
}

//===----------------------------------------------------------------------===//
// Errors name the instruction.

TEST(ExecutorErrorTest, UnknownOpNamesInstruction) {
  plan::Plan p = test::buildMlpPlan({});
  plan::Instruction *inst =
      p.mutable_programs(0)->mutable_segments(1)->mutable_instructions(1);
  inst->set_op("graph.bogus");
  auto comm = comm::createLocalCommunicator(meshOf(p, 0));
  auto ex = executor::Executor::create(p, 0, *comm);
  ASSERT_FALSE(ex.ok());
  std::string message(ex.status().message());
  EXPECT_NE(message.find("rank 0"), std::string::npos) << message;
  EXPECT_NE(message.find("segment 1 'forward', instruction 1 (graph.bogus)"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("loc(\"mlp.relu\")"), std::string::npos) << message;
}

TEST(ExecutorErrorTest, ShapeMismatchNamesInstruction) {
  plan::Plan p = test::buildMlpPlan({});
  // The second matmul writes the logits; give it the transposed weight.
  plan::Instruction *inst =
      p.mutable_programs(0)->mutable_segments(1)->mutable_instructions(2);
  (*inst->mutable_attrs())["transpose_rhs"].set_b(true);
  LocalRun run = start(p);
  ASSERT_TRUE(run.executor);
  auto result = run.executor->runStep(1);
  ASSERT_FALSE(result.ok());
  std::string message(result.status().message());
  EXPECT_NE(message.find("instruction 2 (graph.matmul) at loc(\"mlp.matmul\")"),
            std::string::npos)
      << message;
}

TEST(ExecutorErrorTest, MissingAttributeNamesIt) {
  plan::Plan p = test::buildMlpPlan({});
  plan::Instruction *inst =
      p.mutable_programs(0)->mutable_segments(2)->mutable_instructions(4);
  inst->mutable_attrs()->erase("kind");
  LocalRun run = start(p);
  ASSERT_TRUE(run.executor);
  auto result = run.executor->runStep(1);
  ASSERT_FALSE(result.ok());
  std::string message(result.status().message());
  EXPECT_NE(message.find("graph.activation_grad"), std::string::npos);
  EXPECT_NE(message.find("'kind' is missing"), std::string::npos) << message;
}

TEST(ExecutorErrorTest, UnwaitedHandleIsAnError) {
  plan::Plan p = test::buildMlpPlan({});
  plan::Segment *opt = p.mutable_programs(0)->mutable_segments(3);
  opt->mutable_instructions()->DeleteSubrange(3, 1); // the second wait
  LocalRun run = start(p);
  ASSERT_TRUE(run.executor);
  auto result = run.executor->runStep(1);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("never waited"),
            std::string::npos)
      << result.status();
}

// A buffered send's tensor needs slots: the runtime waits for a slot's
// previous send before reusing it, but a transient tensor is rewritten
// within every run.
TEST(ExecutorErrorTest, BufferedSendNeedsSlots) {
  test::MlpPlanOptions o;
  o.microbatches = 2;
  plan::Plan p = test::buildMlpPlan(o);
  plan::Instruction *send =
      p.mutable_programs(0)->mutable_segments(1)->add_instructions();
  send->set_op("comm.send");
  send->add_inputs(test::kAct);
  (*send->mutable_attrs())["axis"].set_s("pp");
  (*send->mutable_attrs())["offset"].set_i(1);
  (*send->mutable_attrs())["buffered"].set_b(true);
  p.mutable_programs(0)->mutable_tensors(test::kAct)->set_kind(
      plan::TensorDecl::TRANSIENT);
  p.mutable_programs(0)->mutable_tensors(test::kAct)->set_slots(1);
  auto comm = comm::createLocalCommunicator(meshOf(p, 0));
  auto ex = executor::Executor::create(p, 0, *comm);
  ASSERT_FALSE(ex.ok());
  EXPECT_NE(ex.status().message().find("it needs slots"),
            std::string::npos)
      << ex.status();
}

TEST(ExecutorErrorTest, TensorOutsideArena) {
  plan::Plan p = test::buildMlpPlan({});
  p.mutable_programs(0)->mutable_tensors(3)->set_offset(
      p.programs(0).arena_bytes());
  auto comm = comm::createLocalCommunicator(meshOf(p, 0));
  auto ex = executor::Executor::create(p, 0, *comm);
  ASSERT_FALSE(ex.ok());
  EXPECT_NE(ex.status().message().find("outside the arena"), std::string::npos)
      << ex.status();
}

TEST(ExecutorErrorTest, FusedAwayTensorOutsideAGroup) {
  // A tensor the plan leaves no memory for must be the dropped result of a
  // group this backend runs as one kernel; elsewhere the executor refuses
  // the plan rather than write into bytes that belong to others.
  plan::Plan p = test::buildMlpPlan({});
  const plan::Program &program = p.programs(0);
  int id = -1;
  for (const plan::TensorDecl &t : program.tensors())
    if (t.kind() == plan::TensorDecl::TRANSIENT && id < 0)
      id = t.id();
  ASSERT_GE(id, 0);
  p.mutable_programs(0)->mutable_tensors(id)->set_fused_away(true);
  auto comm = comm::createLocalCommunicator(meshOf(p, 0));
  auto ex = executor::Executor::create(p, 0, *comm);
  ASSERT_FALSE(ex.ok());
  EXPECT_NE(ex.status().message().find("is fused away in the plan, but the "
                                       "cpu backend does not run"),
            std::string::npos)
      << ex.status();
}

TEST(ExecutorErrorTest, GroupSizeMustMatchTheMesh) {
  plan::Plan p = test::buildMlpPlan({});
  plan::Instruction *inst =
      p.mutable_programs(0)->mutable_segments(3)->mutable_instructions(0);
  (*inst->mutable_attrs())["group_size"].set_i(2);
  LocalRun run = start(p);
  ASSERT_TRUE(run.executor);
  auto result = run.executor->runStep(1);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find(
                "instruction 0 (comm.all_reduce) at loc(\"mlp.all_reduce\"): "
                "group_size is 2 but the mesh group has 1 ranks"),
            std::string::npos)
      << result.status();
}

TEST(ExecutorTest, EveryEvaluatorOpHasAKernel) {
  for (const char *name :
       {"graph.add", "graph.sub", "graph.mul", "graph.div", "graph.pow",
        "graph.max", "graph.min", "graph.neg", "graph.exp", "graph.log",
        "graph.sqrt", "graph.rsqrt", "graph.relu", "graph.tanh", "graph.erf",
        "graph.sigmoid", "graph.silu", "graph.gelu", "graph.dropout",
        "graph.cast", "graph.where", "graph.compare", "graph.broadcast_to",
        "graph.matmul", "graph.softmax", "graph.layer_norm", "graph.rms_norm",
        "graph.batch_norm", "graph.rope", "graph.gather", "graph.reshape",
        "graph.transpose", "graph.slice", "graph.concat", "graph.split",
        "graph.reduce_sum", "graph.reduce_mean", "graph.reduce_max",
        "graph.conv2d", "graph.max_pool2d", "graph.avg_pool2d",
        "graph.global_avg_pool", "graph.cross_entropy", "graph.moe_gate",
        "graph.moe_dispatch", "graph.moe_combine", "graph.activation_grad",
        "graph.softmax_grad", "graph.layer_norm_grad", "graph.rms_norm_grad",
        "graph.batch_norm_grad", "graph.gather_grad", "graph.slice_grad",
        "graph.reduce_max_grad", "graph.conv2d_input_grad",
        "graph.conv2d_filter_grad", "graph.pool2d_grad",
        "graph.cross_entropy_grad", "graph.moe_gate_grad",
        "graph.moe_combine_grad", "graph.sgd_update", "graph.adamw_update",
        "comm.all_reduce", "comm.all_gather", "comm.reduce_scatter",
        "comm.all_to_all", "comm.broadcast", "comm.send", "comm.recv",
        "comm.wait", "runtime.zero", "runtime.accumulate", "runtime.copy",
        "runtime.scale"})
    EXPECT_NE(executor::findKernel(name), nullptr) << name;
}

} // namespace

namespace {

TEST(ExecutorErrorTest, LossScalingOutOfRange) {
  plan::Plan p = test::buildMlpPlan({});
  plan::LossScaling *ls = p.mutable_training()->mutable_loss_scaling();
  ls->set_mode(plan::LossScaling::DYNAMIC);
  ls->set_initial_scale(1024);
  ls->set_growth_factor(2);
  ls->set_backoff_factor(2); // must be at most 1
  ls->set_growth_interval(10);
  ls->set_min_scale(1);
  auto comm = comm::createLocalCommunicator(meshOf(p, 0));
  auto ex = executor::Executor::create(p, 0, *comm);
  ASSERT_FALSE(ex.ok());
  EXPECT_NE(ex.status().message().find("loss scaling has backoff_factor 2"),
            std::string::npos)
      << ex.status();
  ls->set_backoff_factor(0.5);
  ls->set_initial_scale(0);
  ex = executor::Executor::create(p, 0, *comm);
  ASSERT_FALSE(ex.ok());
  EXPECT_NE(ex.status().message().find("initial_scale 0"), std::string::npos)
      << ex.status();
}

TEST(ExecutorErrorTest, UnlessMustNameAScalar) {
  plan::Plan p = test::buildMlpPlan({});
  plan::Program &program = *p.mutable_programs(0);
  // A guard naming a tensor that is not an f32 scalar (the first, a
  // batch of inputs) is refused before any step runs.
  program.mutable_segments(0)->mutable_instructions(0)->set_unless(0);
  auto comm = comm::createLocalCommunicator(meshOf(p, 0));
  auto ex = executor::Executor::create(p, 0, *comm);
  ASSERT_FALSE(ex.ok());
  EXPECT_NE(ex.status().message().find("is not an f32 scalar tensor"),
            std::string::npos)
      << ex.status();
}

} // namespace
