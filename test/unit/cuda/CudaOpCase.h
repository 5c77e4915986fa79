//===- CudaOpCase.h - One instruction on the CPU and the CUDA backend -*- C++ -*-===//
//
// A CUDA kernel is right when it gives what the CPU kernel gives: a case
// builds a one-instruction plan (inputs are CONSTANT tensors, outputs
// TRANSIENT), runs it through the Executor on both backends and compares
// every output. Without a GPU only the CPU half runs and the case skips,
// saying why.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TEST_UNIT_CUDA_CUDAOPCASE_H
#define CLEAVE_TEST_UNIT_CUDA_CUDAOPCASE_H

#include "cleave/runtime/comm/Communicator.h"
#include "cleave/runtime/plan/plan.pb.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace cleave::test {

/// The fixture of every case. Where no GPU is usable, expectMatch runs
/// the CPU half (so that a malformed case fails everywhere) and then skips
/// with the CUDA runtime's reason.
class CudaOps : public ::testing::Test {
protected:
  void SetUp() override;
};

/// Sets how the CUDA backend's GEMMs multiply (cuda::GemmPrecision as an
/// int: 0 fp32, 1 tf32, 2 bf16, 3 fp16); false where no GPU is usable.
bool setCudaGemmPrecision(int precision);

/// Uniform values in [lo, hi) from `seed` (the same on every call).
std::vector<float> randomFloats(int64_t n, uint64_t seed, float lo = -1.0f,
                                float hi = 1.0f);

class OpCase {
public:
  explicit OpCase(const std::string &op);

  /// Inputs, in ODS operand order.
  int32_t f32(std::vector<int64_t> shape, std::vector<float> values);
  /// Random values in [lo, hi).
  int32_t f32(std::vector<int64_t> shape, uint64_t seed, float lo = -1.0f,
              float hi = 1.0f);
  int32_t i64(std::vector<int64_t> shape, std::vector<int64_t> values);
  int32_t mask(std::vector<int64_t> shape, std::vector<uint8_t> values);
  /// An absent optional operand (-1).
  void absentInput();
  /// Outputs, in ODS result order.
  int32_t output(std::vector<int64_t> shape, plan::DType dtype = plan::F32);
  void absentOutput();
  /// Makes output `o` the same tensor as input `i` (in-place updates).
  void outputIsInput(int32_t inputId);

  /// Appends instruction `op` to the case: later inputs, outputs and
  /// attributes are its own. Several instructions make a group a backend
  /// may fuse (Fusion.h): the CPU reference then runs op by op, and both
  /// backends run fused.
  OpCase &then(const std::string &op);
  /// An input of the current instruction that an earlier one produced.
  void input(int32_t id);
  /// Compares tensor `id` too (default: the last instruction's outputs).
  void compare(int32_t id) { compared_.push_back(id); }
  /// expectMatch then also requires that each backend ran the group fused
  /// (a trace event named `fusion`, executor fusionName).
  void expectFused(const std::string &fusion) { fusion_ = fusion; }

  plan::Attr &attr(const std::string &name);
  OpCase &setInt(const std::string &name, int64_t v);
  OpCase &setFloat(const std::string &name, double v);
  OpCase &setBool(const std::string &name, bool v);
  OpCase &setString(const std::string &name, const std::string &v);
  OpCase &setInts(const std::string &name, std::vector<int64_t> v);
  OpCase &setStrings(const std::string &name, std::vector<std::string> v);
  /// The mesh the op sees, with this rank's coordinates (query_blocks,
  /// position_blocks, shard_slice); default one rank. Collectives other
  /// than the executor's own in-place loss reduction are refused.
  void setMesh(comm::MeshInfo mesh) { mesh_ = std::move(mesh); }

  /// Runs on both backends and expects every output to agree: f32 within
  /// |cuda - cpu| <= atol + rtol * |cpu|, integers and masks exactly.
  void expectMatch(double rtol = 1e-5, double atol = 1e-6);

private:
  int32_t declare(std::vector<int64_t> shape, plan::DType dtype,
                  plan::TensorDecl::Kind kind);
  /// The bytes of each compared tensor after one step on `cuda` or the
  /// CPU, fused or op by op.
  std::vector<std::string> run(bool cuda, bool fuse);
  std::vector<int32_t> comparedIds() const;
  void compareOutputs(const char *what, const std::vector<std::string> &ref,
                      const std::vector<std::string> &got, double rtol,
                      double atol);

  plan::Plan plan_;
  plan::Program *program_ = nullptr;
  plan::Instruction *inst_ = nullptr;
  int64_t arena_ = 0;
  comm::MeshInfo mesh_;
  std::vector<int32_t> compared_;
  std::string fusion_;
};

/// The mesh of rank `coord` of `size` on a "cp" axis (for the ops that
/// read where their block sits: query_blocks, position_blocks, shard_slice).
inline comm::MeshInfo contextParallelRank(int64_t size, int64_t coord) {
  comm::MeshInfo mesh;
  mesh.axisNames = {"cp"};
  mesh.axisSizes = {size};
  mesh.coords = {coord};
  return mesh;
}

} // namespace cleave::test

#endif // CLEAVE_TEST_UNIT_CUDA_CUDAOPCASE_H
