//===- RunCommand.cpp - `cleave run`: the flags to a launch ---------------===//
//
// Checks the flags into a launcher::RunRequest (RunPlan.h runs it); --check's
// one-rank reference plan is built here, where the compiler is linked.
//
//===----------------------------------------------------------------------===//

#include "CheckpointCommand.h"
#include "Commands.h"
#include "ToolSupport.h"

#include "cleave/Driver/PlanArtifact.h"
#include "cleave/Importers/ModelLoader.h"
#include "cleave/runtime/launcher/RunPlan.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace llvm;

namespace cleave::tool {

namespace {

/// The flag that a name=file list entry breaks, or "".
std::string badPair(const std::vector<std::string> &entries) {
  for (const std::string &entry : entries) {
    size_t eq = entry.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == entry.size())
      return entry;
  }
  return "";
}

int checkData(const std::string &data) {
  if (data.empty())
    return kOk;
  if (!sys::fs::exists(data))
    return badUsage("--data " + data + ": no such file");
  // Token ids are uint16 (nanoGPT's .bin files): a directory, an empty
  // file or an odd byte count is not such a file (the workers check too).
  uint64_t size = 0;
  if (!sys::fs::is_regular_file(data) || sys::fs::file_size(data, size))
    return badUsage("--data " + data + ": not a file of token ids");
  if (size < 2 || size % 2)
    return badUsage("--data " + data + ": " + Twine(size) +
                    " bytes; token ids are uint16, 2 bytes each, and at "
                    "least one is needed");
  return kOk;
}

/// What the flags get wrong, as the exit code.
int checkArgs(const RunArgs &a) {
  if (a.steps < 1)
    return badUsage("--steps must be at least 1, got " + Twine(a.steps));
  if (!(a.tolerance > 0) || !std::isfinite(a.tolerance))
    return badUsage("--tolerance must be a positive number, got " +
                    formatv("{0}", a.tolerance).str());
  if (!(a.timeout > 0) || !std::isfinite(a.timeout))
    return badUsage("--timeout must be a positive number of seconds");
  if (int code = checkData(a.data))
    return code;
  // Outputs before the job starts: a save path that is a file used to
  // fail at the first checkpoint, after the steps before it had run.
  if (int code = checkOutputPath(a.save, "--save", /*directory=*/true))
    return code;
  if (int code = checkOutputPath(a.trace, "--trace"))
    return code;
  if (a.backend != "cpu" && a.backend != "cuda")
    return badUsage("--backend must be cpu or cuda, not '" + a.backend + "'");
  if (a.masks != "ones" && a.masks != "padded")
    return badUsage("--masks must be ones or padded, not '" + a.masks + "'");
  if (std::string bad = badPair(a.inputs); !bad.empty())
    return badUsage("--input " + bad + ": expected NAME=FILE");
  if (std::string bad = badPair(a.expectedOutputs); !bad.empty())
    return badUsage("--expect-output " + bad + ": expected I=FILE");
  if (!a.interleave.empty()) {
    // The plans run in turn in one launch, for their step times only.
    const char *alone = a.check                      ? "--check"
                        : !a.trace.empty()           ? "--trace"
                        : !a.inputs.empty()          ? "--input"
                        : !a.expectedOutputs.empty() ? "--expect-output"
                        : !a.data.empty()            ? "--data"
                        : a.backend != "cpu"         ? "--backend cuda"
                                                     : nullptr;
    if (alone)
      return badUsage(Twine("--interleave times plans in turn; it does not "
                            "take ") +
                      alone);
  }
  if (a.saveEvery < 0 || a.keep < 0 || a.maxRestarts < 0)
    return badUsage("--save-every, --keep and --max-restarts take a "
                    "non-negative number");
  if (a.save.empty() && (a.saveEvery > 0 || a.keep > 0 || a.saveSync))
    return badUsage("--save-every, --keep and --save-sync need --save DIR");
  if (a.maxRestarts > 0 && a.save.empty())
    return badUsage("--max-restarts needs --save DIR (a restart continues "
                    "from the last checkpoint saved there)");
  if (!a.resume.empty() && !a.initFrom.empty())
    return badUsage("--resume and --init-from exclude each other (a "
                    "checkpoint holds the weights already)");
  if ((!a.save.empty() || !a.resume.empty() || !a.initFrom.empty()) &&
      !a.interleave.empty())
    return badUsage("--interleave times plans in turn; it does not take "
                    "--save, --resume or --init-from");
  return kOk;
}

/// --check's one-rank plan of `plan`'s model (the compiler is linked
/// here, not in the launcher).
absl::StatusOr<plan::Plan> buildReference(const plan::Plan &plan) {
  ToolContext tool;
  return driver::buildReferencePlan(
      plan, [&](const std::string &source, const ImportOptions &o) {
        return loadModel(tool.ctx, source, o);
      });
}

/// --init-from: the file every rank reads (an ONNX file's initializers
/// are written out as safetensors first); the exit code of a bad one.
int setInitFrom(const std::string &initFrom, launcher::RunRequest &request) {
  if (initFrom.empty())
    return kOk;
  absl::StatusOr<std::string> weights = weightsForWorkers(initFrom);
  if (!weights.ok())
    return badUsage("--init-from " + initFrom + ": " +
                    std::string(weights.status().message()));
  request.initFrom = *weights;
  return kOk;
}

} // namespace

int runRun(const RunArgs &a, const char *argv0) {
  if (int code = checkArgs(a))
    return code;
  launcher::RunRequest request;
  request.backend = a.backend;
  request.planPath = a.plan;
  request.argv0 = argv0;
  request.steps = a.steps;
  request.dataPath = a.data;
  request.tracePath = a.trace;
  request.timeoutSeconds = a.timeout;
  request.check = a.check;
  request.fuse = !a.noFuse;
  request.inputs = a.inputs;
  request.paddedMasks = a.masks == "padded";
  request.expectedOutputs = a.expectedOutputs;
  request.interleave = a.interleave;
  request.saveDir = a.save;
  request.saveEvery = a.saveEvery;
  request.keep = a.keep;
  request.saveSync = a.saveSync;
  request.resumePath = a.resume;
  request.maxRestarts = a.maxRestarts;
  request.fault = a.fault;
  request.faultRank = a.faultRank;
  request.faultStep = a.faultStep;
  if (int code = setInitFrom(a.initFrom, request))
    return code;
  request.tolerance = a.tolerance;
  request.reference = buildReference;
  return launcher::runPlan(request);
}

int runGenerate(const GenerateArgs &a, const char *argv0) {
  if (!sys::fs::exists(a.promptFile))
    return badUsage("--prompt-file " + a.promptFile + ": no such file");
  if (a.maxNewTokens < 0 || a.topK < 0)
    return badUsage("--max-new-tokens and --top-k take a non-negative "
                    "number");
  if (!(a.temperature >= 0) || !std::isfinite(a.temperature))
    return badUsage("--temperature must be 0 (greedy) or more");
  if (!(a.topP > 0 && a.topP <= 1))
    return badUsage("--top-p must be in (0, 1]");
  if (!(a.timeout > 0) || !std::isfinite(a.timeout))
    return badUsage("--timeout must be a positive number of seconds");
  if (a.backend != "cpu" && a.backend != "cuda")
    return badUsage("--backend must be cpu or cuda, not '" + a.backend + "'");
  if (!(a.tolerance > 0) || !std::isfinite(a.tolerance))
    return badUsage("--tolerance must be a positive number, got " +
                    formatv("{0}", a.tolerance).str());
  if (a.check && (a.temperature > 0 || !a.logitsOut.empty()))
    return badUsage(a.temperature > 0
                        ? "--check compares greedy tokens; it does not take "
                          "--temperature"
                        : "--check writes the logits itself; it does not "
                          "take --dump-logits");
  launcher::RunRequest request;
  request.backend = a.backend;
  request.planPath = a.plan;
  request.check = a.check;
  request.tolerance = a.tolerance;
  request.reference = buildReference;
  request.argv0 = argv0;
  request.timeoutSeconds = a.timeout;
  request.generateArgs = {"--generate", a.promptFile,
                          "--max-new-tokens", std::to_string(a.maxNewTokens),
                          "--temperature", formatv("{0}", a.temperature).str(),
                          "--top-k", std::to_string(a.topK),
                          "--top-p", formatv("{0}", a.topP).str()};
  if (a.seed)
    request.generateArgs.insert(request.generateArgs.end(),
                                {"--seed", std::to_string(*a.seed)});
  if (a.requestRate < 0 || !std::isfinite(a.requestRate))
    return badUsage("--request-rate must be a positive number of requests a "
                    "second");
  if (a.requestRate > 0)
    request.generateArgs.insert(request.generateArgs.end(),
                                {"--request-rate",
                                 formatv("{0}", a.requestRate).str()});
  if (!a.logitsOut.empty()) {
    if (int code = checkOutputPath(a.logitsOut, "--dump-logits"))
      return code;
    SmallString<256> absolute(a.logitsOut);
    sys::fs::make_absolute(absolute);
    request.generateArgs.insert(request.generateArgs.end(),
                                {"--dump-logits", std::string(absolute)});
  }
  if (int code = setInitFrom(a.initFrom, request))
    return code;
  return launcher::runPlan(request);
}

} // namespace cleave::tool
