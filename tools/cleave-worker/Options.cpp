//===- Options.cpp - Command line of cleave-worker ------------------------===//

#include "Options.h"

#include <cmath>
#include <cstdlib>

namespace cleave::worker {

const char *const kUsage =
    "usage: cleave-worker PLAN [--steps K] [--data tokens.bin] [--seed S]\n"
    "                     [--trace out.json] [--dump-params DIR]\n"
    "                     [--input NAME=FILE]... [--masks ones|padded]\n"
    "                     [--dump-outputs DIR] [--heartbeat DIR]\n"
    "                     [--timeout SECONDS] [--backend cpu|cuda] [--no-fuse]\n"
    "                     [--list] [--interleave PLAN]...\n"
    "                     [--save DIR [--save-every K] [--keep N] [--save-sync]]\n"
    "                     [--resume DIR] [--init-from FILE.safetensors]\n"
    "                     [--generate PROMPTS [--max-new-tokens N]\n"
    "                      [--temperature T] [--top-k K] [--top-p P]\n"
    "                      [--dump-logits FILE] [--request-rate R]]\n"
    "       cleave-worker --kernels [--backend cpu|cuda]\n"
    "       cleave-worker --blas-info | --blas-probe\n";

namespace {
bool parseInt(const std::string &text, int64_t &value) {
  char *end = nullptr;
  value = std::strtoll(text.c_str(), &end, 10);
  return !text.empty() && *end == '\0';
}
} // namespace

bool parseOptions(int argc, char **argv, Options &options, std::string &error) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](std::string &out) {
      if (i + 1 >= argc) {
        error = arg + " needs a value";
        return false;
      }
      out = argv[++i];
      return true;
    };
    std::string text;
    int64_t number = 0;
    if (arg == "--steps") {
      if (!value(text) || !parseInt(text, number) || number < 1) {
        error = "--steps needs a positive integer";
        return false;
      }
      options.steps = number;
    } else if (arg == "--seed") {
      if (!value(text) || !parseInt(text, number)) {
        error = "--seed needs an integer";
        return false;
      }
      options.seed = static_cast<uint64_t>(number);
    } else if (arg == "--timeout") {
      if (!value(text))
        return false;
      char *end = nullptr;
      options.timeoutSeconds = std::strtod(text.c_str(), &end);
      if (*end != '\0' || !(options.timeoutSeconds > 0)) {
        error = "--timeout needs a positive number of seconds";
        return false;
      }
    } else if (arg == "--backend") {
      if (!value(options.backend))
        return false;
      if (options.backend != "cpu" && options.backend != "cuda") {
        error = "--backend must be cpu or cuda, not '" + options.backend + "'";
        return false;
      }
    } else if (arg == "--no-fuse") {
      options.fuse = false;
    } else if (arg == "--list") {
      options.list = true;
    } else if (arg == "--kernels") {
      options.listKernels = true;
    } else if (arg == "--data") {
      if (!value(options.dataPath))
        return false;
    } else if (arg == "--trace") {
      if (!value(options.tracePath))
        return false;
    } else if (arg == "--dump-params") {
      if (!value(options.dumpDir))
        return false;
    } else if (arg == "--input") {
      if (!value(text))
        return false;
      size_t eq = text.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
        error = "--input needs NAME=FILE (the plan's input name, '=', a raw "
                "file of its global batch), got '" + text + "'";
        return false;
      }
      std::string name = text.substr(0, eq);
      if (!options.inputFiles.emplace(name, text.substr(eq + 1)).second) {
        error = "--input " + name + " is given more than once";
        return false;
      }
    } else if (arg == "--heartbeat") {
      if (!value(options.heartbeatDir))
        return false;
    } else if (arg == "--masks") {
      if (!value(text))
        return false;
      if (text != "ones" && text != "padded") {
        error = "--masks must be ones or padded, not '" + text + "'";
        return false;
      }
      options.paddedMasks = text == "padded";
    } else if (arg == "--dump-outputs") {
      if (!value(options.outputsDir))
        return false;
    } else if (arg == "--interleave") {
      if (!value(text))
        return false;
      options.interleavePaths.push_back(text);
    } else if (arg == "--fault") {
      if (!value(options.fault))
        return false;
      if (options.fault != "kill" && options.fault != "hang" &&
          options.fault != "exit" && options.fault != "kill-in-save") {
        error = "--fault must be kill, hang, exit or kill-in-save, not '" +
                options.fault + "'";
        return false;
      }
    } else if (arg == "--save") {
      if (!value(options.saveDir))
        return false;
    } else if (arg == "--save-every" || arg == "--keep") {
      if (!value(text) || !parseInt(text, number) || number < 1) {
        error = arg + " needs a positive integer";
        return false;
      }
      (arg == "--keep" ? options.keep : options.saveEvery) = number;
    } else if (arg == "--save-sync") {
      options.saveSync = true;
    } else if (arg == "--resume") {
      if (!value(options.resumePath))
        return false;
    } else if (arg == "--init-from") {
      if (!value(options.initFrom))
        return false;
    } else if (arg == "--generate") {
      if (!value(options.generatePath))
        return false;
    } else if (arg == "--dump-logits") {
      if (!value(options.logitsPath))
        return false;
    } else if (arg == "--max-new-tokens" || arg == "--top-k") {
      if (!value(text) || !parseInt(text, number) || number < 0) {
        error = arg + " needs a non-negative integer";
        return false;
      }
      (arg == "--top-k" ? options.topK : options.maxNewTokens) = number;
    } else if (arg == "--request-rate") {
      if (!value(text))
        return false;
      char *end = nullptr;
      options.requestRate = std::strtod(text.c_str(), &end);
      if (*end != '\0' || !(options.requestRate > 0) ||
          !std::isfinite(options.requestRate)) {
        error = "--request-rate needs a positive number of requests a second";
        return false;
      }
    } else if (arg == "--temperature" || arg == "--top-p") {
      if (!value(text))
        return false;
      char *end = nullptr;
      double x = std::strtod(text.c_str(), &end);
      bool ok = *end == '\0' && std::isfinite(x) && x >= 0 &&
                (arg == "--temperature" || (x > 0 && x <= 1));
      if (!ok) {
        error = arg == "--top-p" ? "--top-p needs a number in (0, 1]"
                                 : "--temperature needs a number >= 0";
        return false;
      }
      (arg == "--top-p" ? options.topP : options.temperature) = x;
    } else if (arg == "--fault-rank") {
      if (!value(text) || !parseInt(text, number)) {
        error = "--fault-rank needs an integer";
        return false;
      }
      options.faultRank = static_cast<int>(number);
    } else if (arg == "--fault-step") {
      if (!value(text) || !parseInt(text, number)) {
        error = "--fault-step needs an integer";
        return false;
      }
      options.faultStep = number;
    } else if (!arg.empty() && arg[0] == '-') {
      error = "unknown option '" + arg + "'";
      return false;
    } else if (options.planPath.empty()) {
      options.planPath = arg;
    } else {
      error = "more than one plan given ('" + arg + "')";
      return false;
    }
  }
  if (options.planPath.empty() && error.empty() && !options.listKernels)
    error = "no plan given";
  if (error.empty() && options.saveDir.empty() &&
      (options.saveEvery > 0 || options.keep > 0 || options.saveSync))
    error = "--save-every, --keep and --save-sync need --save DIR";
  if (error.empty() && !options.resumePath.empty() && !options.initFrom.empty())
    error = "--resume and --init-from exclude each other (a checkpoint holds "
            "the weights already)";
  if (error.empty() && !options.interleavePaths.empty()) {
    // One step of each plan in turn: per-plan outputs and checks would
    // need one run each.
    const char *alone = !options.tracePath.empty()       ? "--trace"
                        : !options.dumpDir.empty()       ? "--dump-params"
                        : !options.outputsDir.empty()    ? "--dump-outputs"
                        : !options.inputFiles.empty()    ? "--input"
                        : !options.dataPath.empty()      ? "--data"
                        : options.backend != "cpu"       ? "--backend cuda"
                        : options.list                   ? "--list"
                        : !options.fault.empty()         ? "--fault"
                        : !options.saveDir.empty()       ? "--save"
                        : !options.resumePath.empty()    ? "--resume"
                        : !options.initFrom.empty()      ? "--init-from"
                                                         : nullptr;
    if (alone)
      error = std::string("--interleave runs plans in turn for timing; it "
                          "does not take ") + alone;
  }
  return error.empty();
}

} // namespace cleave::worker
