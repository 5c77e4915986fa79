//===- NodeTest.cpp - One node test: import, evaluate, run, compare -------===//

#include "NodeTest.h"
#include "RuntimeRun.h"
#include "TestData.h"

#include "cleave/Dialect/Graph/IR/GraphOps.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <cstdio>

#include <unistd.h>

namespace fs = std::filesystem;
namespace k = cleave::kernels;

namespace cleave::conformance {

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
      if (!readProto(file, t) ||
          !matchDeclaredType(t, declaredInput(original, name), why) ||
          !(value = toEval(t, why))) {
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
      if (!readProto(file, t) ||
          (int(i) < original.graph().output_size() &&
           !matchDeclaredType(t, original.graph().output(i), why)) ||
          !(want = toEval(t, why))) {
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

} // namespace cleave::conformance
