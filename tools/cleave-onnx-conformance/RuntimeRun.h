//===- RuntimeRun.h - A node test as a plan on the executor ----*- C++ -*-===//

#ifndef CLEAVE_TOOLS_ONNX_CONFORMANCE_RUNTIMERUN_H
#define CLEAVE_TOOLS_ONNX_CONFORMANCE_RUNTIMERUN_H

#include "cleave/Evaluator/GraphEvaluator.h"

#include "mlir/IR/BuiltinOps.h"

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace cleave::conformance {

/// Runs `module` (consumed) as an inference plan on one CPU rank, with
/// each input read from a raw file as `cleave run --input` does; the
/// outputs, or empty with `why`.
std::vector<cleave::EvalTensor>
runOnRuntime(mlir::ModuleOp module,
             const std::map<std::string, cleave::EvalTensor> &inputs,
             const std::filesystem::path &scratch, std::string &why);

} // namespace cleave::conformance

#endif // CLEAVE_TOOLS_ONNX_CONFORMANCE_RUNTIMERUN_H
