//===- RuntimeRun.cpp - A node test as a plan on the executor ------------===//

#include "RuntimeRun.h"

#include "cleave/Dialect/Graph/IR/GraphOps.h"
#include "cleave/Lowering/PlanLowering.h"
#include "cleave/cost_model/Cluster.h"
#include "cleave/runtime/comm/Communicator.h"
#include "cleave/runtime/executor/Executor.h"
#include "cleave/runtime/plan/PlanIO.h"

#include <fstream>
#include <type_traits>

namespace fs = std::filesystem;
namespace k = cleave::kernels;

namespace cleave::conformance {

namespace {

bool isUnsignedDType(cleave::plan::DType dtype) {
  return dtype == cleave::plan::U8 || dtype == cleave::plan::U16 ||
         dtype == cleave::plan::U32 || dtype == cleave::plan::U64;
}

/// The raw bytes the executor reads for an input of `t`'s values in its
/// INPUT tensor's dtype: fp32 (or 16-bit floats rounded from them), bool
/// bytes, or integers at the dtype's width (the low bytes of the int64
/// the evaluator holds).
std::string rawInput(const cleave::EvalTensor &t, cleave::plan::DType dtype) {
  if (dtype == cleave::plan::F16 || dtype == cleave::plan::BF16) {
    const std::vector<float> &v = std::get<k::Tensor>(t).values();
    std::vector<uint16_t> words(v.size());
    auto type = dtype == cleave::plan::F16 ? cleave::comm::ElementType::F16
                                           : cleave::comm::ElementType::BF16;
    for (size_t i = 0; i < v.size(); ++i)
      words[i] = cleave::comm::floatToHalf(type, v[i]);
    return std::string(reinterpret_cast<const char *>(words.data()),
                       words.size() * 2);
  }
  if (const auto *ints = std::get_if<k::IndexTensor>(&t)) {
    int64_t width = cleave::plan::dtypeBytes(dtype);
    std::string out;
    for (int64_t v : ints->values())
      for (int64_t b = 0; b < width; ++b)
        out.push_back(static_cast<char>((static_cast<uint64_t>(v) >> (8 * b)) &
                                        0xff));
    return out;
  }
  return std::visit(
      [](const auto &tensor) {
        const auto &v = tensor.values();
        using T = typename std::decay_t<decltype(v)>::value_type;
        if constexpr (std::is_same_v<T, uint8_t>)
          return std::string(v.begin(), v.end());
        else
          return std::string(reinterpret_cast<const char *>(v.data()),
                             v.size() * sizeof(T));
      },
      t);
}

/// Output `i` of the executor as an evaluator tensor.
std::optional<cleave::EvalTensor>
runtimeOutput(const cleave::executor::Executor &ex, int i) {
  const cleave::plan::TensorDecl &decl =
      ex.program().tensors(ex.program().output_tensors(i));
  k::Shape shape(decl.shape().begin(), decl.shape().end());
  std::string bytes = ex.outputBytes(i, 0);
  auto values = [&](auto sample) {
    std::vector<decltype(sample)> v(bytes.size() / sizeof(sample));
    std::memcpy(v.data(), bytes.data(), v.size() * sizeof(sample));
    return v;
  };
  switch (decl.dtype()) {
  case cleave::plan::F32:
    return k::Tensor(shape, values(float()));
  case cleave::plan::BF16:
  case cleave::plan::F16: {
    std::vector<uint16_t> v = values(uint16_t());
    std::vector<float> f(v.size());
    auto type = decl.dtype() == cleave::plan::F16
                    ? cleave::comm::ElementType::F16
                    : cleave::comm::ElementType::BF16;
    for (size_t i = 0; i < v.size(); ++i)
      f[i] = cleave::comm::halfToFloat(type, v[i]);
    return k::Tensor(shape, f);
  }
  case cleave::plan::BOOL:
    return k::MaskTensor(shape, values(uint8_t()));
  default:
    break;
  }
  int64_t width = cleave::plan::dtypeBytes(decl.dtype());
  // Integers, sign- or zero-extended to the int64 the evaluator holds.
  bool zeroExtend = isUnsignedDType(decl.dtype());
  std::vector<int64_t> held(bytes.size() / width);
  for (size_t i = 0; i < held.size(); ++i) {
    uint64_t bits = 0;
    for (int64_t b = 0; b < width; ++b)
      bits |= static_cast<uint64_t>(static_cast<uint8_t>(bytes[i * width + b]))
              << (8 * b);
    if (!zeroExtend && width < 8 && (bits >> (8 * width - 1)) & 1)
      bits |= ~uint64_t(0) << (8 * width);
    held[i] = static_cast<int64_t>(bits);
  }
  return k::IndexTensor(shape, std::move(held));
}

} // namespace

std::vector<cleave::EvalTensor>
runOnRuntime(mlir::ModuleOp module,
             const std::map<std::string, cleave::EvalTensor> &inputs,
             const fs::path &scratch, std::string &why) {
  cleave::lowering::LoweringOptions lo;
  absl::StatusOr<cleave::cost::Cluster> cluster =
      cleave::cost::parseCluster("cpu-local,devices=1");
  if (!cluster.ok()) {
    why = std::string(cluster.status().message());
    return {};
  }
  lo.cluster = *cluster;
  lo.clusterSpec = "cpu-local,devices=1";
  lo.step.optimizer = cleave::Optimizer::None;
  lo.residualBlocks = true;
  // The batch is the first input's first dimension (the importer's static
  // shape; the lowering reads the model's batch there too): one microbatch
  // of all of it.
  bool batchFound = false;
  module.walk([&](cleave::graph::InputOp input) {
    auto type = mlir::cast<mlir::RankedTensorType>(input.getType());
    if (batchFound || type.getRank() == 0)
      return;
    lo.knobs.microbatchSize = type.getDimSize(0);
    batchFound = true;
  });
  llvm::FailureOr<cleave::plan::Plan> plan =
      cleave::lowering::lowerToPlan(module, lo);
  if (mlir::failed(plan)) {
    why.clear(); // the diagnostics say why
    return {};
  }
  cleave::executor::ExecutorOptions options;
  // Only the inputs the program reads (one folded at import is not).
  std::map<std::string, cleave::plan::DType> read;
  for (const cleave::plan::TensorDecl &t : plan->programs(0).tensors())
    if (t.kind() == cleave::plan::TensorDecl::INPUT)
      read[t.input_name()] = t.dtype();
  for (const auto &[name, value] : inputs) {
    auto dtype = read.find(name);
    if (dtype == read.end())
      continue;
    fs::path file = scratch / (name + ".bin");
    // The data set's element kind must be the input's (a bfloat16 input
    // whose test data is stored as uint16 words is not).
    bool floats = std::holds_alternative<k::Tensor>(value);
    bool bools = std::holds_alternative<k::MaskTensor>(value);
    cleave::plan::DType d = dtype->second;
    bool floatInput = d == cleave::plan::F32 || d == cleave::plan::F16 ||
                      d == cleave::plan::BF16;
    if (floats != floatInput || bools != (d == cleave::plan::BOOL)) {
      why = "input '" + name + "' has test data of another element type than "
            "its " + cleave::plan::DType_Name(d) + " tensor";
      return {};
    }
    std::ofstream(file, std::ios::binary) << rawInput(value, d);
    options.inputFiles[name] = file.string();
  }
  cleave::comm::MeshInfo mesh;
  for (const cleave::plan::MeshAxis &axis : plan->mesh().axes()) {
    mesh.axisNames.push_back(axis.name());
    mesh.axisSizes.push_back(axis.size());
    mesh.coords.push_back(0);
  }
  std::unique_ptr<cleave::comm::Communicator> comm =
      cleave::comm::createLocalCommunicator(mesh);
  auto ex = cleave::executor::Executor::create(*plan, 0, *comm, options);
  if (!ex.ok()) {
    why = std::string(ex.status().message());
    return {};
  }
  if (auto step = (*ex)->runStep(1); !step.ok()) {
    why = std::string(step.status().message());
    return {};
  }
  std::vector<cleave::EvalTensor> out;
  for (int i = 0; i < (*ex)->program().output_tensors_size(); ++i) {
    std::optional<cleave::EvalTensor> t = runtimeOutput(**ex, i);
    if (!t) {
      why = "output " + std::to_string(i) + " has an unread dtype";
      return {};
    }
    out.push_back(std::move(*t));
  }
  return out;
}

} // namespace cleave::conformance
