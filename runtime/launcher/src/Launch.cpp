//===- Launch.cpp - Start a plan's ranks under mpirun ---------------------===//

#include "cleave/runtime/launcher/Launch.h"

#include "cleave/runtime/subprocess/Subprocess.h"

#include <cstdio>
#include <unistd.h>

namespace cleave::launcher {

std::vector<std::string> launchCommand(const LaunchOptions &options) {
  std::vector<std::string> argv = {options.mpirun, "-n",
                                   std::to_string(options.ranks)};
  if (geteuid() == 0)
    argv.push_back("--allow-run-as-root");
  if (options.oversubscribe)
    argv.push_back("--oversubscribe");
  for (const char *arg : {"--bind-to", "none", "--mca", "mpi_yield_when_idle",
                          "1"})
    argv.push_back(arg);
  for (const std::string &setting : options.environment) {
    argv.push_back("-x");
    argv.push_back(setting);
  }
  argv.push_back(options.worker.empty() ? "cleave-worker" : options.worker);
  argv.insert(argv.end(), options.workerArgs.begin(), options.workerArgs.end());
  return argv;
}

absl::StatusOr<LaunchResult> launch(const LaunchOptions &options) {
  std::function<void(const std::string &)> onLine = options.onLine;
  if (!onLine)
    onLine = [](const std::string &line) {
      std::printf("%s\n", line.c_str());
      std::fflush(stdout);
    };
  subprocess::MpiSessionDirectory session;
  absl::StatusOr<subprocess::ProcessOutcome> outcome =
      subprocess::runProcess(launchCommand(options), session.environment(),
                           options.timeoutSeconds, onLine,
                           options.shouldStop);
  if (!outcome.ok())
    return outcome.status();
  LaunchResult result;
  result.exitStatus = outcome->exitStatus;
  result.timedOut = outcome->timedOut;
  result.stopped = outcome->stopped;
  result.lastLines = std::move(outcome->lastLines);
  return result;
}

std::string defaultWorkerPath(const std::string &argv0) {
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  std::string path = n > 0 ? std::string(self, n) : argv0;
  size_t slash = path.rfind('/');
  if (slash != std::string::npos) {
    // Build trees put each tool in its own directory: tools/cleave/cleave
    // and tools/cleave-worker/cleave-worker.
    std::string dir = path.substr(0, slash);
    for (const std::string &candidate :
         {dir + "/cleave-worker", dir + "/../cleave-worker/cleave-worker"})
      if (access(candidate.c_str(), X_OK) == 0)
        return candidate;
  }
  return "cleave-worker";
}

} // namespace cleave::launcher
