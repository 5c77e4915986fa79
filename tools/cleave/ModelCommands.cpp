//===- ModelCommands.cpp - `cleave import`, `summary` and `zoo` -----------===//

#include "Commands.h"
#include "ToolSupport.h"

#include "cleave/Analysis/ModelSummary.h"
#include "cleave/Importers/ModelZoo.h"
#include "cleave/Pipelines.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

using namespace llvm;

namespace cleave::tool {

namespace {

/// The training step: printed by `import --training-step`, counted by
/// `summary`.
mlir::LogicalResult buildTrainingStep(mlir::ModuleOp module) {
  mlir::PassManager pm(module.getContext());
  TrainingPipelineOptions options;
  options.appendLoss = needsLoss(module);
  buildTrainingPipeline(pm, options);
  return pm.run(module);
}

/// Imports MODEL as the flags say; null after reporting why.
mlir::OwningOpRef<mlir::ModuleOp> load(ToolContext &tool,
                                       const ModelArgs &args) {
  ImportOptions options;
  if (!parseImportOptions(args, options))
    return nullptr;
  return tool.loadModel(args.source, options);
}

} // namespace

int runImport(const ModelCommandArgs &args) {
  if (args.output != "-")
    if (int code = checkOutputPath(args.output, "-o"))
      return code;
  ToolContext tool;
  mlir::OwningOpRef<mlir::ModuleOp> module = load(tool, args.model);
  if (!module)
    return kBadInput;
  if (args.trainingStep && failed(buildTrainingStep(*module)))
    return kFailed;
  std::string error;
  auto file = mlir::openOutputFile(args.output, &error);
  if (!file)
    return failure("-o " + args.output + ": " + error);
  // The weights are printed whole (dense_resource blobs in the file's
  // resource section), so that compiling the file plans and trains the
  // same model; --no-weights imports none in the first place.
  module->print(file->os());
  file->os() << "\n";
  file->keep();
  return kOk;
}

int runSummary(const ModelCommandArgs &args) {
  ToolContext tool;
  mlir::OwningOpRef<mlir::ModuleOp> module = load(tool, args.model);
  if (!module)
    return kBadInput;
  // The model as given, with training FLOPs counted on a copy that holds
  // @train_step (and the loss appended when it had none). A model that
  // cannot be differentiated (e.g. an integer output) keeps the estimate,
  // and the output says so.
  ModelSummary summary = summarizeModel(*module);
  mlir::OwningOpRef<mlir::ModuleOp> withStep(module->clone());
  {
    mlir::ScopedDiagnosticHandler quiet(&tool.ctx, [](mlir::Diagnostic &) {
      return mlir::success();
    });
    if (succeeded(buildTrainingStep(*withStep))) {
      ModelSummary trained = summarizeModel(*withStep);
      summary.trainingFlops = trained.trainingFlops;
      summary.trainingFlopsCounted = trained.trainingFlopsCounted;
    }
  }
  if (args.json)
    outs() << formatv("{0:2}", toJson(summary)) << "\n";
  else
    printSummary(summary, outs());
  return kOk;
}

int runZoo(const ModelCommandArgs &args) {
  std::vector<ZooEntry> entries = listZooModels();
  if (args.json) {
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

} // namespace cleave::tool
