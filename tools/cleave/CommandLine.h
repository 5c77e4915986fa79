//===- CommandLine.h - `cleave`'s flags as typed values ---------*- C++ -*-===//
//
// Every subcommand's flags are declared in CommandLine.cpp (LLVM's cl::opt
// must register with their subcommand in one translation unit) and handed
// to the commands only as these structs: nothing else reads a flag.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TOOLS_CLEAVE_COMMANDLINE_H
#define CLEAVE_TOOLS_CLEAVE_COMMANDLINE_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cleave::tool {

enum class Command {
  None, ///< no subcommand: print the help
  Import,
  Summary,
  Zoo,
  Compile,
  Profile,
  Inspect,
  Run,
  Generate,
  Checkpoint,
};

/// Parses argv (`overview`: the usage --help starts with); unset after
/// printing the error (exit code 2).
std::optional<Command> parseCommandLine(int argc, char **argv,
                                        const char *overview);
void printHelp();

/// MODEL and how to import it (import, summary, compile).
struct ModelArgs {
  std::string source;
  std::optional<int64_t> batch, seq;
  std::vector<std::string> dims; ///< NAME=VALUE
  bool noWeights = false;
  std::vector<std::string> trainable, frozen; ///< glob patterns
};

/// import, summary and zoo.
struct ModelCommandArgs {
  ModelArgs model;
  std::string output = "-";
  bool trainingStep = false;
  bool json = false;
};

struct CompileArgs {
  ModelArgs model;
  std::string cluster, profile, fix, memoryLimit, trace;
  /// --versus KNOBS: a plan (a recipe) to compare every printed plan with.
  std::string versus;
  std::optional<int64_t> globalBatch;
  int topK = 1;
  double timeLimit = 0;
  bool exhaustive = false, explain = false, json = false;
  /// -o and what the artifact carries.
  std::string planOut;
  /// --html FILE (with -o): the written plan as a web page.
  std::string html;
  uint64_t seed = 1234;
  std::string optimizer = "adamw";
  double lr = 1e-3;
  std::string lossScale, initFrom;
  /// --serve: plan inference (prefill and decode) instead of training.
  bool serve = false;
  std::optional<int64_t> promptLen, outputLen, maxBatch, cacheBlocks,
      stepTokens;
  double ttft = 0, tpot = 0;
  std::string batching = "continuous";
  bool disaggregate = false;
};

struct ProfileArgs {
  std::string backend = "cpu", output, mpiWorker;
  int ranks = 0;
  bool quick = false;
};

struct InspectArgs {
  std::string plan, trace;
  std::optional<int> rank;
  bool json = false, mlir = false;
  /// --html FILE: the plan as one web page; --measured TRACE: a run's
  /// trace drawn in it.
  std::string html, measured;
};

/// `cleave generate`: a generation plan on prompts (Generate.h of the
/// worker says what it prints).
struct GenerateArgs {
  std::string plan, backend = "cpu", promptFile, initFrom;
  int64_t maxNewTokens = 0, topK = 0;
  double temperature = 0, topP = 1, timeout = 60;
  std::optional<int64_t> seed;
  std::string logitsOut;
  bool check = false;
  double tolerance = 1e-5, requestRate = 0;
};
GenerateArgs generateArgs();

struct RunArgs {
  std::string plan, backend = "cpu", data, trace;
  int64_t steps = 3;
  bool check = false, noFuse = false;
  double tolerance = 1e-5, timeout = 60;
  std::vector<std::string> inputs, expectedOutputs, interleave;
  /// --masks: how synthetic attention masks are made ("ones", "padded").
  std::string masks = "ones";
  /// Checkpoints.
  std::string save, resume, initFrom;
  int64_t saveEvery = 0, keep = 0;
  bool saveSync = false;
  int maxRestarts = 0;
  /// Fault injection (hidden flags, for the tests).
  std::string fault;
  int faultRank = -1;
  int64_t faultStep = 1;
};

struct CheckpointArgs {
  std::vector<std::string> args; ///< inspect|export DIR
  std::string output;
  bool json = false, noVerify = false;
};

ModelCommandArgs modelCommandArgs();
CompileArgs compileArgs();
ProfileArgs profileArgs();
InspectArgs inspectArgs();
RunArgs runArgs();
CheckpointArgs checkpointArgs();

} // namespace cleave::tool

#endif // CLEAVE_TOOLS_CLEAVE_COMMANDLINE_H
