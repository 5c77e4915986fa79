//===- cleave.cpp - The cleave command ------------------------------------===//
//
// Subcommands: import, summary, zoo, compile, profile, inspect, run,
// checkpoint. The flags are parsed into typed values (CommandLine.h) and
// each subcommand (Commands.h) hands the work to a library. Exit codes: 0
// success, 1 the work failed, 2 bad usage or bad input (the message names
// the file, node, key or flag).
//
//===----------------------------------------------------------------------===//

#include "CommandLine.h"
#include "Commands.h"
#include "ToolSupport.h"

#include "llvm/Support/InitLLVM.h"

using namespace cleave::tool;

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  std::optional<Command> command = parseCommandLine(
      argc, argv,
      "cleave: automatic model partitioning\n\n"
      "  cleave import MODEL [-o out.mlir]\n"
      "  cleave compile MODEL --cluster C --global-batch B [--fix KNOBS] "
      "[--json] [-o PLAN]\n"
      "  cleave inspect PLAN [--json] [--rank N] [--mlir] [--trace "
      "out.json]\n"
      "  cleave run PLAN [--steps K] [--data tokens.bin] [--check] [--trace "
      "out.json]\n"
      "             [--save DIR [--save-every K] [--max-restarts R]] "
      "[--resume DIR] [--init-from FILE]\n"
      "  cleave checkpoint inspect|export DIR [-o model.safetensors]\n"
      "  cleave summary MODEL [--json]\n"
      "  cleave zoo [--json]\n"
      "  cleave profile --backend cpu -o FILE\n");
  if (!command)
    return kBadInput;
  switch (*command) {
  case Command::Import:
    return runImport(modelCommandArgs());
  case Command::Summary:
    return runSummary(modelCommandArgs());
  case Command::Zoo:
    return runZoo(modelCommandArgs());
  case Command::Compile:
    return runCompile(compileArgs());
  case Command::Profile:
    return runProfile(profileArgs(), argv);
  case Command::Inspect:
    return runInspect(inspectArgs());
  case Command::Run:
    return runRun(runArgs(), argv[0]);
  case Command::Checkpoint:
    return runCheckpoint(checkpointArgs());
  case Command::None:
    break;
  }
  printHelp();
  return kBadInput;
}
