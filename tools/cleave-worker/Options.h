//===- Options.h - Command line of cleave-worker ----------------*- C++ -*-===//

#ifndef CLEAVE_TOOLS_CLEAVE_WORKER_OPTIONS_H
#define CLEAVE_TOOLS_CLEAVE_WORKER_OPTIONS_H

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cleave::worker {

struct Options {
  std::string planPath;
  int64_t steps = 1;
  std::string dataPath;
  std::optional<uint64_t> seed;
  std::string tracePath;
  std::string dumpDir;
  /// --input NAME=FILE (repeatable): input_name -> raw global-batch file.
  std::map<std::string, std::string> inputFiles;
  /// --heartbeat DIR: the watchdog's heartbeat file is DIR/rank-<rank>
  /// (launcher::JobMonitor reads it).
  std::string heartbeatDir;
  /// --masks padded: synthetic masks are right-padded samples.
  bool paddedMasks = false;
  /// --dump-outputs DIR: the output tensors of the last step.
  std::string outputsDir;
  double timeoutSeconds = 60;
  /// "cpu" or "cuda" (one GPU per rank, by local rank on the node).
  std::string backend = "cpu";
  /// Run the instruction groups the backend fuses (a GEMM and its bias,
  /// activation or batch sum) as one kernel; --no-fuse runs every
  /// instruction alone, to compare.
  bool fuse = true;
  /// Print each rank's program (schedule and instructions) and exit.
  bool list = false;
  /// Print the ops the backend has kernels for, one per line, and exit
  /// (no plan, no GPU needed).
  bool listKernels = false;
  /// Fault injection for the runtime's tests: rank `faultRank` does
  /// `fault` ("kill": SIGKILL itself, "hang": sleep forever, "exit": exit
  /// 3 without MPI_Finalize) at the start of step `faultStep`;
  /// "kill-in-save" kills it in the middle of writing its shard of the
  /// first checkpoint saved after step `faultStep` - 1.
  std::string fault;
  /// --interleave PLAN (repeatable): plans to run besides the first, one
  /// step of each in turn (rotating which goes first every round), so that
  /// the machine's drift falls on all of them alike (for benchmarks that
  /// compare plans: bench/runtime_calibration.py). CPU backend only.
  std::vector<std::string> interleavePaths;
  int faultRank = -1;
  int64_t faultStep = 1;
  /// --save DIR: checkpoints (runtime/checkpoint Directory.h) every
  /// `saveEvery` steps (0: only after the last step) and after the last
  /// step; `keep` complete ones are kept (0: all). `saveSync` writes on
  /// the training thread instead of in the background.
  std::string saveDir;
  int64_t saveEvery = 0;
  int64_t keep = 0;
  bool saveSync = false;
  /// --resume DIR: continue from the checkpoint DIR names (a save
  /// directory's latest, or a step directory), under this plan whatever
  /// plan wrote it; --steps more steps.
  std::string resumePath;
  /// --init-from FILE: start from these whole weights (safetensors).
  std::string initFrom;
  /// --generate FILE: run a generation plan on these prompts (Generate.h)
  /// instead of steps; --max-new-tokens (0: the plan's output length),
  /// --temperature (0: greedy), --top-k (0: all), --top-p (1: all).
  std::string generatePath;
  int64_t maxNewTokens = 0;
  double temperature = 0, topP = 1;
  int64_t topK = 0;
  /// --dump-logits FILE: the logits of every generated token (Generate.h).
  std::string logitsPath;
  /// --request-rate R: requests arrive as a Poisson process of R a second
  /// (seeded) instead of all at the start.
  double requestRate = 0;
};

extern const char *const kUsage;

/// Parses argv; on error returns false with `error` set.
bool parseOptions(int argc, char **argv, Options &options, std::string &error);

} // namespace cleave::worker

#endif // CLEAVE_TOOLS_CLEAVE_WORKER_OPTIONS_H
