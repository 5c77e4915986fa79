//===- ToolSupport.cpp - What every `cleave` subcommand shares ------------===//

#include "ToolSupport.h"

#include "llvm/Support/GlobPattern.h"
#include <tuple>

#include "cleave/Importers/ModelLoader.h"
#include "cleave/Pipelines.h"
#include "cleave/Transforms/Autodiff.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace cleave::tool {

int badUsage(const Twine &message) {
  WithColor::error(errs(), "cleave") << message << "\n";
  return kBadInput;
}

int failure(const Twine &message) {
  WithColor::error(errs(), "cleave") << message << "\n";
  return kFailed;
}

int exitCode(const absl::Status &status) {
  if (status.ok())
    return kOk;
  int code = absl::IsInvalidArgument(status) ? kBadInput : kFailed;
  if (!status.message().empty())
    WithColor::error(errs(), "cleave") << std::string(status.message()) << "\n";
  return code;
}

bool parseImportOptions(const ModelArgs &args, ImportOptions &options) {
  if (args.batch) {
    if (*args.batch <= 0)
      return badUsage("--batch must be positive, got " + Twine(*args.batch)),
             false;
    options.batch = *args.batch;
  }
  if (args.seq) {
    if (*args.seq <= 0)
      return badUsage("--seq must be positive, got " + Twine(*args.seq)),
             false;
    options.seq = *args.seq;
  }
  for (const std::string &d : args.dims) {
    auto [name, value] = StringRef(d).split('=');
    int64_t v;
    if (name.empty() || value.getAsInteger(10, v) || v <= 0)
      return badUsage("--dim expects NAME=VALUE with a positive VALUE, got '" +
                      d + "'"),
             false;
    if (options.dims.count(name.str()))
      return badUsage("--dim " + name + " is given twice"), false;
    options.dims[name.str()] = v;
  }
  options.keepWeights = !args.noWeights;
  for (const auto &[flag, patterns, into] :
       {std::tuple{"--trainable", &args.trainable, &options.trainable},
        std::tuple{"--frozen", &args.frozen, &options.frozen}})
    for (const std::string &pattern : *patterns) {
      if (llvm::Expected<llvm::GlobPattern> glob =
              llvm::GlobPattern::create(pattern);
          !glob)
        return badUsage(Twine(flag) + " '" + pattern + "': " +
                        llvm::toString(glob.takeError())),
               false;
      into->push_back(pattern);
    }
  return true;
}

int writeTextFile(const std::string &path, StringRef flag,
                  const std::string &text) {
  std::error_code ec;
  raw_fd_ostream file(path, ec);
  if (ec)
    return failure(flag + " " + path + ": " + ec.message());
  file << text;
  return kOk;
}

int checkOutputPath(const std::string &path, StringRef flag, bool directory) {
  if (path.empty())
    return kOk;
  if (sys::fs::exists(path)) {
    if (directory && !sys::fs::is_directory(path))
      return badUsage(flag + " " + path +
                      ": not a directory (the checkpoints are written in "
                      "one); give a new or existing directory");
    if (!directory && sys::fs::is_directory(path))
      return badUsage(flag + " " + path + ": is a directory; give a file");
    if (sys::fs::access(path, sys::fs::AccessMode::Write))
      return badUsage(flag + " " + path + ": not writable");
    return kOk;
  }
  // A new path: the nearest folder above it that exists must be a
  // writable directory (a directory output is made with its parents).
  SmallString<256> parent(path);
  sys::path::remove_filename(parent);
  if (parent.empty())
    parent = ".";
  if (!directory) {
    if (!sys::fs::is_directory(parent))
      return badUsage(flag + " " + path + ": the folder '" + parent +
                      "' does not exist");
  } else {
    while (!parent.empty() && !sys::fs::exists(parent))
      sys::path::remove_filename(parent);
    if (parent.empty())
      parent = ".";
    if (!sys::fs::is_directory(parent))
      return badUsage(flag + " " + path + ": '" + parent +
                      "' is not a directory");
  }
  if (sys::fs::access(parent, sys::fs::AccessMode::Write))
    return badUsage(flag + " " + path + ": the folder '" + parent +
                    "' is not writable");
  return kOk;
}

namespace {

/// Prints a diagnostic as "where: error: message", where is the file
/// position, the ONNX node or the zoo spec that the location names.
void printDiagnostic(mlir::Diagnostic &diag, raw_ostream &os) {
  std::string where;
  raw_string_ostream w(where);
  mlir::Location loc = diag.getLocation();
  if (auto file = dyn_cast<mlir::FileLineColLoc>(loc)) {
    w << file.getFilename().getValue();
    if (file.getLine())
      w << ":" << file.getLine() << ":" << file.getColumn();
  } else if (auto name = dyn_cast<mlir::NameLoc>(loc)) {
    w << name.getName().getValue();
  } else if (!isa<mlir::UnknownLoc>(loc)) {
    loc.print(w);
  }
  StringRef severity = diag.getSeverity() == mlir::DiagnosticSeverity::Error
                           ? "error"
                       : diag.getSeverity() == mlir::DiagnosticSeverity::Warning
                           ? "warning"
                           : "note";
  os << (where.empty() ? "cleave" : where) << ": " << severity << ": " << diag
     << "\n";
  for (mlir::Diagnostic &note : diag.getNotes())
    printDiagnostic(note, os);
}

mlir::DialectRegistry registry() {
  mlir::DialectRegistry r;
  registerCleaveDialects(r);
  registerAutodiffExternalModels(r);
  return r;
}

} // namespace

ToolContext::ToolContext()
    : ctx(registry()), diagnostics(&ctx, [](mlir::Diagnostic &diag) {
        printDiagnostic(diag, errs());
        return mlir::success();
      }) {
  ctx.printOpOnDiagnostic(false);
}

mlir::OwningOpRef<mlir::ModuleOp>
ToolContext::loadModel(const std::string &source,
                       const ImportOptions &options) {
  return cleave::loadModel(ctx, source, options);
}

} // namespace cleave::tool
