//===- OnnxPoolBySlices.h - Pooling as a fold over strided slices -*- C++ -*-===//
//
// Internal to the ONNX importer. graph.max_pool2d and graph.avg_pool2d
// cover the pooling real models use (1-D and 2-D, float, undilated); the
// rest of ONNX's MaxPool and AveragePool (3-D and higher, dilations,
// integer inputs, MaxPool's Indices output) is written as one strided
// slice of the padded input per kernel tap, folded by max or add.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_IMPORTERS_ONNX_ONNXPOOLBYSLICES_H
#define CLEAVE_IMPORTERS_ONNX_ONNXPOOLBYSLICES_H

#include "OnnxGraphImporter.h"

namespace cleave::onnx_import {

/// Whether a MaxPool or AveragePool node needs the slice form: an input
/// of more than 2 spatial axes, a dilation other than 1, a non-float
/// input, or a used Indices output.
bool poolNeedsSlices(NodeContext &ctx);

/// MaxPool (`isMax`) or AveragePool over any spatial rank, with
/// dilations, auto_pad, ceil_mode, count_include_pad and, for MaxPool,
/// the Indices output (storage_order 0 or 1).
llvm::LogicalResult convertPoolBySlices(NodeContext &ctx, bool isMax);

} // namespace cleave::onnx_import

#endif // CLEAVE_IMPORTERS_ONNX_ONNXPOOLBYSLICES_H
