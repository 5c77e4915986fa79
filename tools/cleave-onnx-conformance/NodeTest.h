//===- NodeTest.h - One node test: import, run, compare --------*- C++ -*-===//

#ifndef CLEAVE_TOOLS_ONNX_CONFORMANCE_NODETEST_H
#define CLEAVE_TOOLS_ONNX_CONFORMANCE_NODETEST_H

#include <filesystem>
#include <string>

namespace cleave::conformance {

enum class Outcome { Passed, Failed, Unsupported };

/// Imports the test in `dir` (its integer inputs made initializers where
/// every data set agrees, symbolic dimensions bound to the first set's),
/// runs it on every data set with the reference evaluator and, with
/// `throughRuntime`, as an inference plan on the executor, and compares
/// with ONNX's tolerances; `detail` says why a test failed or is
/// unsupported.
Outcome runTest(const std::filesystem::path &dir, bool throughRuntime,
                std::string &detail);

} // namespace cleave::conformance

#endif // CLEAVE_TOOLS_ONNX_CONFORMANCE_NODETEST_H
