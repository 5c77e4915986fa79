//===- OnnxTensors.h - Host-side tensors of the ONNX importer ---*- C++ -*-===//
//
// The importer evaluates shape arithmetic, masks and other small constant
// subgraphs on the host, because exporters compute Reshape and Slice targets
// at run time (Shape -> Gather -> Concat) and the graph dialect needs them
// static. HostTensor is that host-side value; this file also reads ONNX
// TensorProtos and turns tensors into MLIR attributes.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_IMPORTERS_ONNX_ONNXTENSORS_H
#define CLEAVE_IMPORTERS_ONNX_ONNXTENSORS_H

#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

#include "onnx/onnx_pb.h"

#include <cstdint>
#include <vector>

namespace cleave::onnx_import {

using Shape = llvm::SmallVector<int64_t, 6>;

/// Tensors with more elements are not computed on the host: folding them
/// would cost memory and time for no benefit to planning.
constexpr int64_t kMaxHostElements = int64_t(1) << 20;

/// Parameter values above this size become DenseResourceElementsAttr, which
/// prints as a handle instead of megabytes of hex inside the op.
constexpr int64_t kResourceThresholdBytes = int64_t(1) << 20;

/// Whether a float32 tensor with inline data holds a non-finite value or
/// one of magnitude 1e30 or more: a mask's fill, never a weight.
bool holdsMaskFill(const onnx::TensorProto &tensor);

/// Whether ONNX data type `dtype` (a TensorProto::DataType) is a
/// floating-point type.
bool isFloatType(int32_t dtype);
/// Whether the importer handles ONNX data type `dtype` (floats, integers
/// and bool; not strings or complex numbers).
bool isSupportedType(int32_t dtype);
/// Name of an ONNX data type for messages ("float", "int64", ...).
llvm::StringRef dataTypeName(int32_t dtype);
/// The MLIR element type of an ONNX data type, or null when the graph
/// dialect cannot hold it (strings, complex numbers).
mlir::Type getElementType(mlir::MLIRContext *ctx, int32_t dtype);
/// Product of `shape` (1 for a scalar).
int64_t product(llvm::ArrayRef<int64_t> shape);
/// "[2, 3, 4]".
std::string shapeToString(llvm::ArrayRef<int64_t> shape);

/// A tensor whose elements the importer knows: shape arithmetic, masks,
/// Constant nodes and integer initializers.
struct HostTensor {
  int32_t dtype = onnx::TensorProto::INT64;
  Shape shape;
  /// Row-major elements: integers and booleans (as 0/1) in `ints`,
  /// floating-point values in `floats`; the other vector is empty.
  std::vector<int64_t> ints;
  std::vector<double> floats;

  bool isFloat() const { return isFloatType(dtype); }
  int64_t size() const { return product(shape); }
  double getDouble(int64_t i) const {
    return isFloat() ? floats[i] : static_cast<double>(ints[i]);
  }
  int64_t getInt(int64_t i) const {
    return isFloat() ? static_cast<int64_t>(floats[i]) : ints[i];
  }

  /// A zero-filled tensor of `dtype` and `shape`.
  static HostTensor zeros(int32_t dtype, llvm::ArrayRef<int64_t> shape);
  /// A 1-D int64 tensor (shapes, axes).
  static HostTensor int64Vector(llvm::ArrayRef<int64_t> values);
  /// Copies element `from` of `src` (same kind) into element `to`.
  void copyElement(int64_t to, const HostTensor &src, int64_t from) {
    if (isFloat())
      floats[to] = src.floats[from];
    else
      ints[to] = src.ints[from];
  }
};

/// Reads an ONNX tensor with inline data. Fails for external data, string
/// and complex tensors, and data whose size disagrees with the dims.
llvm::Expected<HostTensor> readTensor(const onnx::TensorProto &tensor);

/// The static MLIR type of an ONNX tensor's dims and data type; null when
/// the element type is unsupported.
mlir::RankedTensorType getTensorType(mlir::MLIRContext *ctx,
                                     const onnx::TensorProto &tensor);
mlir::RankedTensorType getTensorType(mlir::MLIRContext *ctx,
                                     const HostTensor &tensor);

/// The value of a floating-point initializer as an attribute of `type`:
/// dense elements, or a dense resource above kResourceThresholdBytes.
/// A resource aliases the tensor's raw_data instead of copying it when
/// `owner` keeps that tensor alive (the blob then holds `owner`), and an
/// equal blob of the same name already in the context is shared: a
/// compile imports one model several times, and MLIR keeps every blob
/// until the context ends, so each import would otherwise add a copy of
/// the weights.
llvm::Expected<mlir::ElementsAttr>
readParameterValue(const onnx::TensorProto &tensor, mlir::RankedTensorType type,
                   std::shared_ptr<const void> owner = nullptr);

/// A dense attribute holding `tensor` (a splat when all elements are equal).
mlir::DenseElementsAttr toDenseAttr(mlir::MLIRContext *ctx,
                                    const HostTensor &tensor);

} // namespace cleave::onnx_import

#endif // CLEAVE_IMPORTERS_ONNX_ONNXTENSORS_H
