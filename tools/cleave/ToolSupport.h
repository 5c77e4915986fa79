//===- ToolSupport.h - What every `cleave` subcommand shares ----*- C++ -*-===//
//
// Exit codes: 0 success, 1 the work failed, 2 bad usage or bad input (the
// message names the file, node, key or flag).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TOOLS_CLEAVE_TOOLSUPPORT_H
#define CLEAVE_TOOLS_CLEAVE_TOOLSUPPORT_H

#include "CommandLine.h"

#include "cleave/Importers/ImportOptions.h"

#include "absl/status/status.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"

#include <string>

namespace cleave::tool {

enum ExitCode { kOk = 0, kFailed = 1, kBadInput = 2 };

/// "cleave: error: message"; kBadInput.
int badUsage(const llvm::Twine &message);
/// "cleave: error: message"; kFailed.
int failure(const llvm::Twine &message);
/// A library's status as the exit code: InvalidArgument is bad input, any
/// other error a failure; an empty message was reported already.
int exitCode(const absl::Status &status);

/// Fills import options from the model flags; false after reporting a bad
/// flag.
bool parseImportOptions(const ModelArgs &args, ImportOptions &options);

/// Writes `text` to `path` for the flag `flag` ("-o", "--trace"); the exit
/// code (kFailed, with the reason, when the file cannot be written).
int writeTextFile(const std::string &path, llvm::StringRef flag,
                  const std::string &text);

/// Checks, before any work, that `flag`'s output `path` can be written:
/// a file (`directory` false) whose folder exists and which is not a
/// directory, or a directory (`directory` true) that exists as one or can
/// be made under an existing folder. kOk, or kBadInput after reporting
/// why not (an empty path is kOk: the flag was not given).
int checkOutputPath(const std::string &path, llvm::StringRef flag,
                    bool directory = false);

/// An MLIR context with every cleave dialect and interface, whose
/// diagnostics print as "where: error: message" without dumping the op.
struct ToolContext {
  ToolContext();

  /// Imports `source` (a file or a zoo spec).
  mlir::OwningOpRef<mlir::ModuleOp> loadModel(const std::string &source,
                                              const ImportOptions &options);

  mlir::MLIRContext ctx;
  mlir::ScopedDiagnosticHandler diagnostics;
};

} // namespace cleave::tool

#endif // CLEAVE_TOOLS_CLEAVE_TOOLSUPPORT_H
