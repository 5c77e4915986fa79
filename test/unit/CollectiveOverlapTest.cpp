//===- CollectiveOverlapTest.cpp - ZeRO's collectives beside compute ------===//
//
// overlapCollectives (CollectiveOverlap.h) on hand-built segments: which
// collectives become asynchronous, where each starts and is waited for,
// and that the window bounds what is in flight.
//
//===----------------------------------------------------------------------===//

#include "cleave/Lowering/CollectiveOverlap.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace cleave;
using namespace cleave::lowering;

namespace {

constexpr int64_t kMiB = 1 << 20;

struct Builder {
  plan::Program program;
  std::vector<plan::Instruction> segment;

  int tensor(plan::TensorDecl::Kind kind, int64_t bytes) {
    plan::TensorDecl *t = program.add_tensors();
    t->set_id(program.tensors_size() - 1);
    t->set_kind(kind);
    t->set_bytes(bytes);
    return t->id();
  }
  /// Collectives run over "dp" (ZeRO's) unless `axis` says otherwise.
  void inst(const std::string &op, std::vector<int> in, std::vector<int> out,
            const std::string &axis = "dp") {
    plan::Instruction i;
    i.set_op(op);
    if (op.compare(0, 5, "comm.") == 0)
      (*i.mutable_attrs())["axes"].mutable_strings()->add_values(axis);
    for (int id : in)
      i.add_inputs(id);
    for (int id : out)
      i.add_outputs(id);
    segment.push_back(i);
  }
};

/// "op:first input" per instruction, "wait:handle" for waits, and a "*"
/// after asynchronous starts.
std::vector<std::string> trace(const std::vector<plan::Instruction> &s) {
  std::vector<std::string> out;
  for (const plan::Instruction &i : s) {
    std::string op = i.op().substr(i.op().find('.') + 1);
    if (i.op() == "comm.wait")
      out.push_back("wait:" + std::to_string(i.attrs().at("handle").i()));
    else
      out.push_back(op + ":" +
                    (i.inputs_size() ? std::to_string(i.inputs(0)) : "") +
                    (i.has_async_handle() ? "*" : ""));
  }
  return out;
}

TEST(CollectiveOverlap, GathersArePrefetchedWithinTheWindow) {
  // Four 10 MiB parameters gathered before their matmuls: after the first
  // wait the next two start (20 MiB ahead fits 25), the fourth once the
  // second is waited for; each is waited for where it stood.
  Builder b;
  std::vector<int> params, gathered;
  for (int k = 0; k < 4; ++k) {
    params.push_back(b.tensor(plan::TensorDecl::PARAMETER, 10 * kMiB / 4));
    gathered.push_back(b.tensor(plan::TensorDecl::TRANSIENT, 10 * kMiB));
  }
  int x = b.tensor(plan::TensorDecl::TRANSIENT, 1024);
  for (int k = 0; k < 4; ++k) {
    b.inst("comm.all_gather", {params[k]}, {gathered[k]});
    b.inst("graph.matmul", {x, gathered[k]}, {x});
  }
  int handle = 7;
  OverlapCounts counts = overlapCollectives(b.segment, b.program, handle);
  EXPECT_EQ(counts.prefetchedGathers, 4);
  EXPECT_EQ(counts.overlappedScatters, 0);
  EXPECT_EQ(handle, 11);
  std::vector<std::string> expected = {
      "all_gather:0*", "wait:7",        "all_gather:2*", "all_gather:4*",
      "matmul:8",      "wait:8",        "all_gather:6*", "matmul:8",
      "wait:9",        "matmul:8",      "wait:10",       "matmul:8"};
  EXPECT_EQ(trace(b.segment), expected);
}

TEST(CollectiveOverlap, TheNextGatherStartsWhateverItsSize) {
  // Gathers larger than the window still run one ahead.
  Builder b;
  int x = b.tensor(plan::TensorDecl::TRANSIENT, 1024);
  for (int k = 0; k < 3; ++k) {
    int p = b.tensor(plan::TensorDecl::PARAMETER, 40 * kMiB);
    int g = b.tensor(plan::TensorDecl::TRANSIENT, 80 * kMiB);
    b.inst("comm.all_gather", {p}, {g});
    b.inst("graph.matmul", {x, g}, {x});
  }
  int handle = 0;
  overlapCollectives(b.segment, b.program, handle);
  std::vector<std::string> expected = {
      "all_gather:1*", "wait:0",   "all_gather:3*", "matmul:0",
      "wait:1",        "all_gather:5*", "matmul:0", "wait:2",
      "matmul:0"};
  EXPECT_EQ(trace(b.segment), expected);
}

TEST(CollectiveOverlap, ScattersCompleteOnceTheWindowFills) {
  // Three 20 MiB gradients reduce-scattered and accumulated: the first
  // completes when the second's start passes 25 MiB in flight, the second
  // with the third's, the third at the end. Each wait names the gradient
  // and the block, so that neither is reused while it runs.
  Builder b;
  int x = b.tensor(plan::TensorDecl::TRANSIENT, 1024);
  std::vector<int> grads, blocks, accumulated;
  for (int k = 0; k < 3; ++k) {
    grads.push_back(b.tensor(plan::TensorDecl::TRANSIENT, 20 * kMiB));
    blocks.push_back(b.tensor(plan::TensorDecl::TRANSIENT, 5 * kMiB));
    accumulated.push_back(b.tensor(plan::TensorDecl::GRADIENT, 5 * kMiB));
  }
  for (int k = 0; k < 3; ++k) {
    b.inst("graph.matmul", {x}, {grads[k]});
    b.inst("comm.reduce_scatter", {grads[k]}, {blocks[k]});
    b.inst("runtime.accumulate", {blocks[k]}, {accumulated[k]});
  }
  int handle = 0;
  OverlapCounts counts = overlapCollectives(b.segment, b.program, handle);
  EXPECT_EQ(counts.overlappedScatters, 3);
  std::vector<std::string> expected = {
      "matmul:0", "reduce_scatter:1*", "matmul:0", "reduce_scatter:4*",
      "wait:0",   "accumulate:2",      "matmul:0", "reduce_scatter:7*",
      "wait:1",   "accumulate:5",      "wait:2",   "accumulate:8"};
  EXPECT_EQ(trace(b.segment), expected);
  const plan::Instruction &wait = b.segment[4];
  ASSERT_EQ(wait.inputs_size(), 1);
  EXPECT_EQ(wait.inputs(0), grads[0]);
  ASSERT_EQ(wait.outputs_size(), 1);
  EXPECT_EQ(wait.outputs(0), blocks[0]);
}

TEST(CollectiveOverlap, ReadersOfTheAccumulatedGradientWaitForIt) {
  // A ZeRO-1 reduce-scatter (or a bucket's all-reduce) placed right after
  // the accumulation it reads: the deferred accumulation runs first.
  Builder b;
  int x = b.tensor(plan::TensorDecl::TRANSIENT, 1024);
  int grad = b.tensor(plan::TensorDecl::TRANSIENT, kMiB);
  int block = b.tensor(plan::TensorDecl::TRANSIENT, kMiB / 2);
  int acc = b.tensor(plan::TensorDecl::GRADIENT, kMiB / 2);
  int shard = b.tensor(plan::TensorDecl::GRADIENT, kMiB / 4);
  b.inst("graph.matmul", {x}, {grad});
  b.inst("comm.reduce_scatter", {grad}, {block});
  b.inst("runtime.accumulate", {block}, {acc});
  b.inst("comm.reduce_scatter", {acc}, {shard});
  b.segment.back().set_async_handle(0);
  b.inst("graph.matmul", {x}, {x});
  int handle = 1;
  overlapCollectives(b.segment, b.program, handle);
  std::vector<std::string> expected = {
      "matmul:0", "reduce_scatter:1*", "wait:1",  "accumulate:2",
      "reduce_scatter:3*", "matmul:0"};
  EXPECT_EQ(trace(b.segment), expected);
}

TEST(CollectiveOverlap, OtherCollectivesStaySynchronous) {
  // A gather of an activation (not a parameter), and a reduce-scatter
  // whose result something besides the accumulation reads.
  Builder b;
  int act = b.tensor(plan::TensorDecl::TRANSIENT, kMiB);
  int whole = b.tensor(plan::TensorDecl::TRANSIENT, 4 * kMiB);
  int grad = b.tensor(plan::TensorDecl::TRANSIENT, 4 * kMiB);
  int block = b.tensor(plan::TensorDecl::TRANSIENT, kMiB);
  int acc = b.tensor(plan::TensorDecl::GRADIENT, kMiB);
  b.inst("comm.all_gather", {act}, {whole});
  b.inst("comm.reduce_scatter", {grad}, {block});
  b.inst("runtime.accumulate", {block}, {acc});
  b.inst("graph.relu", {block}, {act});
  std::vector<std::string> before = trace(b.segment);
  int handle = 0;
  OverlapCounts counts = overlapCollectives(b.segment, b.program, handle);
  EXPECT_EQ(counts.prefetchedGathers + counts.overlappedScatters, 0);
  EXPECT_EQ(trace(b.segment), before);
  EXPECT_EQ(handle, 0);
}

} // namespace

TEST(CollectiveOverlap, UpdatedBlocksAreGatheredBesideTheNextForwardPass) {
  // Two chunks' segments (forward, backward each) and the optimizer; the
  // schedule runs chunk 1's forward first. Each updated block's gather
  // becomes carried, waited for before its parameter's first reader in
  // schedule order (chunk 1's parameter in forward1, chunk 0's in
  // forward0); a parameter no pass reads keeps its gather synchronous, as
  // does a gather of a transient.
  Builder b;
  int w0 = b.tensor(plan::TensorDecl::PARAMETER, 4096);
  int w1 = b.tensor(plan::TensorDecl::PARAMETER, 4096);
  int unread = b.tensor(plan::TensorDecl::PARAMETER, 4096);
  int b0 = b.tensor(plan::TensorDecl::OPTIMIZER_STATE, 1024);
  int b1 = b.tensor(plan::TensorDecl::OPTIMIZER_STATE, 1024);
  int bu = b.tensor(plan::TensorDecl::OPTIMIZER_STATE, 1024);
  int t = b.tensor(plan::TensorDecl::TRANSIENT, 1024);
  int x = b.tensor(plan::TensorDecl::TRANSIENT, 1024);
  std::vector<std::vector<plan::Instruction>> segments(5);
  auto add = [&](int s, const std::string &op, std::vector<int> in,
                 std::vector<int> out) {
    b.segment.clear();
    b.inst(op, in, out);
    segments[s].push_back(b.segment.front());
  };
  add(0, "graph.relu", {x}, {x});
  add(0, "graph.matmul", {x, w0}, {x}); // forward0
  add(1, "graph.matmul", {x, w0}, {x}); // backward0
  add(2, "graph.matmul", {x, w1}, {x}); // forward1
  add(3, "graph.matmul", {x, w1}, {x}); // backward1
  add(4, "comm.all_gather", {b0}, {w0});
  add(4, "comm.all_gather", {b1}, {w1});
  add(4, "comm.all_gather", {bu}, {unread});
  add(4, "comm.all_gather", {t}, {w0});
  for (int s : {2, 0, 1, 3, 4}) {
    plan::ScheduleStep *step = b.program.add_schedule();
    step->set_segment(s);
    step->set_microbatch(s == 4 ? -1 : 0);
  }
  int handle = 3;
  EXPECT_EQ(carryParameterGathers(segments, b.program, handle), 2);
  EXPECT_EQ(handle, 5);
  EXPECT_EQ(trace(segments[0]), (std::vector<std::string>{
                                    "relu:" + std::to_string(x), "wait:3",
                                    "matmul:" + std::to_string(x)}));
  EXPECT_EQ(trace(segments[2]), (std::vector<std::string>{
                                    "wait:4", "matmul:" + std::to_string(x)}));
  EXPECT_EQ(segments[1].size(), 1u);
  EXPECT_EQ(segments[3].size(), 1u);
  const plan::Instruction &wait = segments[2].front();
  EXPECT_TRUE(wait.attrs().at("carried").b());
  EXPECT_TRUE(wait.attrs().at("first_microbatch").b());
  EXPECT_EQ(wait.inputs(0), b1);
  EXPECT_EQ(wait.outputs(0), w1);
  std::vector<plan::Instruction> &opt = segments[4];
  EXPECT_EQ(opt[0].async_handle(), 3);
  EXPECT_EQ(opt[1].async_handle(), 4);
  EXPECT_TRUE(opt[1].attrs().at("carried").b());
  EXPECT_FALSE(opt[2].has_async_handle());
  EXPECT_FALSE(opt[3].has_async_handle());
}

TEST(CollectiveOverlap, TensorParallelCollectivesStayWhereTheyAre) {
  // A vocabulary-parallel embedding's gradient is reduce-scattered over
  // "tp" and accumulated into a gradient that a data-parallel bucket
  // holds; the bucket's all-reduce starts right after. Deferring that
  // accumulation would race with the bucket (dp2 x tp2 with sequence
  // parallelism trained wrong so): collectives off the replica axes are
  // left alone, as is a tensor-parallel gather of a parameter.
  Builder b;
  int w = b.tensor(plan::TensorDecl::PARAMETER, 4 * kMiB);
  int gathered = b.tensor(plan::TensorDecl::TRANSIENT, 8 * kMiB);
  int partial = b.tensor(plan::TensorDecl::TRANSIENT, 8 * kMiB);
  int block = b.tensor(plan::TensorDecl::TRANSIENT, 4 * kMiB);
  int grad = b.tensor(plan::TensorDecl::GRADIENT, 4 * kMiB);
  int x = b.tensor(plan::TensorDecl::TRANSIENT, 1024);
  b.inst("comm.all_gather", {w}, {gathered}, "tp");
  b.inst("graph.matmul", {x, gathered}, {x});
  b.inst("comm.reduce_scatter", {partial}, {block}, "tp");
  b.inst("runtime.accumulate", {block}, {grad});
  b.inst("graph.relu", {x}, {x});
  std::vector<plan::Instruction> before = b.segment;
  int handle = 0;
  OverlapCounts counts = overlapCollectives(b.segment, b.program, handle);
  EXPECT_EQ(counts.prefetchedGathers, 0);
  EXPECT_EQ(counts.overlappedScatters, 0);
  EXPECT_EQ(handle, 0);
  EXPECT_EQ(trace(b.segment), trace(before));
}
