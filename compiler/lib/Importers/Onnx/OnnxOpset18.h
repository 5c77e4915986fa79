//===- OnnxOpset18.h - Opset-18 models in their opset-17 form ---*- C++ -*-===//
//
// Internal to the ONNX importer. Debian bookworm's libonnx (1.12) checks,
// infers and converts up to opset 17, while PyTorch's dynamo exporter and
// current tools write opset 18. Opset 18 changed few operators; this pass
// rewrites a model's graph into the opset-17 forms of those (Reduce* and
// Pad with their axes as attributes or expanded, Split without
// num_outputs, Resize without its new default attributes, and
// GroupNormalization, new in 18, as InstanceNormalization over the groups)
// and refuses, by name, what has no opset-17 form.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_IMPORTERS_ONNX_ONNXOPSET18_H
#define CLEAVE_IMPORTERS_ONNX_ONNXOPSET18_H

#include "onnx/onnx_pb.h"

#include "llvm/Support/Error.h"

namespace cleave::onnx_import {

/// Rewrites `model` (its default-domain opset 18) to opset 17: the graph
/// and its subgraphs, the opset import, and an IR version libonnx 1.12
/// reads. An error names the node that has no opset-17 form.
llvm::Error downgradeOpset18(onnx::ModelProto &model);

} // namespace cleave::onnx_import

#endif // CLEAVE_IMPORTERS_ONNX_ONNXOPSET18_H
