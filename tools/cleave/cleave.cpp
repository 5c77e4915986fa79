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

#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/InitLLVM.h"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>

using namespace cleave::tool;

namespace {

int dispatch(int argc, char **argv);

/// The tool boundary: whatever escapes a command (an exception from a
/// library, LLVM's fatal-error path) ends the process with a message and
/// exit code 1, never an abort and its core dump. Errors a user can fix
/// are reported where they are found, with their file, op or flag; what
/// reaches this point is a bug in cleave, and the message says so.
[[noreturn]] void internalError(const char *what) {
  std::fflush(stdout);
  std::fprintf(stderr,
               "cleave: error: internal error: %s (a bug in cleave: please "
               "report it with the command that led here)\n",
               what);
  std::fflush(stderr);
  std::_Exit(kFailed);
}

} // namespace

int main(int argc, char **argv) {
  llvm::install_fatal_error_handler(
      [](void *, const char *reason, bool) { internalError(reason); });
  std::set_terminate([] {
    if (std::exception_ptr e = std::current_exception()) {
      try {
        std::rethrow_exception(e);
      } catch (const std::exception &ex) {
        internalError(ex.what());
      } catch (...) {
      }
    }
    internalError("terminate called");
  });
  try {
    return dispatch(argc, argv);
  } catch (const std::bad_alloc &) {
    std::fflush(stdout);
    std::fprintf(stderr, "cleave: error: out of memory\n");
    return kFailed;
  } catch (const std::exception &e) {
    internalError(e.what());
  }
}

namespace {

int dispatch(int argc, char **argv) {
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
      "  cleave generate PLAN --prompt-file FILE [--max-new-tokens N] "
      "[--temperature T] [--top-k K] [--top-p P]\n"
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
  case Command::Generate:
    return runGenerate(generateArgs(), argv[0]);
  case Command::Checkpoint:
    return runCheckpoint(checkpointArgs());
  case Command::None:
    break;
  }
  printHelp();
  return kBadInput;
}

} // namespace
