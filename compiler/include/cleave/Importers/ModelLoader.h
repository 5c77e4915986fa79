//===- ModelLoader.h - One entry point for every model source ---*- C++ -*-===//

#ifndef CLEAVE_IMPORTERS_MODELLOADER_H
#define CLEAVE_IMPORTERS_MODELLOADER_H

#include "cleave/Importers/ImportOptions.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/OwningOpRef.h"

namespace cleave {

/// Registers every dialect a cleave module may hold.
void registerCleaveDialects(mlir::DialectRegistry &registry);

/// Loads MODEL: a `.onnx` file, a `.mlir` file of the graph dialect, or
/// `zoo:NAME[,key=value...]`. Errors are emitted as diagnostics that name
/// the file, node or key, and give a null module.
mlir::OwningOpRef<mlir::ModuleOp> loadModel(mlir::MLIRContext &ctx,
                                            llvm::StringRef model,
                                            const ImportOptions &options);

/// The function that holds the model's forward pass (`@forward`), or null.
mlir::Operation *getForwardFunction(mlir::ModuleOp module);

} // namespace cleave

#endif // CLEAVE_IMPORTERS_MODELLOADER_H
