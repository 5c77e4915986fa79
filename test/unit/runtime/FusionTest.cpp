//===- FusionTest.cpp - Which instruction groups a backend may fuse -------===//
//
// The matcher must fuse only where nothing observable changes: adjacent
// instructions, intermediates read by no other instruction of the
// program, the shapes each pattern assumes; and the executor must fall
// back when the buffer plan gives a result an operand's bytes.

#include "cleave/runtime/executor/Fusion.h"

#include <gtest/gtest.h>

using namespace cleave;
using namespace cleave::executor;

namespace {

class ProgramBuilder {
public:
  ProgramBuilder() { p.add_segments()->set_name("forward"); }

  int32_t tensor(std::vector<int64_t> shape,
                 plan::TensorDecl::Kind kind = plan::TensorDecl::TRANSIENT) {
    plan::TensorDecl *t = p.add_tensors();
    t->set_id(p.tensors_size() - 1);
    t->set_dtype(plan::F32);
    t->set_kind(kind);
    for (int64_t d : shape)
      t->add_shape(d);
    return t->id();
  }
  plan::Instruction &op(const std::string &name, std::vector<int32_t> in,
                        std::vector<int32_t> out, int segment = 0) {
    while (p.segments_size() <= segment)
      p.add_segments();
    plan::Instruction *i = p.mutable_segments(segment)->add_instructions();
    i->set_op(name);
    for (int32_t id : in)
      i->add_inputs(id);
    for (int32_t id : out)
      i->add_outputs(id);
    return *i;
  }
  static void flag(plan::Instruction &i, const std::string &name) {
    (*i.mutable_attrs())[name].set_b(true);
  }

  plan::Program p;
};

auto all = [](const FusedGroup &, const plan::Segment &) { return true; };

/// x [2, 5, 8] . W [8, 16] + b [16], then gelu: the forward of an MLP.
struct Linear {
  ProgramBuilder b;
  int32_t x, w, bias, t, y, z;
  Linear() {
    x = b.tensor({2, 5, 8}, plan::TensorDecl::INPUT);
    w = b.tensor({8, 16}, plan::TensorDecl::PARAMETER);
    bias = b.tensor({16}, plan::TensorDecl::PARAMETER);
    t = b.tensor({2, 5, 16});
    y = b.tensor({2, 5, 16});
    z = b.tensor({2, 5, 16});
    b.op("graph.matmul", {x, w}, {t});
    b.op("graph.add", {t, bias}, {y});
    b.flag(b.op("graph.gelu", {y}, {z}), "approximate_tanh");
  }
};

} // namespace

TEST(Fusion, LinearBiasActivationDropsWhatNothingElseReads) {
  Linear l;
  std::vector<FusedGroup> g = findFusions(l.b.p, 0, all);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].kind, Fusion::MatmulBiasActivation);
  EXPECT_EQ(g[0].first, 0);
  EXPECT_EQ(g[0].count, 3);
  EXPECT_TRUE(g[0].drops(l.t));
  EXPECT_TRUE(g[0].drops(l.y));
  EXPECT_FALSE(g[0].drops(l.z));
}

TEST(Fusion, APreActivationTheBackwardReadsIsKept) {
  Linear l;
  int32_t dz = l.b.tensor({2, 5, 16}), dy = l.b.tensor({2, 5, 16});
  l.b.op("graph.activation_grad", {l.y, dz}, {dy}, 1);
  std::vector<FusedGroup> g = findFusions(l.b.p, 0, all);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_TRUE(g[0].drops(l.t));
  EXPECT_FALSE(g[0].drops(l.y));
}

TEST(Fusion, ABackendMayTakeTheShorterGroup) {
  Linear l;
  auto noActivation = [](const FusedGroup &g, const plan::Segment &) {
    return g.kind != Fusion::MatmulBiasActivation;
  };
  std::vector<FusedGroup> g = findFusions(l.b.p, 0, noActivation);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].kind, Fusion::MatmulBias);
  EXPECT_EQ(g[0].count, 2);
  EXPECT_TRUE(findFusions(l.b.p, 0,
                          [](const FusedGroup &, const plan::Segment &) {
                            return false;
                          })
                  .empty());
}

TEST(Fusion, AProductReadElsewhereIsNotFused) {
  Linear l;
  int32_t other = l.b.tensor({2, 5, 16});
  l.b.op("graph.neg", {l.t}, {other}, 1);
  EXPECT_TRUE(findFusions(l.b.p, 0, all).empty());
}

TEST(Fusion, AProductThatLeavesTheProgramIsNotFused) {
  Linear l;
  l.b.p.add_output_tensors(l.t);
  EXPECT_TRUE(findFusions(l.b.p, 0, all).empty());
}

TEST(Fusion, OnlyAVectorOverTheLastDimensionIsABias) {
  ProgramBuilder b;
  int32_t x = b.tensor({4, 8}), w = b.tensor({8, 16}),
          full = b.tensor({4, 16}), t = b.tensor({4, 16}),
          y = b.tensor({4, 16});
  b.op("graph.matmul", {x, w}, {t});
  b.op("graph.add", {t, full}, {y});
  EXPECT_TRUE(findFusions(b.p, 0, all).empty());
}

TEST(Fusion, WeightGradientOverTheBatch) {
  ProgramBuilder b;
  int32_t a = b.tensor({2, 5, 8}), d = b.tensor({2, 5, 16}),
          t = b.tensor({2, 8, 16}), r = b.tensor({1, 8, 16});
  plan::Instruction &mm = b.op("graph.matmul", {a, d}, {t});
  b.flag(mm, "transpose_lhs");
  plan::Instruction &sum = b.op("graph.reduce_sum", {t}, {r});
  (*sum.mutable_attrs())["axes"].mutable_ints()->add_values(0);
  std::vector<FusedGroup> g = findFusions(b.p, 0, all);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].kind, Fusion::MatmulBatchReduce);

  // A sum over other axes is not the contraction.
  (*sum.mutable_attrs())["axes"].mutable_ints()->set_values(0, 1);
  EXPECT_TRUE(findFusions(b.p, 0, all).empty());
}

TEST(Fusion, ActivationGradientAfterTheInputGradient) {
  ProgramBuilder b;
  int32_t dz = b.tensor({2, 5, 16}), w = b.tensor({8, 16}),
          y = b.tensor({2, 5, 8}, plan::TensorDecl::STASH),
          t = b.tensor({2, 5, 8}), dy = b.tensor({2, 5, 8});
  b.flag(b.op("graph.matmul", {dz, w}, {t}), "transpose_rhs");
  (*b.op("graph.activation_grad", {y, t}, {dy}).mutable_attrs())["kind"]
      .set_s("gelu_tanh");
  std::vector<FusedGroup> g = findFusions(b.p, 0, all);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].kind, Fusion::MatmulActivationGrad);
  EXPECT_TRUE(g[0].drops(t));
}

TEST(Fusion, WritesOverlappingAnOperandFallBack) {
  Linear l;
  std::vector<FusedGroup> g = findFusions(l.b.p, 0, all);
  ASSERT_EQ(g.size(), 1u);
  std::vector<float> arena(4096);
  auto view = [&](int32_t id, int64_t offset, std::vector<int64_t> shape) {
    TensorView v;
    v.data = arena.data() + offset;
    v.shape = std::move(shape);
    v.id = id;
    return v;
  };
  comm::MeshInfo mesh;
  auto local = comm::createLocalCommunicator(mesh);
  PendingRequests pending;
  DeferredRequests deferred;
  const auto &insts = l.b.p.segments(0).instructions();
  auto contexts = [&](int64_t zOffset) {
    std::vector<OpContext> c;
    c.emplace_back(insts[0],
                   std::vector<TensorView>{view(l.x, 0, {2, 5, 8}),
                                           view(l.w, 100, {8, 16})},
                   std::vector<TensorView>{view(l.t, 300, {2, 5, 16})},
                   *local, pending, deferred);
    c.emplace_back(insts[1],
                   std::vector<TensorView>{view(l.t, 300, {2, 5, 16}),
                                           view(l.bias, 250, {16})},
                   std::vector<TensorView>{view(l.y, 500, {2, 5, 16})},
                   *local, pending, deferred);
    c.emplace_back(insts[2],
                   std::vector<TensorView>{view(l.y, 500, {2, 5, 16})},
                   std::vector<TensorView>{view(l.z, zOffset, {2, 5, 16})},
                   *local, pending, deferred);
    return c;
  };
  // z apart from x, W and b: fused. z over x's bytes (x died at the
  // matmul, so the buffer plan could reuse them): op by op. The dropped
  // intermediates t and y may overlap anything.
  EXPECT_FALSE(fusedWritesOverlapReads(g[0], contexts(300)));
  EXPECT_TRUE(fusedWritesOverlapReads(g[0], contexts(40)));
}
