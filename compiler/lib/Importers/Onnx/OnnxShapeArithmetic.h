//===- OnnxShapeArithmetic.h - Fold shape arithmetic in a model -*- C++ -*-===//
//
// Exporters of old opsets (paddle2onnx at opset 9-11, among others) compute
// the targets of Reshape and Expand from the input's own shape: Shape,
// Gather, Unsqueeze, Concat. libonnx types what follows only with data
// propagation, which its 1.12 release offers for opset 13 schemas alone, so
// ONNX's version converter, whose Softmax 12 -> 13 adapter needs its
// input's rank, fails on those graphs. Once `--dim` has made the inputs
// static, that arithmetic is constant: this folds it in the model itself,
// before conversion, into int64 initializers.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_IMPORTERS_ONNX_ONNXSHAPEARITHMETIC_H
#define CLEAVE_IMPORTERS_ONNX_ONNXSHAPEARITHMETIC_H

#include "onnx/onnx_pb.h"

namespace cleave::onnx_import {

/// Replaces every node of `model`'s main graph that computes an integer
/// tensor from known values (int64 initializers, Constant nodes, the
/// Shape of a value whose shape is static in the graph's inputs,
/// initializers or value_info) with an initializer holding its result;
/// runs ONNX shape inference between rounds, so shapes it reveals feed
/// the next. Covers Constant, Shape, Gather, Concat, Unsqueeze, Squeeze,
/// Cast, Add, Sub, Mul, Div. Returns the number of nodes folded.
int foldShapeArithmetic(onnx::ModelProto &model);

} // namespace cleave::onnx_import

#endif // CLEAVE_IMPORTERS_ONNX_ONNXSHAPEARITHMETIC_H
