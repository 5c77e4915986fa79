//===- Commands.h - The `cleave` subcommands --------------------*- C++ -*-===//
//
// Each takes its flags as typed values (CommandLine.h), checks what only
// the command line can get wrong, and hands the work to a library:
// compile to cleave/Driver, run to the launcher, profile to the profilers,
// inspect to the plan inspector. Each returns the exit code.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TOOLS_CLEAVE_COMMANDS_H
#define CLEAVE_TOOLS_CLEAVE_COMMANDS_H

#include "CommandLine.h"

namespace cleave::tool {

/// import (the model in the graph dialect), summary (its parameters,
/// FLOPs, activations and ops) and zoo (the presets).
int runImport(const ModelCommandArgs &args);
int runSummary(const ModelCommandArgs &args);
int runZoo(const ModelCommandArgs &args);
int runCompile(const CompileArgs &args);
int runProfile(const ProfileArgs &args, char **argv);
int runInspect(const InspectArgs &args);
int runRun(const RunArgs &args, const char *argv0);
int runGenerate(const GenerateArgs &args, const char *argv0);
int runCheckpoint(const CheckpointArgs &args);

} // namespace cleave::tool

#endif // CLEAVE_TOOLS_CLEAVE_COMMANDS_H
