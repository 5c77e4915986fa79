//===- OnnxTiedWeights.h - Initializers that hold the same values -*- C++ -*-===//
//
// An exporter may write one PyTorch parameter as two initializers (a tied
// embedding and output head, one of them transposed): cleave then trains
// two tensors where the model had one, and their values drift apart. The
// values say so: two initializers whose bytes are equal, or one equal to
// the other's transpose, are reported so the user can tie or freeze them.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_IMPORTERS_ONNX_ONNXTIEDWEIGHTS_H
#define CLEAVE_IMPORTERS_ONNX_ONNXTIEDWEIGHTS_H

#include "onnx/onnx_pb.h"

#include <string>
#include <vector>

namespace cleave::onnx_import {

/// Two initializers of `graph` with equal values (`transposed`: the second
/// is the first's transpose, both 2-D).
struct EqualWeights {
  std::string first, second;
  bool transposed = false;
};

/// The pairs of floating-point initializers (with inline data, at least
/// 16 elements, not all one value: freshly initialised norm scales and
/// biases are all equal and mean nothing) whose values are equal or
/// transposed, by hash and then byte comparison.
std::vector<EqualWeights> findEqualWeights(const onnx::GraphProto &graph);

} // namespace cleave::onnx_import

#endif // CLEAVE_IMPORTERS_ONNX_ONNXTIEDWEIGHTS_H
