//===- OnnxGeluPattern.h - Decomposed exact GELU in ONNX --------*- C++ -*-===//
//
// Exporters before opset 20 (PyTorch's nn.GELU, Hugging Face's gelu) spell
// the exact GELU as
//   y = Mul(Mul(x, Add(Erf(Div(x, sqrt 2)), 1)), 0.5)
// or with the half taken first, Mul(Mul(x, 0.5), Add(Erf(...), 1)), and
// Mul(x, 1/sqrt 2) for the Div. Imported op by op, the backward pass would
// stash four intermediates the width of the MLP for every layer (on the
// exported ViT-B/16 at batch 32: 2.5 of its 5.9 GiB of stash), where
// graph.gelu keeps only its input; and the runtime could not fuse it into
// the GEMM. The importer recognises the exact pattern and imports the
// primitive ops whenever a constant differs.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_IMPORTERS_ONNX_ONNXGELUPATTERN_H
#define CLEAVE_IMPORTERS_ONNX_ONNXGELUPATTERN_H

#include "OnnxGraphImporter.h"

#include <optional>
#include <vector>

namespace cleave::onnx_import {

/// Node indices of one decomposed GELU.
struct GeluMatch {
  /// Div(x, sqrt 2) or Mul(x, 1/sqrt 2); Erf; Add(., 1).
  int scale = -1, erf = -1, addOne = -1;
  /// Mul(x, 1 + erf) then Mul(., 0.5); or Mul(x, 0.5) then Mul(., 1 + erf).
  int mulInput = -1, mulHalf = -1;
  bool halfFirst = false;

  /// Every node of the match, in graph order.
  llvm::SmallVector<int> nodes() const;
  /// The node whose output graph.gelu replaces.
  int last() const { return halfFirst ? mulInput : mulHalf; }
};

/// Finds decomposed GELUs by structure alone: op types and edges, and no
/// reader outside the match of any intermediate value.
std::vector<GeluMatch> findGelus(const GraphImporter &importer);

/// Builds graph.gelu for `match` once every input is known; false,
/// creating nothing, when a constant is not the GELU's (the caller then
/// converts the nodes one by one).
llvm::FailureOr<bool> buildGelu(GraphImporter &importer,
                                const GeluMatch &match);

} // namespace cleave::onnx_import

#endif // CLEAVE_IMPORTERS_ONNX_ONNXGELUPATTERN_H
