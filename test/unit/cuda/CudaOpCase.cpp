//===- CudaOpCase.cpp - One instruction on both backends ------------------===//

#include "CudaOpCase.h"

#include "cleave/runtime/cuda/CudaBackend.h"
#include "cleave/runtime/executor/Executor.h"
#include "cleave/runtime/plan/PlanIO.h"

#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <cstring>
#include <random>

namespace cleave::test {

namespace {

/// The process's CUDA backend, started by the first test that needs it.
executor::Backend *cudaBackend(std::string &why) {
  static std::unique_ptr<executor::Backend> backend;
  static std::string reason;
  static bool tried = false;
  if (!tried) {
    tried = true;
    absl::StatusOr<std::unique_ptr<executor::Backend>> b =
        cuda::createCudaBackend(0);
    if (b.ok())
      backend = *std::move(b);
    else
      reason = std::string(b.status().message());
  }
  why = reason;
  return backend.get();
}

class DoneRequest final : public comm::Request {
public:
  void wait() override {}
};

/// The mesh as one rank of a larger job sees it (its coordinates kept),
/// for ops that only read the mesh (query_blocks, position_blocks,
/// shard_slice). It moves no data: the executor's end-of-step loss
/// reduction is in place and left as is; other collectives throw.
class MeshView final : public comm::Communicator {
public:
  explicit MeshView(comm::MeshInfo mesh) : mesh_(std::move(mesh)) {}
  const comm::MeshInfo &mesh() const override { return mesh_; }
  std::unique_ptr<comm::Request> allReduceAsync(const comm::Axes &,
                                                comm::CommTensor in,
                                                comm::CommTensor out,
                                                comm::Reduction) override {
    if (in.data != out.data)
      unsupported();
    return std::make_unique<DoneRequest>();
  }
  std::unique_ptr<comm::Request> allGatherAsync(const comm::Axes &,
                                                comm::CommTensor,
                                                comm::CommTensor,
                                                int) override {
    unsupported();
  }
  std::unique_ptr<comm::Request>
  reduceScatterAsync(const comm::Axes &, comm::CommTensor, comm::CommTensor,
                     int, comm::Reduction) override {
    unsupported();
  }
  std::unique_ptr<comm::Request> allToAllAsync(const comm::Axes &,
                                               comm::CommTensor,
                                               comm::CommTensor, int,
                                               int) override {
    unsupported();
  }
  std::unique_ptr<comm::Request> broadcastAsync(const comm::Axes &,
                                                comm::CommTensor,
                                                int64_t) override {
    unsupported();
  }
  std::unique_ptr<comm::Request> sendAsync(const std::string &, int64_t,
                                           int64_t,
                                           comm::CommTensor) override {
    unsupported();
  }
  std::unique_ptr<comm::Request> recvAsync(const std::string &, int64_t,
                                           int64_t,
                                           comm::CommTensor) override {
    unsupported();
  }
  [[noreturn]] void abort(int code) override { std::exit(code); }

private:
  [[noreturn]] static void unsupported() {
    throw std::invalid_argument("a one-instruction test moves no data "
                                "between ranks");
  }
  comm::MeshInfo mesh_;
};

} // namespace

void CudaOps::SetUp() {}

bool setCudaGemmPrecision(int precision) {
  std::string why;
  if (!cudaBackend(why))
    return false;
  cuda::setGemmPrecision(static_cast<cuda::GemmPrecision>(precision));
  return true;
}

std::vector<float> randomFloats(int64_t n, uint64_t seed, float lo, float hi) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(rng);
  return v;
}

OpCase::OpCase(const std::string &op) {
  plan_.add_ranks()->set_rank(0);
  program_ = plan_.add_programs();
  program_->set_name("one");
  plan::Segment *s = program_->add_segments();
  s->set_name("forward");
  inst_ = s->add_instructions();
  inst_->set_op(op);
  program_->add_schedule()->set_segment(0);
}

int32_t OpCase::declare(std::vector<int64_t> shape, plan::DType dtype,
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
  int64_t bytes = std::max<int64_t>(1, n * plan::dtypeBytes(dtype));
  t->set_offset(arena_);
  t->set_bytes(bytes);
  arena_ += (bytes + 255) / 256 * 256;
  program_->set_arena_bytes(arena_);
  return t->id();
}

int32_t OpCase::f32(std::vector<int64_t> shape, std::vector<float> values) {
  int32_t id = declare(shape, plan::F32, plan::TensorDecl::CONSTANT);
  program_->mutable_tensors(id)->set_constant_value(
      std::string(reinterpret_cast<const char *>(values.data()),
                  values.size() * sizeof(float)));
  inst_->add_inputs(id);
  return id;
}

int32_t OpCase::f32(std::vector<int64_t> shape, uint64_t seed, float lo,
                    float hi) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return f32(std::move(shape), randomFloats(n, seed, lo, hi));
}

int32_t OpCase::i64(std::vector<int64_t> shape, std::vector<int64_t> values) {
  int32_t id = declare(shape, plan::I64, plan::TensorDecl::CONSTANT);
  program_->mutable_tensors(id)->set_constant_value(
      std::string(reinterpret_cast<const char *>(values.data()),
                  values.size() * sizeof(int64_t)));
  inst_->add_inputs(id);
  return id;
}

int32_t OpCase::mask(std::vector<int64_t> shape, std::vector<uint8_t> values) {
  int32_t id = declare(shape, plan::BOOL, plan::TensorDecl::CONSTANT);
  program_->mutable_tensors(id)->set_constant_value(
      std::string(reinterpret_cast<const char *>(values.data()),
                  values.size()));
  inst_->add_inputs(id);
  return id;
}

void OpCase::absentInput() { inst_->add_inputs(-1); }

int32_t OpCase::output(std::vector<int64_t> shape, plan::DType dtype) {
  int32_t id = declare(shape, dtype, plan::TensorDecl::TRANSIENT);
  inst_->add_outputs(id);
  return id;
}

void OpCase::absentOutput() { inst_->add_outputs(-1); }

void OpCase::outputIsInput(int32_t inputId) { inst_->add_outputs(inputId); }

OpCase &OpCase::then(const std::string &op) {
  inst_ = program_->mutable_segments(0)->add_instructions();
  inst_->set_op(op);
  return *this;
}

void OpCase::input(int32_t id) { inst_->add_inputs(id); }

std::vector<int32_t> OpCase::comparedIds() const {
  std::vector<int32_t> ids(inst_->outputs().begin(), inst_->outputs().end());
  ids.insert(ids.end(), compared_.begin(), compared_.end());
  return ids;
}

plan::Attr &OpCase::attr(const std::string &name) {
  return (*inst_->mutable_attrs())[name];
}
OpCase &OpCase::setInt(const std::string &name, int64_t v) {
  attr(name).set_i(v);
  return *this;
}
OpCase &OpCase::setFloat(const std::string &name, double v) {
  attr(name).set_f(v);
  return *this;
}
OpCase &OpCase::setBool(const std::string &name, bool v) {
  attr(name).set_b(v);
  return *this;
}
OpCase &OpCase::setString(const std::string &name, const std::string &v) {
  attr(name).set_s(v);
  return *this;
}
OpCase &OpCase::setInts(const std::string &name, std::vector<int64_t> v) {
  attr(name).mutable_ints(); // an empty list is a list too
  for (int64_t x : v)
    attr(name).mutable_ints()->add_values(x);
  return *this;
}
OpCase &OpCase::setStrings(const std::string &name,
                           std::vector<std::string> v) {
  attr(name).mutable_strings();
  for (const std::string &x : v)
    attr(name).mutable_strings()->add_values(x);
  return *this;
}

std::vector<std::string> OpCase::run(bool cuda, bool fuse) {
  std::unique_ptr<comm::Communicator> comm =
      mesh_.numRanks() > 1 ? std::make_unique<MeshView>(mesh_)
                           : comm::createLocalCommunicator(mesh_);
  executor::ExecutorOptions options;
  options.fuse = fuse;
  options.trace = !fusion_.empty();
  if (cuda) {
    std::string why;
    options.backend = cudaBackend(why);
  }
  auto ex = executor::Executor::create(plan_, 0, *comm, options);
  EXPECT_TRUE(ex.ok()) << ex.status();
  if (!ex.ok())
    return {};
  auto result = (*ex)->runStep(1);
  EXPECT_TRUE(result.ok()) << (cuda ? "cuda: " : "cpu: ") << result.status();
  if (fuse && !fusion_.empty()) {
    bool found = false;
    for (const executor::TraceEvent &e : (*ex)->traceEvents())
      found = found || e.name == fusion_;
    EXPECT_TRUE(found) << (cuda ? "cuda" : "cpu") << " did not run "
                       << fusion_ << " fused";
  }
  std::vector<std::string> outputs;
  for (int32_t id : comparedIds())
    outputs.push_back(id < 0 ? std::string() : (*ex)->tensorBytes(id));
  return outputs;
}

void OpCase::compareOutputs(const char *what,
                            const std::vector<std::string> &ref,
                            const std::vector<std::string> &got, double rtol,
                            double atol) {
  std::vector<int32_t> ids = comparedIds();
  ASSERT_EQ(ref.size(), got.size());
  for (size_t o = 0; o < ref.size(); ++o) {
    int32_t id = ids[o];
    if (id < 0)
      continue;
    const plan::TensorDecl &t = program_->tensors(id);
    ASSERT_EQ(ref[o].size(), got[o].size()) << "output " << o;
    if (t.dtype() != plan::F32) {
      EXPECT_TRUE(ref[o] == got[o])
          << inst_->op() << ": output " << o << " (integer) differs";
      continue;
    }
    size_t n = ref[o].size() / sizeof(float);
    std::vector<float> a(n), b(n);
    std::memcpy(a.data(), ref[o].data(), n * sizeof(float));
    std::memcpy(b.data(), got[o].data(), n * sizeof(float));
    int reported = 0;
    for (size_t i = 0; i < n && reported < 5; ++i) {
      bool same = a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])) ||
                  std::fabs(a[i] - b[i]) <= atol + rtol * std::fabs(a[i]);
      if (!same) {
        ADD_FAILURE() << inst_->op() << ": tensor " << id << " element " << i
                      << ": cpu " << a[i] << ", " << what << " " << b[i];
        ++reported;
      }
    }
  }
}

void OpCase::expectMatch(double rtol, double atol) {
  // The CPU half runs everywhere, so that a malformed case fails in CI
  // too; a group of instructions also runs fused on the CPU.
  std::vector<std::string> cpu = run(false, false);
  if (program_->segments(0).instructions_size() > 1)
    compareOutputs("cpu fused", cpu, run(false, true), rtol, atol);
  std::string why;
  if (!cudaBackend(why))
    GTEST_SKIP() << "skipped: this machine has no usable GPU (" << why
                 << "); the CPU half ran, the CUDA half runs on the device "
                    "machine (scripts/cuda-device-check.sh)";
  compareOutputs("cuda", cpu, run(true, true), rtol, atol);
}

} // namespace cleave::test
