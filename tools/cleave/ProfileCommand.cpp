//===- ProfileCommand.cpp - `cleave profile`: measure this machine --------===//

#include "Commands.h"
#include "ToolSupport.h"

#include "cleave/cost_model/Profile.h"
#include "cleave/runtime/kernels/BlasKernels.h"
#include "cleave/runtime/launcher/Launch.h"
#include "cleave/runtime/profiler/CpuProfiler.h"
#ifdef CLEAVE_HAVE_CUDA
#include "cleave/runtime/cuda/CudaProfiler.h"
#endif

#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

using namespace llvm;

namespace cleave::tool {

namespace {

/// Writes `profile` with its header `comment` to -o.
int writeProfile(const ProfileArgs &args,
                 const absl::StatusOr<cost::Profile> &profile,
                 const std::string &comment) {
  if (!profile.ok())
    return failure("profiling failed: " +
                   std::string(profile.status().message()));
  return writeTextFile(args.output, "-o",
                       cost::formatProfile(*profile, comment));
}

} // namespace

int runProfile(const ProfileArgs &args, char **argv) {
  auto progress = [](const std::string &line) {
    errs() << "profile: " << line << "\n";
  };
  if (args.backend == "cuda") {
#ifdef CLEAVE_HAVE_CUDA
    cuda::CudaProfileOptions options;
    options.quick = args.quick;
    options.progress = progress;
    return writeProfile(args, cuda::profileCuda(options),
                        cuda::cudaProfileComment(options));
#else
    return badUsage("--backend cuda: this build has no CUDA backend (it was "
                    "configured without the CUDA toolkit)");
#endif
  }
  if (args.backend != "cpu")
    return badUsage("--backend must be cpu or cuda, not '" + args.backend +
                    "'");
  if (args.ranks < 0 || args.ranks == 1)
    return badUsage("--ranks must be 0 (no collectives) or at least 2");
  // The OpenBLAS kernels first (BlasKernels.h): time each this CPU can run
  // and keep the fastest, then measure everything with it. Where the choice
  // is not what this process loaded, it starts again with it (and with
  // OPENBLAS_CORETYPE then set, chooses nothing again); a value the user
  // set is theirs, and CLEAVE_BLAS_CORETYPE=default keeps OpenBLAS's own.
  const char *blasOff = std::getenv("CLEAVE_BLAS_CORETYPE");
  if (!std::getenv("OPENBLAS_CORETYPE") &&
      !(blasOff && std::string(blasOff) == "default")) {
    auto choice = profiler::chooseBlasKernels(
        launcher::defaultWorkerPath(argv[0]));
    if (choice.ok()) {
      progress("blas: " + profiler::describeBlasChoice(*choice));
      if (choice->stored)
        kernels::adoptChosenBlasKernels(argv);
    } else {
      progress("blas: kernels not chosen: " +
               std::string(choice.status().message()));
    }
  }
  profiler::CpuProfileOptions options;
  options.ranks = args.ranks;
  options.quick = args.quick;
  options.mpiWorker = args.mpiWorker;
  options.progress = progress;
  return writeProfile(args, profiler::profileCpu(options),
                      profiler::cpuProfileComment(options));
}

} // namespace cleave::tool
