//===- OnnxCompose.h - Writing one ONNX node as several graph ops -*- C++ -*-===//
//
// Internal to the ONNX importer: the helpers of the converters that write
// an operator as a chain of graph ops (OnnxActivationConverters.cpp,
// OnnxLayoutConverters.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_IMPORTERS_ONNX_ONNXCOMPOSE_H
#define CLEAVE_IMPORTERS_ONNX_ONNXCOMPOSE_H

#include "OnnxGraphImporter.h"

namespace cleave::onnx_import {

/// Input `i` of the node as a run-time value, which must be floating point
/// (else an error naming `what`); null after an error.
inline mlir::Value floatOperand(NodeContext &ctx, unsigned i,
                                const char *what) {
  mlir::Value x = ctx.getValue(i);
  if (!x)
    return {};
  if (!mlir::isa<mlir::FloatType>(
          mlir::cast<mlir::RankedTensorType>(x.getType()).getElementType())) {
    ctx.emitError() << what << " must be floating point";
    return {};
  }
  return x;
}

/// The result of a new graph op, or null when an operand is null (an
/// earlier step failed) or the op does not verify (diagnosed).
namespace detail {
inline bool isNull(mlir::Value v) { return !v; }
template <typename T> bool isNull(const T &) { return false; }
} // namespace detail

template <typename OpTy, typename... Args>
mlir::Value compose(NodeContext &ctx, Args... args) {
  if ((detail::isNull(args) || ...))
    return {};
  llvm::FailureOr<OpTy> op = ctx.create<OpTy>(args...);
  return mlir::succeeded(op) ? (*op)->getResult(0) : mlir::Value();
}

} // namespace cleave::onnx_import

#endif // CLEAVE_IMPORTERS_ONNX_ONNXCOMPOSE_H
