//===- ModelSummary.h - Size and work of a model ----------------*- C++ -*-===//
//
// What `cleave summary` reports: parameters, FLOPs, activation bytes and the
// op histogram, computed from the ops' CostOpInterface.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_ANALYSIS_MODELSUMMARY_H
#define CLEAVE_ANALYSIS_MODELSUMMARY_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <string>
#include <vector>

namespace cleave {

struct ModelSummary {
  struct TensorInfo {
    std::string name;
    std::string type;
  };
  std::string model;
  std::string source;
  std::vector<TensorInfo> inputs;
  std::vector<std::string> outputs;
  /// Samples per step: the leading dimension of the first input.
  int64_t samples = 1;
  int64_t trainableParams = 0;
  int64_t frozenParams = 0;
  int64_t paramBytes = 0;
  /// Parameters whose weights the module holds (imported initializers).
  int64_t paramsWithValues = 0;
  double forwardFlops = 0;
  /// FLOPs of one training step (forward, backward, optimizer), counted
  /// on the module's @train_step when it has one (see
  /// `trainingFlopsCounted`); otherwise estimated: each matmul and
  /// convolution costs twice its forward FLOPs backward (one GEMM per
  /// operand gradient), every other op once.
  double trainingFlops = 0;
  bool trainingFlopsCounted = false;
  int64_t bytesRead = 0;
  int64_t bytesWritten = 0;
  /// Bytes of every forward intermediate (no reuse): what a step without
  /// recomputation keeps for the backward pass, at most.
  int64_t activationBytes = 0;
  std::map<std::string, int64_t> opHistogram;
};

/// Summarises `@forward` of `module`.
ModelSummary summarizeModel(mlir::ModuleOp module);

llvm::json::Value toJson(const ModelSummary &summary);
void printSummary(const ModelSummary &summary, llvm::raw_ostream &os);

} // namespace cleave

#endif // CLEAVE_ANALYSIS_MODELSUMMARY_H
