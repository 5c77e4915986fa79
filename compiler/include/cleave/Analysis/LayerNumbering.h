//===- LayerNumbering.h - Which transformer layer an op belongs to -*- C++ -*-===//
//
// Pipeline splitting and recomputation both work in layers, and both read
// them off the parameters' names: "transformer.h.3.attn.q" belongs to layer
// 3. An op belongs to the latest layer among its operands.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_ANALYSIS_LAYERNUMBERING_H
#define CLEAVE_ANALYSIS_LAYERNUMBERING_H

#include "mlir/IR/Block.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>

namespace cleave {

/// The layer a parameter name belongs to: its first dotted component that
/// is an integer or ends in "layer_<integer>" or "block_<integer>"
/// ("transformer.h.3.attn.q" -> 3, torchvision's
/// "encoder.layers.encoder_layer_3.mlp.0.weight" -> 3), or -1; -1 too for
/// names the exporters generate ("onnx::MatMul_1573", "val_313").
int64_t layerOfParamName(llvm::StringRef name);

/// A name an exporter made up for an initializer (the TorchScript
/// exporter's "onnx::MatMul_1573", the dynamo optimiser's "val_313" or
/// "embedding_1": no module path): it says nothing about where the
/// parameter sits.
bool isGeneratedParamName(llvm::StringRef name);

/// Ops before the first layer (embeddings) and after the last (the final
/// norm, head and loss).
constexpr int64_t kBeforeLayers = -1;
constexpr int64_t kAfterLayers = INT64_MAX / 4;

/// Numbers the ops of `block` for which `include` holds, in block order:
/// a parameter by its name, any other op by the latest layer of its
/// included operands. An op inside the layers that reads a named parameter
/// without a layer number starts the tail (kAfterLayers), which its users
/// inherit.
llvm::DenseMap<mlir::Operation *, int64_t>
numberLayers(mlir::Block &block,
             llvm::function_ref<bool(mlir::Operation *)> include);

/// Layers read off a graph's structure instead of its names, for graphs
/// whose repeated blocks are not numbered in their parameters' names (a
/// ResNet's "layer2.3.conv1" names a block by two numbers; an exported one
/// has only "onnx::Conv_497"). A cut is an op after which no value defined
/// so far but its result is read again (sources aside: parameters, inputs
/// and constants). The ops between two cuts form a segment; a segment of
/// more than one op is a block (a residual block: its shortcut keeps a
/// second value alive), numbered 0, 1, ... in order. Ops before the first
/// block get kBeforeLayers, ops after the last kAfterLayers, and single ops
/// between two blocks (a chain's downsampling) the block before them.
///
/// With `include`, only the ops for which it holds are numbered and read
/// values: a training step's forward ops are numbered as the forward
/// function's were, its backward ops (which read the forward values again)
/// left out.
struct BlockNumbering {
  llvm::DenseMap<mlir::Operation *, int64_t> layer;
  int64_t numBlocks = 0;
};
BlockNumbering numberResidualBlocks(
    mlir::Block &block,
    llvm::function_ref<bool(mlir::Operation *)> include = nullptr);

} // namespace cleave

#endif // CLEAVE_ANALYSIS_LAYERNUMBERING_H
