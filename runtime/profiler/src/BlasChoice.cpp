//===- BlasChoice.cpp - Time the OpenBLAS kernels this CPU can run --------===//

#include "cleave/runtime/profiler/CpuProfiler.h"

#include "cleave/runtime/subprocess/Subprocess.h"

#include "cleave/runtime/kernels/BlasKernels.h"
#include "cleave/runtime/kernels/GemmLibrary.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace cleave::profiler {

namespace {

/// One `worker --blas-probe` run under `environment`: the kernels it
/// loaded and their rate, or a zero rate where it failed (a core type the
/// CPU cannot run ends on an illegal instruction).
std::pair<std::string, double> probe(const std::string &worker,
                                     std::vector<std::string> environment,
                                     double timeoutSeconds) {
  environment.push_back("OPENBLAS_NUM_THREADS=1");
  environment.push_back("OMP_NUM_THREADS=1");
  std::string last;
  absl::StatusOr<subprocess::ProcessOutcome> outcome = subprocess::runProcess(
      {worker, "--blas-probe"}, environment, timeoutSeconds,
      [&](const std::string &line) { last = line; });
  if (!outcome.ok() || outcome->exitStatus != 0)
    return {"", 0.0};
  std::istringstream in(last);
  std::string name;
  double rate = 0;
  if (!(in >> name >> rate))
    return {"", 0.0};
  return {name, rate};
}

} // namespace

absl::StatusOr<BlasKernelChoice>
chooseBlasKernels(const std::string &worker, double timeoutSeconds) {
  BlasKernelChoice out;
  // The default: what OpenBLAS loads by itself (no choice adopted).
  auto [defaultCore, defaultRate] =
      probe(worker, {"CLEAVE_BLAS_CORETYPE=default"}, timeoutSeconds);
  if (defaultCore.empty() || defaultRate <= 0)
    return absl::FailedPreconditionError(
        worker + " --blas-probe failed: the BLAS is not OpenBLAS, or the "
                 "worker does not run");
  out.defaultCore = defaultCore;
  out.rates.push_back({defaultCore, defaultRate});
  for (const std::string &core :
       kernels::candidateCoreTypes(kernels::cpuFlags())) {
    if (core == defaultCore)
      continue;
    auto [loaded, rate] =
        probe(worker, {"OPENBLAS_CORETYPE=" + core}, timeoutSeconds);
    // OpenBLAS falls back to another core type for one it does not know.
    if (loaded == core)
      out.rates.push_back({core, rate});
  }
  // oneDNN's GEMMs, where Debian's libdnnl2 is installed: one more
  // candidate, chosen like a kernel set when it is the fastest by more
  // than the noise (GemmLibrary.h).
  if (kernels::oneDnnAvailable()) {
    auto [loaded, rate] = probe(
        worker,
        {"CLEAVE_GEMM=onednn", "CLEAVE_BLAS_CORETYPE=default"},
        timeoutSeconds);
    if (loaded == kernels::kOneDnnChoice)
      out.rates.push_back({loaded, rate});
  }
  std::vector<kernels::CoreTypeRate> rates;
  for (const auto &[core, rate] : out.rates)
    rates.push_back({core, rate});
  out.chosen = kernels::chooseCoreType(rates, defaultCore);
  out.cachePath = kernels::choiceCachePath();
  out.stored =
      kernels::writeChoice(out.cachePath, kernels::choiceKey(), out.chosen);
  return out;
}

std::string describeBlasChoice(const BlasKernelChoice &choice) {
  std::ostringstream out;
  out << "GEMM kernels (OpenBLAS's, and oneDNN where installed), one "
         "thread, GFLOP/s:";
  char buffer[64];
  for (const auto &[core, rate] : choice.rates) {
    std::snprintf(buffer, sizeof(buffer), " %s %.1f%s", core.c_str(), rate,
                  core == choice.defaultCore ? " (default)" : "");
    out << buffer;
  }
  out << "; chosen: " << choice.chosen;
  if (choice.stored)
    out << " (stored in " << choice.cachePath << ")";
  else
    out << " (not stored: no cache directory)";
  return out.str();
}

} // namespace cleave::profiler
