//===- ModelZoo.h - Built-in model families and presets ---------*- C++ -*-===//
//
// The model zoo builds well-known architectures directly in the graph
// dialect, at any size: `gpt3-175b`, or a family with overrides such as
// `gpt,layers=96,hidden=12288,heads=96,seq=2048,vocab=51200`. Each graph is
// a forward pass with its training loss, so the planner can plan training.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_IMPORTERS_MODELZOO_H
#define CLEAVE_IMPORTERS_MODELZOO_H

#include "cleave/Importers/ImportOptions.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace cleave {

/// Builds the model named by `spec` (a preset or family name, then
/// `,key=value` overrides). Errors name the bad key or value and list what
/// is accepted.
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
buildZooModel(mlir::MLIRContext &ctx, llvm::StringRef spec,
              const ImportOptions &options);

struct ZooEntry {
  std::string name;        ///< preset or family name
  std::string family;      ///< the family it instantiates
  std::string settings;    ///< its key=value settings (family defaults for a family)
  std::string description; ///< one line
};

/// Every family (with its defaults) and every preset, for `--help` and docs.
std::vector<ZooEntry> listZooModels();

} // namespace cleave

#endif // CLEAVE_IMPORTERS_MODELZOO_H
