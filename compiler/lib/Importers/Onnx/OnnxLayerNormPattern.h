//===- OnnxLayerNormPattern.h - Decomposed LayerNorm in ONNX ----*- C++ -*-===//
//
// Exporters before opset 17 spell LayerNorm as
//   m = ReduceMean(x); d = Sub(x, m); v = ReduceMean(Pow(d, 2));
//   y = Div(d, Sqrt(Add(v, eps))) [; y = Mul(y, scale)] [; y = Add(y, bias)]
// Planning prices graph.layer_norm as one op with its own sharding rules,
// so the importer recognises the exact pattern and imports the primitive
// ops whenever anything differs.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_IMPORTERS_ONNX_ONNXLAYERNORMPATTERN_H
#define CLEAVE_IMPORTERS_ONNX_ONNXLAYERNORMPATTERN_H

#include "OnnxGraphImporter.h"

#include <vector>

namespace cleave::onnx_import {

/// Node indices of one decomposed LayerNorm; -1 for absent optional nodes.
struct LayerNormMatch {
  int reduceMean = -1, sub = -1, pow = -1, reduceVar = -1, addEps = -1,
      sqrt = -1, div = -1, mulScale = -1, addBias = -1;

  /// Every node of the match, in graph order.
  llvm::SmallVector<int> nodes() const;
  /// The node whose output the LayerNorm replaces; all inputs of the match
  /// are defined before it.
  int last() const { return nodes().back(); }
};

/// Finds decomposed LayerNorms by structure alone: op types and edges, and
/// no reader outside the match of any intermediate value.
std::vector<LayerNormMatch> findLayerNorms(const GraphImporter &importer);

/// Builds graph.layer_norm for `match` once every input is known. Returns
/// std::nullopt, creating nothing, when the values do not fit (exponent
/// other than 2, non-scalar epsilon, axes not trailing); the caller then
/// converts the nodes one by one. Otherwise binds the output of the last
/// absorbed node and returns the nodes still to convert (a scale Mul or a
/// bias Add whose operand does not have the normalized shape).
llvm::FailureOr<std::optional<llvm::SmallVector<int>>>
buildLayerNorm(GraphImporter &importer, const LayerNormMatch &match);

} // namespace cleave::onnx_import

#endif // CLEAVE_IMPORTERS_ONNX_ONNXLAYERNORMPATTERN_H
