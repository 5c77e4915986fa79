//===- OnnxEvalUtil.h - Running imported test models ------------*- C++ -*-===//
//
// The ONNX tests that run what they import through the graph evaluator.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TEST_UNIT_ONNXEVALUTIL_H
#define CLEAVE_TEST_UNIT_ONNXEVALUTIL_H

#include "OnnxTestUtil.h"

#include "cleave/Evaluator/GraphEvaluator.h"

#include <cmath>

namespace cleave::testing {

/// x[begin + e] normalised over its `n` values (population variance,
/// epsilon 1e-5), as GroupNormalization normalises one group.
inline double normalisedInGroup(const kernels::Tensor &x, int64_t begin,
                                int64_t n, int64_t e) {
  double mean = 0, var = 0;
  for (int64_t i = 0; i < n; ++i)
    mean += x[begin + i] / double(n);
  for (int64_t i = 0; i < n; ++i)
    var += (x[begin + i] - mean) * (x[begin + i] - mean) / double(n);
  return (x[begin + e] - mean) / std::sqrt(var + 1e-5);
}

/// Imports `m` and runs @forward with input "x" bound to `x`; its float
/// outputs (none after a failure, which the test reports).
inline std::vector<kernels::Tensor> runWithX(ModelBuilder &m,
                                             const kernels::Tensor &x) {
  mlir::MLIRContext ctx;
  Import import = m.import(ctx);
  EXPECT_TRUE(import.module) << import.allErrors();
  if (!import.module)
    return {};
  GraphEvaluator eval;
  eval.bindings["x"] = x;
  auto results = eval.run(import.forward());
  EXPECT_TRUE(mlir::succeeded(results));
  std::vector<kernels::Tensor> out;
  if (mlir::succeeded(results))
    for (auto &r : *results)
      out.push_back(std::get<kernels::Tensor>(r));
  return out;
}

} // namespace cleave::testing

#endif // CLEAVE_TEST_UNIT_ONNXEVALUTIL_H
