//===- TestData.h - A node test's model and data sets -----------*- C++ -*-===//

#ifndef CLEAVE_TOOLS_ONNX_CONFORMANCE_TESTDATA_H
#define CLEAVE_TOOLS_ONNX_CONFORMANCE_TESTDATA_H

#include "cleave/Evaluator/GraphEvaluator.h"
#include "cleave/Importers/OnnxImporter.h"

#include "onnx/onnx_pb.h"

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

namespace cleave::conformance {

template <typename Proto>
bool readProto(const std::filesystem::path &path, Proto &out) {
  std::ifstream in(path, std::ios::binary);
  return in && out.ParseFromIstream(&in);
}

/// A TensorProto as the evaluator's tensor, for the types node tests use.
std::optional<cleave::EvalTensor> toEval(const onnx::TensorProto &t,
                                         std::string &why);

/// The graph input of `model` named `name` (an empty one if none is).
const onnx::ValueInfoProto &declaredInput(const onnx::ModelProto &model,
                                          const std::string &name);

/// Checks a data set's tensor against the element type the model declares
/// for it. Old node tests store bfloat16 data as its uint16 words, which
/// are relabelled (the storage is the same); any other difference is an
/// error, so that data of one type never feeds a tensor of another.
bool matchDeclaredType(onnx::TensorProto &t, const onnx::ValueInfoProto &v,
                       std::string &why);

/// Empty when `got` matches `want`, else why not.
std::string compare(const cleave::EvalTensor &got,
                    const cleave::EvalTensor &want);

/// The test's data sets, in order.
std::vector<std::filesystem::path> dataSets(const std::filesystem::path &dir);

/// The model with its integer inputs (shapes, axes, pads, repeats, k) made
/// initializers from the test's data, where every data set gives the same
/// values: cleave plans static shapes, so such inputs must be known at
/// import, as exporters write them (constants). With `smallFloatVectors`,
/// float scalars and vectors of up to 8 values and bool scalars too
/// (Resize's scales, OneHot's depth, Range's bounds, Dropout's ratio and
/// training mode), for a model refused for want of them.
/// Written to a temporary file; empty when there is nothing to promote.
std::string
withIntegerInputsKnown(const std::filesystem::path &dir,
                       const std::vector<std::filesystem::path> &sets,
                       bool smallFloatVectors);

/// The symbolic dimensions of the model's inputs bound to the sizes the
/// first data set gives them (a test's inputs are concrete).
cleave::ImportOptions
boundDims(const std::filesystem::path &dir,
          const std::vector<std::filesystem::path> &sets);

} // namespace cleave::conformance

#endif // CLEAVE_TOOLS_ONNX_CONFORMANCE_TESTDATA_H
