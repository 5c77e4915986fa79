//===- main.cpp - ONNX's node tests through cleave's importer -------------===//
//
// cleave-onnx-conformance [DATA_DIR] [--filter TEXT] [--failures]
//                         [--unsupported] [--exceptions FILE] [--runtime]
//
// Each directory of ONNX's backend node tests (Debian's libonnx-testdata,
// /usr/share/libonnx-testdata/data/node by default) holds model.onnx and
// test_data_set_*/{input,output}_N.pb. Each model is imported (its integer
// inputs, which fix shapes, made initializers from the test's data where
// every set agrees; short float vectors too where an op needs them at
// import, as Resize's scales); inputs are
// bound by the graph's input names and @forward is run by the reference
// evaluator; with --runtime (the CTest gate) the model is also lowered to
// an inference plan (one CPU rank) and run by the runtime's executor on
// the same inputs, as `cleave compile --optimizer none` and `cleave run
// --input` do. Results are compared with ONNX's tolerances (rtol 1e-3,
// atol 1e-5; integers and booleans exactly).
// A model the importer refuses is "unsupported" with its first error. One
// row per op type (the model's first node), then the totals. Exit 1 when a
// test that imports fails, unless FILE (one test name per line, then why;
// '#' comments) excuses it: every op cleave supports must pass its tests.
// Exit 77 (CTest's skip) when the data is not installed.
//
//===----------------------------------------------------------------------===//

#include "cleave/Evaluator/GraphEvaluator.h"
#include "cleave/Importers/OnnxImporter.h"
#include "cleave/Dialect/Graph/IR/GraphOps.h"
#include "cleave/Lowering/PlanLowering.h"
#include "cleave/cost_model/Cluster.h"
#include "cleave/runtime/comm/Communicator.h"
#include "cleave/runtime/executor/Executor.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include "onnx/onnx_pb.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include <unistd.h>

namespace fs = std::filesystem;
namespace k = cleave::kernels;

namespace {

template <typename Proto> bool readProto(const fs::path &path, Proto &out) {
  std::ifstream in(path, std::ios::binary);
  return in && out.ParseFromIstream(&in);
}

/// A TensorProto as the evaluator's tensor, for the types node tests use.
std::optional<cleave::EvalTensor> toEval(const onnx::TensorProto &t,
                                         std::string &why) {
  k::Shape shape(t.dims().begin(), t.dims().end());
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  const std::string &raw = t.raw_data();
  auto fromRaw = [&](auto sample, auto convert) {
    using T = decltype(sample);
    std::vector<T> values(n);
    if (raw.size() == size_t(n) * sizeof(T))
      std::memcpy(values.data(), raw.data(), raw.size());
    return convert(values);
  };
  switch (t.data_type()) {
  case onnx::TensorProto::FLOAT: {
    std::vector<float> v(t.float_data().begin(), t.float_data().end());
    if (!raw.empty())
      v = fromRaw(float(), [](std::vector<float> x) { return x; });
    if (int64_t(v.size()) != n)
      break;
    return k::Tensor(shape, v);
  }
  case onnx::TensorProto::FLOAT16:
  case onnx::TensorProto::BFLOAT16: {
    // 16-bit floats: raw little-endian words, or one word per int32_data.
    std::vector<uint16_t> words(t.int32_data().begin(), t.int32_data().end());
    if (!raw.empty())
      words = fromRaw(uint16_t(), [](std::vector<uint16_t> x) { return x; });
    if (int64_t(words.size()) != n)
      break;
    std::vector<float> v(n);
    auto type = t.data_type() == onnx::TensorProto::FLOAT16
                    ? cleave::comm::ElementType::F16
                    : cleave::comm::ElementType::BF16;
    for (int64_t i = 0; i < n; ++i)
      v[i] = cleave::comm::halfToFloat(type, words[i]);
    return k::Tensor(shape, v);
  }
  case onnx::TensorProto::DOUBLE: {
    std::vector<double> d(t.double_data().begin(), t.double_data().end());
    if (!raw.empty())
      d = fromRaw(double(), [](std::vector<double> x) { return x; });
    if (int64_t(d.size()) != n)
      break;
    return k::Tensor(shape, std::vector<float>(d.begin(), d.end()));
  }
  case onnx::TensorProto::INT64: {
    std::vector<int64_t> v(t.int64_data().begin(), t.int64_data().end());
    if (!raw.empty())
      v = fromRaw(int64_t(), [](std::vector<int64_t> x) { return x; });
    if (int64_t(v.size()) != n)
      break;
    return k::IndexTensor(shape, v);
  }
  case onnx::TensorProto::INT32: {
    std::vector<int64_t> v(t.int32_data().begin(), t.int32_data().end());
    if (!raw.empty())
      v = fromRaw(int32_t(), [](std::vector<int32_t> x) {
        return std::vector<int64_t>(x.begin(), x.end());
      });
    if (int64_t(v.size()) != n)
      break;
    return k::IndexTensor(shape, v);
  }
  case onnx::TensorProto::BOOL: {
    std::vector<uint8_t> v(t.int32_data().begin(), t.int32_data().end());
    if (!raw.empty())
      v = fromRaw(uint8_t(), [](std::vector<uint8_t> x) { return x; });
    if (int64_t(v.size()) != n)
      break;
    return k::MaskTensor(shape, v);
  }
  default:
    why = "element type " + std::to_string(t.data_type()) + " of " + t.name();
    return std::nullopt;
  }
  why = "malformed data in " + t.name();
  return std::nullopt;
}

/// Empty when `got` matches `want`, else why not.
std::string compare(const cleave::EvalTensor &got,
                    const cleave::EvalTensor &want) {
  if (got.index() != want.index())
    return "element kinds differ";
  return std::visit(
      [&](const auto &w) -> std::string {
        using T = std::decay_t<decltype(w)>;
        const T &g = std::get<T>(got);
        if (g.shape() != w.shape())
          return "shapes differ";
        for (int64_t i = 0; i < w.numElements(); ++i) {
          double a = double(g[i]), b = double(w[i]);
          bool ok = std::is_same_v<T, k::Tensor>
                        ? (std::isnan(b) ? std::isnan(a)
                                         : std::fabs(a - b) <=
                                               1e-5 + 1e-3 * std::fabs(b))
                        : a == b;
          if (!ok)
            return "element " + std::to_string(i) + ": " + std::to_string(a) +
                   ", expected " + std::to_string(b);
        }
        return "";
      },
      want);
}

struct Row {
  int passed = 0, failed = 0, unsupported = 0;
};

enum class Outcome { Passed, Failed, Unsupported };

/// The test's data sets, in order.
std::vector<fs::path> dataSets(const fs::path &dir) {
  std::vector<fs::path> sets;
  for (const auto &entry : fs::directory_iterator(dir))
    if (entry.is_directory() &&
        entry.path().filename().string().rfind("test_data_set_", 0) == 0)
      sets.push_back(entry.path());
  std::sort(sets.begin(), sets.end());
  return sets;
}

/// The model with its integer inputs (shapes, axes, pads, repeats, k) made
/// initializers from the test's data, where every data set gives the same
/// values: cleave plans static shapes, so such inputs must be known at
/// import, as exporters write them (constants). With `smallFloatVectors`,
/// float scalars and vectors of up to 8 values too (Resize's scales,
/// OneHot's depth, Range's bounds), for a model
/// refused for want of them. Written to a temporary file; empty when there
/// is nothing to promote.
std::string withIntegerInputsKnown(const fs::path &dir,
                                   const std::vector<fs::path> &sets,
                                   bool smallFloatVectors) {
  onnx::ModelProto model;
  if (!readProto(dir / "model.onnx", model) || sets.empty())
    return "";
  std::vector<std::string> initializers;
  for (const onnx::TensorProto &t : model.graph().initializer())
    initializers.push_back(t.name());
  onnx::GraphProto *graph = model.mutable_graph();
  google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> kept;
  bool promoted = false;
  int index = 0;
  for (const onnx::ValueInfoProto &v : graph->input()) {
    if (std::find(initializers.begin(), initializers.end(), v.name()) !=
        initializers.end()) {
      *kept.Add() = v;
      continue;
    }
    std::string file = "input_" + std::to_string(index++) + ".pb";
    onnx::TensorProto first;
    bool integer = readProto(sets[0] / file, first) &&
                   (first.data_type() == onnx::TensorProto::INT64 ||
                    first.data_type() == onnx::TensorProto::INT32 ||
                    (smallFloatVectors &&
                     (first.dims_size() == 0 ||
                      (first.dims_size() == 1 && first.dims(0) <= 8)) &&
                     first.data_type() == onnx::TensorProto::FLOAT));
    for (size_t s = 1; integer && s < sets.size(); ++s) {
      onnx::TensorProto other;
      integer = readProto(sets[s] / file, other) &&
                other.SerializeAsString() == first.SerializeAsString();
    }
    if (!integer) {
      *kept.Add() = v;
      continue;
    }
    first.set_name(v.name());
    *graph->add_initializer() = first;
    promoted = true;
  }
  if (!promoted)
    return "";
  graph->mutable_input()->Swap(&kept);
  fs::path out = fs::temp_directory_path() /
                 ("cleave-conformance-" + std::to_string(::getpid()) + "-" +
                  dir.filename().string() + ".onnx");
  std::ofstream os(out, std::ios::binary);
  if (!model.SerializeToOstream(&os))
    return "";
  return out.string();
}

/// The symbolic dimensions of the model's inputs bound to the sizes the
/// first data set gives them (a test's inputs are concrete).
cleave::ImportOptions boundDims(const fs::path &dir,
                                const std::vector<fs::path> &sets) {
  cleave::ImportOptions options;
  onnx::ModelProto model;
  if (sets.empty() || !readProto(dir / "model.onnx", model))
    return options;
  std::vector<std::string> initializers;
  for (const onnx::TensorProto &t : model.graph().initializer())
    initializers.push_back(t.name());
  int index = 0;
  for (const onnx::ValueInfoProto &v : model.graph().input()) {
    if (std::find(initializers.begin(), initializers.end(), v.name()) !=
        initializers.end())
      continue;
    onnx::TensorProto data;
    bool read = readProto(sets[0] / ("input_" + std::to_string(index++) +
                                     ".pb"),
                          data);
    const onnx::TensorShapeProto &shape = v.type().tensor_type().shape();
    if (!read || shape.dim_size() != data.dims_size())
      continue;
    for (int d = 0; d < shape.dim_size(); ++d)
      if (!shape.dim(d).dim_param().empty())
        options.dims.emplace(shape.dim(d).dim_param(), data.dims(d));
  }
  return options;
}

/// The raw bytes the executor reads for an input of `t`'s values in its
/// INPUT tensor's dtype: fp32 (or 16-bit floats rounded from them), or
/// int64 for integers.
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
  case cleave::plan::I64:
    return k::IndexTensor(shape, values(int64_t()));
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
  case cleave::plan::I32: {
    std::vector<int32_t> v = values(int32_t());
    return k::IndexTensor(shape, std::vector<int64_t>(v.begin(), v.end()));
  }
  case cleave::plan::BOOL:
    return k::MaskTensor(shape, values(uint8_t()));
  default:
    return std::nullopt;
  }
}

/// Runs `module` (consumed) as an inference plan on one CPU rank, with
/// each input read from a raw file as `cleave run --input` does; the
/// outputs, or empty with `why`.
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
  lo.step.optimizer = "none";
  lo.residualBlocks = true;
  // The batch is the first input's first dimension (the importer's static
  // shape; the lowering reads the model's batch there too): one microbatch
  // of all of it.
  bool batchFound = false;
  module.walk([&](cleave::graph::InputOp input) {
    auto type = mlir::cast<mlir::RankedTensorType>(input.getType());
    if (batchFound || type.getRank() == 0)
      return;
    lo.microbatchSize = type.getDimSize(0);
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
    std::ofstream(file, std::ios::binary) << rawInput(value, dtype->second);
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

Outcome runTest(const fs::path &dir, bool throughRuntime,
                std::string &detail) {
  mlir::MLIRContext ctx;
  std::string firstError;
  mlir::ScopedDiagnosticHandler handler(&ctx, [&](mlir::Diagnostic &d) {
    if (d.getSeverity() == mlir::DiagnosticSeverity::Error &&
        firstError.empty())
      firstError = d.str();
    return mlir::success();
  });
  std::vector<fs::path> sets = dataSets(dir);
  std::string promotedPath = withIntegerInputsKnown(dir, sets, false);
  std::string modelPath =
      promotedPath.empty() ? (dir / "model.onnx").string() : promotedPath;
  cleave::ImportOptions options = boundDims(dir, sets);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      cleave::importOnnxFile(ctx, modelPath, options);
  if (!module &&
      firstError.find("known at import time") != std::string::npos) {
    // An op that needs a float vector at import (Resize's scales): give
    // the test's short float vectors as initializers too.
    if (!promotedPath.empty())
      fs::remove(promotedPath);
    promotedPath = withIntegerInputsKnown(dir, sets, true);
    if (!promotedPath.empty()) {
      modelPath = promotedPath;
      firstError.clear();
      module = cleave::importOnnxFile(ctx, modelPath, options);
    }
  }
  onnx::ModelProto model;
  readProto(modelPath, model);
  if (!promotedPath.empty())
    fs::remove(promotedPath);
  if (!module) {
    detail = firstError.substr(0, firstError.find('\n'));
    return Outcome::Unsupported;
  }
  auto forward = module->lookupSymbol<mlir::func::FuncOp>("forward");
  // The inputs left, by their index in the original model (the data
  // files' numbering).
  onnx::ModelProto original;
  readProto(dir / "model.onnx", original);
  std::vector<std::string> initializers, remaining;
  for (const onnx::TensorProto &t : original.graph().initializer())
    initializers.push_back(t.name());
  for (const onnx::ValueInfoProto &v : model.graph().input())
    remaining.push_back(v.name());
  std::vector<std::pair<std::string, int>> inputs;
  int index = 0;
  for (const onnx::ValueInfoProto &v : original.graph().input()) {
    if (std::find(initializers.begin(), initializers.end(), v.name()) !=
        initializers.end())
      continue;
    if (std::find(remaining.begin(), remaining.end(), v.name()) !=
        remaining.end())
      inputs.push_back({v.name(), index});
    ++index;
  }
  int count = 0;
  fs::path scratch = fs::temp_directory_path() /
                     ("cleave-conformance-" + std::to_string(getpid()));
  fs::create_directories(scratch);
  struct Cleanup {
    fs::path dir;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup{scratch};
  for (const fs::path &set : sets) {
    ++count;
    cleave::GraphEvaluator eval;
    for (const auto &[name, i] : inputs) {
      onnx::TensorProto t;
      fs::path file = set / ("input_" + std::to_string(i) + ".pb");
      if (!fs::exists(file))
        continue; // an optional input left out
      std::string why;
      std::optional<cleave::EvalTensor> value;
      if (!readProto(file, t) || !(value = toEval(t, why))) {
        detail = "input " + std::to_string(i) + ": " + why;
        return Outcome::Unsupported;
      }
      eval.bindings[name] = *value;
    }
    firstError.clear();
    mlir::FailureOr<std::vector<cleave::EvalTensor>> results =
        eval.run(forward);
    if (mlir::failed(results)) {
      detail = "evaluation: " + firstError.substr(0, firstError.find('\n'));
      return Outcome::Failed;
    }
    // The same through a compiled inference plan and the executor.
    std::vector<cleave::EvalTensor> ran;
    std::string why;
    if (throughRuntime) {
      mlir::OwningOpRef<mlir::ModuleOp> copy = module->clone();
      ran = runOnRuntime(*copy, eval.bindings, scratch, why);
    }
    if (throughRuntime && ran.size() != results->size()) {
      detail = set.filename().string() + " runtime: " +
               (why.empty() ? firstError.substr(0, firstError.find('\n'))
                            : why);
      return Outcome::Failed;
    }
    for (size_t i = 0; i < results->size(); ++i) {
      onnx::TensorProto t;
      std::string why;
      std::optional<cleave::EvalTensor> want;
      fs::path file = set / ("output_" + std::to_string(i) + ".pb");
      if (!readProto(file, t) || !(want = toEval(t, why))) {
        detail = "output " + std::to_string(i) + ": " + why;
        return Outcome::Unsupported;
      }
      if (std::string diff = compare((*results)[i], *want); !diff.empty()) {
        detail = set.filename().string() + " output " +
                 std::to_string(i) + ": " + diff;
        return Outcome::Failed;
      }
      if (std::string diff = throughRuntime ? compare(ran[i], *want) : "";
          !diff.empty()) {
        detail = set.filename().string() + " runtime output " +
                 std::to_string(i) + ": " + diff;
        return Outcome::Failed;
      }
    }
  }
  if (count == 0) {
    detail = "no test data";
    return Outcome::Unsupported;
  }
  return Outcome::Passed;
}

} // namespace

int main(int argc, char **argv) {
  std::string dataDir = "/usr/share/libonnx-testdata/data/node", filter;
  std::string exceptionsFile;
  bool listFailures = false, listUnsupported = false, throughRuntime = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--filter" && i + 1 < argc)
      filter = argv[++i];
    else if (arg == "--failures")
      listFailures = true;
    else if (arg == "--unsupported")
      listUnsupported = true;
    else if (arg == "--runtime")
      throughRuntime = true;
    else if (arg == "--exceptions" && i + 1 < argc)
      exceptionsFile = argv[++i];
    else if (!arg.empty() && arg[0] != '-')
      dataDir = arg;
    else {
      std::fprintf(stderr,
                   "usage: cleave-onnx-conformance [DATA_DIR] [--filter "
                   "TEXT] [--failures] [--unsupported] [--exceptions "
                   "FILE] [--runtime]\n");
      return 2;
    }
  }
  if (!fs::is_directory(dataDir)) {
    std::fprintf(stderr,
                 "cleave-onnx-conformance: error: %s: no such directory "
                 "(install libonnx-testdata)\n",
                 dataDir.c_str());
    return 77;
  }
  std::map<std::string, std::string> excused;
  if (!exceptionsFile.empty()) {
    std::ifstream in(exceptionsFile);
    if (!in) {
      std::fprintf(stderr, "cleave-onnx-conformance: error: %s: cannot read\n",
                   exceptionsFile.c_str());
      return 2;
    }
    for (std::string line; std::getline(in, line);) {
      if (line.empty() || line[0] == '#')
        continue;
      size_t space = line.find_first_of(" \t");
      excused[line.substr(0, space)] =
          space == std::string::npos ? "" : line.substr(space + 1);
    }
  }
  std::vector<std::string> unexcused;
  std::vector<fs::path> dirs;
  for (const auto &entry : fs::directory_iterator(dataDir))
    if (entry.is_directory() &&
        entry.path().filename().string().find(filter) != std::string::npos)
      dirs.push_back(entry.path());
  std::sort(dirs.begin(), dirs.end());
  std::map<std::string, Row> rows;
  Row total;
  for (const fs::path &dir : dirs) {
    onnx::ModelProto model;
    if (!readProto(dir / "model.onnx", model) ||
        model.graph().node_size() == 0)
      continue;
    std::string op = model.graph().node(0).op_type();
    std::string detail;
    Outcome outcome = runTest(dir, throughRuntime, detail);
    Row &row = rows[op];
    (outcome == Outcome::Passed   ? row.passed
     : outcome == Outcome::Failed ? row.failed
                                  : row.unsupported)++;
    (outcome == Outcome::Passed   ? total.passed
     : outcome == Outcome::Failed ? total.failed
                                  : total.unsupported)++;
    if (outcome == Outcome::Failed && !excused.count(dir.filename().string()))
      unexcused.push_back(dir.filename().string() + ": " + detail);
    if (listFailures && outcome == Outcome::Failed)
      std::printf("FAILED %s: %s\n", dir.filename().c_str(), detail.c_str());
    if (listUnsupported && outcome == Outcome::Unsupported)
      std::printf("UNSUPPORTED %s: %s\n", dir.filename().c_str(),
                  detail.c_str());
  }
  std::printf("%-28s %7s %7s %12s\n", "op type", "passed", "failed",
              "unsupported");
  for (const auto &[op, row] : rows)
    std::printf("%-28s %7d %7d %12d\n", op.c_str(), row.passed, row.failed,
                row.unsupported);
  std::printf("%-28s %7d %7d %12d\n", "total", total.passed, total.failed,
              total.unsupported);
  for (const std::string &failure : unexcused)
    std::fprintf(stderr, "cleave-onnx-conformance: error: %s\n",
                 failure.c_str());
  return unexcused.empty() ? 0 : 1;
}
