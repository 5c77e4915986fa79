//===- OnnxImporter.h - ONNX model files to the graph dialect ---*- C++ -*-===//
//
// The ONNX importer reads a model file with libonnx (protobuf parse, checker,
// version conversion to opset 17, shape inference), binds its symbolic
// dimensions from ImportOptions, and emits the graph dialect with static
// shapes. Weights in external data files are never read: planning needs only
// their types.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_IMPORTERS_ONNXIMPORTER_H
#define CLEAVE_IMPORTERS_ONNXIMPORTER_H

#include "cleave/Importers/ImportOptions.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"

namespace cleave {

/// Imports an ONNX model file into a module holding `func.func @forward`.
/// Errors are emitted as MLIR diagnostics (FileLineColLoc of the file, or
/// NameLoc of the node: "file.onnx: node 'name' (OpType): message") and give
/// failure. Problems of the whole file (unreadable, not a protobuf, checker
/// failure, unbound dims, unsupported ops) are at the file's location with
/// a plain message; node problems carry that prefix in the message too.
///
/// The module carries `cleave.model` (the file stem) and `cleave.source =
/// "onnx"`. `@forward` takes no arguments: its body starts with a
/// `graph.input` per graph input and a `graph.param` per initializer used,
/// then the operators, and returns the graph outputs.
mlir::OwningOpRef<mlir::ModuleOp> importOnnxFile(mlir::MLIRContext &ctx,
                                                 llvm::StringRef path,
                                                 const ImportOptions &options);

} // namespace cleave

#endif // CLEAVE_IMPORTERS_ONNXIMPORTER_H
