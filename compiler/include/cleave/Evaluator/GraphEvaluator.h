//===- GraphEvaluator.h - Run a graph op by op on the CPU kernels -*- C++ -*-===//
//
// A reference interpreter for the graph dialect: it runs a function op by op
// on runtime/kernels (the same kernels the CPU backend uses), so tests can
// check the training-step pass against finite differences and importers
// against onnxruntime. It favours clarity over speed: every value gets its
// own buffer.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_EVALUATOR_GRAPHEVALUATOR_H
#define CLEAVE_EVALUATOR_GRAPHEVALUATOR_H

#include "cleave/runtime/kernels/Tensor.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <map>
#include <string>
#include <variant>
#include <vector>

namespace cleave {

/// A tensor as the evaluator holds it: float (any float element type is
/// computed in fp32), index (any integer type) or boolean.
using EvalTensor = std::variant<kernels::Tensor, kernels::IndexTensor,
                                kernels::MaskTensor>;

class GraphEvaluator {
public:
  /// Values of graph.input, graph.param and graph.optimizer_state ops, by
  /// name. A parameter without a binding uses its `value` attribute; an
  /// optimizer state without one starts at zero.
  std::map<std::string, EvalTensor> bindings;

  /// Runs `func` and returns its results. On failure a diagnostic names the
  /// op that could not run.
  mlir::FailureOr<std::vector<EvalTensor>> run(mlir::func::FuncOp func);
};

} // namespace cleave

#endif // CLEAVE_EVALUATOR_GRAPHEVALUATOR_H
