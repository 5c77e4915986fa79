//===- cleave.cpp - The cleave command ------------------------------------===//
//
// Subcommands: import, summary, zoo. Exit codes: 0 success, 1 the work
// failed, 2 bad usage or bad input (the message names the file, node, key or
// flag).
//
//===----------------------------------------------------------------------===//

#include "cleave/Analysis/ModelSummary.h"
#include "cleave/Importers/ModelLoader.h"
#include "cleave/Importers/ModelZoo.h"
#include "cleave/Pipelines.h"
#include "cleave/Transforms/Autodiff.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

using namespace llvm;

namespace {
enum ExitCode { kOk = 0, kFailed = 1, kBadInput = 2 };

cl::SubCommand importCmd("import",
                         "Import MODEL into the graph dialect and print it");
cl::SubCommand summaryCmd("summary",
                          "Print parameters, FLOPs, activation bytes and the "
                          "op histogram of MODEL");
cl::SubCommand zooCmd("zoo", "List the model zoo's families and presets");

cl::OptionCategory modelCategory("Model options");

cl::opt<std::string> model(cl::Positional, cl::Required,
                           cl::desc("MODEL (a .onnx or .mlir file, or "
                                    "zoo:NAME[,key=value...])"),
                           cl::sub(importCmd), cl::sub(summaryCmd),
                           cl::cat(modelCategory));
cl::opt<int64_t> batch("batch", cl::desc("Bind the batch dimension"),
                       cl::value_desc("N"), cl::sub(importCmd),
                       cl::sub(summaryCmd), cl::cat(modelCategory));
cl::opt<int64_t> seq("seq", cl::desc("Bind the sequence dimension"),
                     cl::value_desc("N"), cl::sub(importCmd),
                     cl::sub(summaryCmd), cl::cat(modelCategory));
cl::list<std::string> dims("dim",
                           cl::desc("Bind a symbolic dimension by name"),
                           cl::value_desc("NAME=VALUE"), cl::sub(importCmd),
                           cl::sub(summaryCmd), cl::cat(modelCategory));
cl::opt<bool> noWeights("no-weights",
                        cl::desc("Drop imported weights (keep shapes only)"),
                        cl::sub(importCmd), cl::sub(summaryCmd),
                        cl::cat(modelCategory));
cl::opt<std::string> output("o", cl::desc("Output file (default: stdout)"),
                            cl::value_desc("FILE"), cl::init("-"),
                            cl::sub(importCmd));
cl::opt<bool> json("json", cl::desc("Print JSON"), cl::sub(summaryCmd),
                   cl::sub(zooCmd));
cl::opt<bool> trainingStep(
    "training-step",
    cl::desc("Also build @train_step (backward and AdamW update); a graph "
             "without a scalar loss gets cross-entropy on its first output"),
    cl::sub(importCmd));

int badUsage(const Twine &message) {
  WithColor::error(errs(), "cleave") << message << "\n";
  return kBadInput;
}

/// Fills import options from the flags; false after reporting a bad flag.
bool parseImportOptions(cleave::ImportOptions &options) {
  if (batch.getNumOccurrences()) {
    if (batch <= 0)
      return badUsage("--batch must be positive, got " + Twine(batch)), false;
    options.batch = batch;
  }
  if (seq.getNumOccurrences()) {
    if (seq <= 0)
      return badUsage("--seq must be positive, got " + Twine(seq)), false;
    options.seq = seq;
  }
  for (const std::string &d : dims) {
    auto [name, value] = StringRef(d).split('=');
    int64_t v;
    if (name.empty() || value.getAsInteger(10, v) || v <= 0)
      return badUsage("--dim expects NAME=VALUE with a positive VALUE, got '" +
                      d + "'"),
             false;
    options.dims[name.str()] = v;
  }
  options.keepWeights = !noWeights;
  return true;
}

/// Prints a diagnostic as "where: error: message", where is the file
/// position, the ONNX node or the zoo spec that the location names.
void printDiagnostic(mlir::Diagnostic &diag, raw_ostream &os) {
  std::string where;
  llvm::raw_string_ostream w(where);
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

int runZoo() {
  std::vector<cleave::ZooEntry> entries = cleave::listZooModels();
  if (json) {
    json::Array arr;
    for (const auto &e : entries)
      arr.push_back(json::Object{{"name", e.name},
                                 {"family", e.family},
                                 {"settings", e.settings},
                                 {"description", e.description}});
    outs() << formatv("{0:2}", json::Value(std::move(arr))) << "\n";
    return kOk;
  }
  for (const auto &e : entries)
    outs() << formatv("{0,-16} {1,-11} {2}\n    {3}\n", e.name, e.family,
                      e.description, e.settings);
  return kOk;
}

int runModelCommand() {
  cleave::ImportOptions options;
  if (!parseImportOptions(options))
    return kBadInput;
  mlir::DialectRegistry registry;
  cleave::registerCleaveDialects(registry);
  cleave::registerAutodiffExternalModels(registry);
  mlir::MLIRContext ctx(registry);
  mlir::ScopedDiagnosticHandler diagnostics(&ctx, [](mlir::Diagnostic &diag) {
    printDiagnostic(diag, errs());
    return mlir::success();
  });
  mlir::OwningOpRef<mlir::ModuleOp> module =
      cleave::loadModel(ctx, model, options);
  if (!module)
    return kBadInput;

  // The training step: printed by `import --training-step`, counted by
  // `summary` (which falls back to an estimate when the model cannot be
  // differentiated, e.g. an integer output).
  auto buildTrainingStep = [&](mlir::ModuleOp m) {
    mlir::PassManager pm(&ctx);
    cleave::TrainingPipelineOptions options;
    options.appendLoss = cleave::needsLoss(m);
    cleave::buildTrainingPipeline(pm, options);
    return pm.run(m);
  };

  if (importCmd) {
    if (trainingStep && failed(buildTrainingStep(*module)))
      return kFailed;
    std::string error;
    auto file = mlir::openOutputFile(output, &error);
    if (!file) {
      WithColor::error(errs(), "cleave") << "-o " << output << ": " << error
                                         << "\n";
      return kFailed;
    }
    module->print(file->os(), mlir::OpPrintingFlags().elideLargeResourceString());
    file->os() << "\n";
    file->keep();
    return kOk;
  }
  // Summarise a copy that also holds @train_step; diagnostics of a model
  // that cannot be trained become a note, and FLOPs are then estimated.
  mlir::OwningOpRef<mlir::ModuleOp> withStep(module->clone());
  {
    mlir::ScopedDiagnosticHandler quiet(&ctx, [](mlir::Diagnostic &) {
      return mlir::success();
    });
    if (failed(buildTrainingStep(*withStep)))
      withStep = module->clone();
  }
  cleave::ModelSummary summary = cleave::summarizeModel(*withStep);
  if (json)
    outs() << formatv("{0:2}", cleave::toJson(summary)) << "\n";
  else
    cleave::printSummary(summary, outs());
  return kOk;
}
} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  std::string errors;
  raw_string_ostream errorStream(errors);
  if (!cl::ParseCommandLineOptions(argc, argv,
                                   "cleave: automatic model partitioning\n\n"
                                   "  cleave import MODEL [-o out.mlir]\n"
                                   "  cleave summary MODEL [--json]\n"
                                   "  cleave zoo [--json]\n",
                                   &errorStream)) {
    errs() << errors;
    return kBadInput;
  }
  if (importCmd || summaryCmd)
    return runModelCommand();
  if (zooCmd)
    return runZoo();
  cl::PrintHelpMessage();
  return kBadInput;
}
