//===- KernelDispatchTest.cpp - Single instructions against the kernels ---===//
//
// Each case runs one instruction of a one-segment plan (inputs are
// CONSTANT tensors) and compares its outputs with the kernel called
// directly: attributes reach the kernels under their ODS names, optional
// operands may be -1, integer and boolean tensors are views of their type,
// and optimizer updates work in place or into other tensors.
//
//===----------------------------------------------------------------------===//

#include "cleave/runtime/comm/Communicator.h"
#include "cleave/runtime/executor/Executor.h"
#include "cleave/runtime/kernels/Attention.h"
#include "cleave/runtime/kernels/DataMovement.h"
#include "cleave/runtime/kernels/Normalization.h"
#include "cleave/runtime/kernels/Optimizer.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace cleave;
namespace k = cleave::kernels;

namespace {

/// A plan of one rank whose only segment runs one instruction.
class OneOp {
public:
  explicit OneOp(const std::string &op) {
    plan_.add_ranks()->set_rank(0);
    program_ = plan_.add_programs();
    program_->set_name("one");
    plan::Segment *s = program_->add_segments();
    s->set_name("forward");
    inst_ = s->add_instructions();
    inst_->set_op(op);
    program_->add_schedule()->set_segment(0);
  }

  template <typename T>
  int32_t input(std::vector<int64_t> shape, const std::vector<T> &values,
                plan::DType dtype = plan::F32) {
    int32_t id = declare(shape, dtype, plan::TensorDecl::CONSTANT);
    program_->mutable_tensors(id)->set_constant_value(std::string(
        reinterpret_cast<const char *>(values.data()), values.size() * sizeof(T)));
    inst_->add_inputs(id);
    return id;
  }
  int32_t output(std::vector<int64_t> shape, plan::DType dtype = plan::F32) {
    int32_t id = declare(shape, dtype, plan::TensorDecl::TRANSIENT);
    inst_->add_outputs(id);
    return id;
  }
  plan::Instruction &inst() { return *inst_; }
  plan::Attr &attr(const std::string &name) {
    return (*inst_->mutable_attrs())[name];
  }

  /// Runs the step; the executor stays for reading outputs.
  void run() {
    comm_ = comm::createLocalCommunicator();
    auto ex = executor::Executor::create(plan_, 0, *comm_);
    ASSERT_TRUE(ex.ok()) << ex.status();
    executor_ = *std::move(ex);
    auto result = executor_->runStep(1);
    ASSERT_TRUE(result.ok()) << result.status();
  }
  std::vector<float> floats(int32_t id) { return executor_->tensorValues(id); }
  template <typename T> std::vector<T> values(int32_t id) {
    executor::TensorView v = executor_->tensor(id);
    const T *data = static_cast<const T *>(v.data);
    return {data, data + v.numElements()};
  }

private:
  int32_t declare(std::vector<int64_t> shape, plan::DType dtype,
                  plan::TensorDecl::Kind kind) {
    plan::TensorDecl *t = program_->add_tensors();
    t->set_id(program_->tensors_size() - 1);
    t->set_dtype(dtype);
    t->set_kind(kind);
    int64_t n = 1;
    for (int64_t d : shape) {
      t->add_shape(d);
      n *= d;
    }
    int64_t bytes = n * (dtype == plan::I64 ? 8 : dtype == plan::BOOL ? 1 : 4);
    t->set_offset(arena_);
    t->set_bytes(bytes);
    arena_ += (bytes + 63) / 64 * 64;
    program_->set_arena_bytes(arena_);
    return t->id();
  }

  plan::Plan plan_;
  plan::Program *program_;
  plan::Instruction *inst_;
  int64_t arena_ = 0;
  std::unique_ptr<comm::Communicator> comm_;
  std::unique_ptr<executor::Executor> executor_;
};

std::vector<float> iota(int64_t n, float scale = 0.1f) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i)
    v[i] = scale * static_cast<float>((i * 7) % 11) - 0.4f;
  return v;
}

TEST(KernelDispatchTest, LayerNormWithoutScaleOrBias) {
  OneOp t("graph.layer_norm");
  std::vector<float> x = iota(12);
  t.input<float>({3, 4}, x);
  t.inst().add_inputs(-1);
  t.inst().add_inputs(-1);
  int32_t out = t.output({3, 4});
  t.attr("axis").set_i(1);
  t.attr("epsilon").set_f(1e-5);
  t.run();
  k::Tensor expected({3, 4});
  k::layerNorm(k::Tensor({3, 4}, x), {}, {}, 1, 1e-5, expected);
  EXPECT_EQ(t.floats(out), expected.values());
}

TEST(KernelDispatchTest, CausalSoftmax) {
  OneOp t("graph.softmax");
  std::vector<float> x = iota(16);
  t.input<float>({4, 4}, x);
  int32_t out = t.output({4, 4});
  t.attr("axis").set_i(-1);
  t.attr("causal").set_b(true);
  t.run();
  k::Tensor expected({4, 4});
  k::softmax(k::Tensor({4, 4}, x), 1, true, expected);
  EXPECT_EQ(t.floats(out), expected.values());
  EXPECT_EQ(t.floats(out)[1], 0.0f);
}

TEST(KernelDispatchTest, GatherTakesIndexTensors) {
  OneOp t("graph.gather");
  std::vector<float> table = iota(15);
  t.input<float>({5, 3}, table);
  t.input<int64_t>({2}, {4, 1}, plan::I64);
  int32_t out = t.output({2, 3});
  t.attr("axis").set_i(0);
  t.run();
  std::vector<float> got = t.floats(out);
  for (int j = 0; j < 3; ++j) {
    EXPECT_EQ(got[j], table[12 + j]);
    EXPECT_EQ(got[3 + j], table[3 + j]);
  }
}

TEST(KernelDispatchTest, TransposeTakesThePermutationList) {
  OneOp t("graph.transpose");
  std::vector<float> x = iota(6);
  t.input<float>({2, 3}, x);
  int32_t out = t.output({3, 2});
  for (int64_t p : {1, 0})
    t.attr("permutation").mutable_ints()->add_values(p);
  t.run();
  std::vector<float> got = t.floats(out);
  EXPECT_EQ(got[1], x[3]);
  EXPECT_EQ(got[2], x[1]);
}

TEST(KernelDispatchTest, CompareWritesBooleansAndWhereReadsThem) {
  OneOp t("graph.compare");
  t.input<float>({4}, {1, 2, 3, 4});
  t.input<float>({4}, {2, 2, 2, 2});
  int32_t out = t.output({4}, plan::BOOL);
  t.attr("predicate").set_s("ge");
  t.run();
  EXPECT_EQ(t.values<uint8_t>(out), (std::vector<uint8_t>{0, 1, 1, 1}));

  OneOp w("graph.where");
  w.input<uint8_t>({4}, {1, 0, 0, 1}, plan::BOOL);
  w.input<float>({4}, {1, 2, 3, 4});
  w.input<float>({4}, {-1, -2, -3, -4});
  int32_t picked = w.output({4});
  w.run();
  EXPECT_EQ(w.floats(picked), (std::vector<float>{1, -2, -3, 4}));
}

TEST(KernelDispatchTest, ReshapeCopiesIntegers) {
  OneOp t("graph.reshape");
  t.input<int64_t>({2, 2}, {5, 6, 7, 8}, plan::I64);
  int32_t out = t.output({4}, plan::I64);
  t.run();
  EXPECT_EQ(t.values<int64_t>(out), (std::vector<int64_t>{5, 6, 7, 8}));
}

TEST(KernelDispatchTest, SplitAndConcatAreVariadic) {
  OneOp t("graph.split");
  std::vector<float> x = iota(8);
  t.input<float>({2, 4}, x);
  int32_t a = t.output({2, 1}), b = t.output({2, 3});
  t.attr("axis").set_i(1);
  t.run();
  EXPECT_EQ(t.floats(a), (std::vector<float>{x[0], x[4]}));
  EXPECT_EQ(t.floats(b), (std::vector<float>{x[1], x[2], x[3], x[5], x[6], x[7]}));
}

TEST(KernelDispatchTest, AdamwIntoOtherTensorsLeavesInputs) {
  OneOp t("graph.adamw_update");
  std::vector<float> p = iota(4), g = iota(4, 0.3f), m(4, 0.1f), v(4, 0.2f);
  int32_t pin = t.input<float>({4}, p);
  t.input<float>({4}, g);
  t.input<float>({4}, m);
  t.input<float>({4}, v);
  t.input<float>({}, {3.0f});
  int32_t pout = t.output({4}), mout = t.output({4}), vout = t.output({4});
  t.attr("lr").set_f(0.01);
  t.attr("beta1").set_f(0.9);
  t.attr("beta2").set_f(0.99);
  t.attr("eps").set_f(1e-8);
  t.attr("weight_decay").set_f(0.1);
  t.run();
  k::Tensor ep({4}, p), em({4}, m), ev({4}, v);
  k::AdamWOptions o;
  o.learningRate = 0.01f;
  o.beta1 = 0.9f;
  o.beta2 = 0.99f;
  o.epsilon = 1e-8f;
  o.weightDecay = 0.1f;
  k::adamwStep(ep, k::Tensor({4}, g), em, ev, 3, o);
  EXPECT_EQ(t.floats(pout), ep.values());
  EXPECT_EQ(t.floats(mout), em.values());
  EXPECT_EQ(t.floats(vout), ev.values());
  EXPECT_EQ(t.floats(pin), p);
}

TEST(KernelDispatchTest, ShardSliceOfAGroupOfOneIsACopy) {
  OneOp t("graph.shard_slice");
  std::vector<float> x = iota(6);
  t.input<float>({2, 3}, x);
  int32_t out = t.output({2, 3});
  t.attr("axes").mutable_strings()->add_values("tp");
  t.attr("group_size").set_i(1);
  t.attr("dim").set_i(1);
  t.run();
  EXPECT_EQ(t.floats(out), x);
}

TEST(KernelDispatchTest, RuntimeScale) {
  OneOp t("runtime.scale");
  t.input<float>({3}, {1, 2, 3});
  int32_t out = t.output({3});
  t.attr("factor").set_f(0.5);
  t.run();
  EXPECT_EQ(t.floats(out), (std::vector<float>{0.5f, 1, 1.5f}));
}

} // namespace
