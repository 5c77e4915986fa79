//===- OnnxExternalData.h - Initializers stored beside the model -*- C++ -*-===//
//
// ONNX keeps weights outside the model file when the model is over 2 GiB
// (protobuf's limit) or when the exporter is told to: each such
// initializer names a `location` relative to the model's folder, and an
// `offset` and `length` in it (the dynamo exporter writes MODEL.onnx.data).
// The importer reads those bytes into the initializer as if they had been
// inline, so everything after it sees one kind of tensor.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_IMPORTERS_ONNX_ONNXEXTERNALDATA_H
#define CLEAVE_IMPORTERS_ONNX_ONNXEXTERNALDATA_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include "onnx/onnx_pb.h"

#include <string>
#include <vector>

namespace cleave::onnx_import {

/// What loadExternalData did: the data files that do not exist (their
/// initializers keep no values: a weight-less graph, planned from shapes
/// and initialised from scratch) and how many tensors it read.
struct ExternalDataReport {
  std::vector<std::string> missingFiles;
  int64_t tensorsWithoutData = 0;
  int64_t tensorsRead = 0;
  int64_t bytesRead = 0;
};

/// Reads every external initializer of `graph` whose data file exists
/// beside the model (`modelDir`) into its raw_data. An error names the
/// initializer and the file: a location outside the model's folder, an
/// offset or length past the file's end, a length that does not match the
/// tensor's dims, a file that cannot be read.
llvm::Expected<ExternalDataReport> loadExternalData(onnx::GraphProto &graph,
                                                    llvm::StringRef modelDir);

} // namespace cleave::onnx_import

#endif // CLEAVE_IMPORTERS_ONNX_ONNXEXTERNALDATA_H
