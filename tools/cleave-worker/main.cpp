//===- main.cpp - One rank of a plan under mpirun -------------------------===//
//
// Usage: mpirun -n N cleave-worker PLAN [--steps K] [--data tokens.bin]
//        [--seed S] [--trace out.json] [--dump-params DIR] [--timeout S]
//        [--input NAME=FILE]... [--masks ones|padded] [--dump-outputs DIR]
//        [--interleave PLAN2]... [--save DIR [--save-every K] [--keep N]
//        [--save-sync]] [--resume DIR] [--init-from FILE.safetensors]
//
// Every rank reads the plan, runs its program for K training steps, and
// rank 0 prints one line per step:
//
//   step 1  loss 4.8523  time 12.3 ms  tokens/s 12345  TFLOP/s 0.05
//
// (Train.h says what else it may print.)
//
// `--input NAME=FILE` feeds input NAME from a raw file of its global batch
// (the same rows every step); `--dump-outputs DIR` writes the output
// tensors of the last step, DIR/output<i>.mb<m>.rank<R>.bin. Any error on
// any rank is printed with the rank and ends the whole job (MPI_Abort), so
// that no rank waits forever on a peer that gave up; a watchdog does the
// same for an instruction that runs past --timeout.
//
// `--save DIR` checkpoints the run (runtime/checkpoint: each rank writes its
// shard, in the background unless --save-sync, and rank 0 commits the
// directory once all have); `--resume DIR` continues a checkpoint's run
// under this plan, whichever plan wrote it, from the step after it;
// `--init-from FILE` starts from whole named weights.
//
// Before MPI starts, the worker adopts the OpenBLAS kernels `cleave profile`
// chose for this machine (re-executing itself with OPENBLAS_CORETYPE set;
// cleave/runtime/kernels/BlasKernels.h). `--blas-probe` times the kernels
// loaded for that choice, `--blas-info` prints what the worker runs.
//
//===----------------------------------------------------------------------===//

#include "Checkpointing.h"
#include "Dumps.h"
#include "Interleave.h"
#include "Job.h"
#include "Options.h"
#include "Generate.h"
#include "Train.h"

#include "cleave/runtime/checkpoint/Weights.h"
#include "cleave/runtime/comm/MpiCommunicator.h"
#ifdef CLEAVE_HAVE_CUDA
#include "cleave/runtime/cuda/CudaBackend.h"
#include "cleave/runtime/cuda/NcclCommunicator.h"
#endif
#include "cleave/runtime/executor/Executor.h"
#include "cleave/runtime/kernels/BlasKernels.h"
#include "cleave/runtime/kernels/GemmLibrary.h"
#include "cleave/runtime/kernels/Threads.h"
#include "cleave/runtime/plan/PlanIO.h"

#include <cstdio>
#include <exception>
#include <cstdlib>
#include <filesystem>
#include <optional>

using namespace cleave;
using namespace cleave::worker;

namespace {

/// `--blas-probe`: the loaded OpenBLAS kernels' name (or "onednn" when
/// oneDNN runs the GEMMs) and GEMM rate, for the profiler's choice of
/// kernels (BlasKernels.h, GemmLibrary.h); `--blas-info`: the kernels this
/// worker runs on, the library of its GEMMs and the choice it found.
/// Neither starts MPI.
int blasReport(const std::string &mode) {
  if (mode == "--blas-probe") {
    double rate = kernels::probeGemmRate();
    std::printf("%s %.3f\n",
                kernels::gemmLibrary() == kernels::GemmLibrary::OneDnn
                    ? kernels::kOneDnnChoice
                    : kernels::openBlasCoreName().c_str(),
                rate);
    return rate > 0 ? 0 : 1;
  }
  std::optional<std::string> chosen =
      kernels::readChoice(kernels::choiceCachePath(), kernels::choiceKey());
  const char *forced = std::getenv("OPENBLAS_CORETYPE");
  std::printf("loaded: %s\nOPENBLAS_CORETYPE: %s\nchoice: %s\ncache: %s\n"
              "key: %s\ngemm: %s\n",
              kernels::openBlasCoreName().c_str(), forced ? forced : "(unset)",
              chosen ? chosen->c_str() : "(none)",
              kernels::choiceCachePath().c_str(), kernels::choiceKey().c_str(),
              kernels::gemmLibraryName(kernels::gemmLibrary()));
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  if (argc == 2 && std::string(argv[1]) == "--blas-probe")
    return blasReport(argv[1]);
  // Before MPI starts: this may re-execute the worker.
  kernels::adoptChosenBlasKernels(argv);
  if (argc == 2 && std::string(argv[1]) == "--blas-info")
    return blasReport(argv[1]);
  comm::mpiInitialize(&argc, &argv);
  setWorld(comm::mpiWorldRank(), comm::mpiWorldSize());
  // One pool of kernel threads a rank, the cores shared by the ranks on
  // this machine (OpenMPI says how many there are) unless the user chose.
  const char *localRanks = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  kernels::adoptRankThreads(localRanks ? std::atoi(localRanks) : 1);
  // An exception no caller handled (a bug: errors travel as absl::Status)
  // ends the job with the rank and the reason, like any other error,
  // instead of std::terminate's abort on one rank and a hang on the others.
  std::set_terminate([] {
    std::string what = "terminate called";
    if (std::exception_ptr e = std::current_exception()) {
      try {
        std::rethrow_exception(e);
      } catch (const std::exception &ex) {
        what = ex.what();
      } catch (...) {
      }
    }
    fail("internal error: " + what + " (a bug in cleave: please report it)");
  });

  Options options;
  std::string error;
  if (!parseOptions(argc, argv, options, error)) {
    if (rank() == 0)
      std::fprintf(stderr, "cleave-worker: %s\n%s", error.c_str(),
                   kUsage);
    comm::mpiFinalize();
    return 2;
  }

  if (!options.interleavePaths.empty())
    return runInterleaved(options);

  if (options.listKernels) {
    std::vector<std::string> ops;
    if (options.backend == "cpu") {
      ops = executor::registeredOps();
    } else {
#ifdef CLEAVE_HAVE_CUDA
      ops = cuda::kernelOps();
#else
      if (rank() == 0)
        std::fprintf(stderr, "cleave-worker: --backend cuda: this build has "
                             "no CUDA backend\n");
      comm::mpiFinalize();
      return 1;
#endif
    }
    if (rank() == 0)
      for (const std::string &op : ops)
        std::printf("%s\n", op.c_str());
    comm::mpiFinalize();
    return 0;
  }

  absl::StatusOr<plan::Plan> plan = plan::readPlanFile(options.planPath);
  if (!plan.ok())
    fail(std::string(plan.status().message()));
  if (plan->ranks_size() != worldSize()) {
    // Every rank sees the same mismatch: report once, end together.
    if (rank() == 0 && comm::mpiDisabled())
      std::fprintf(stderr,
                   "cleave-worker: the plan has %d ranks, and without MPI "
                   "(CLEAVE_NO_MPI=1) the worker is one; run it with mpirun "
                   "-n %d\n",
                   plan->ranks_size(), plan->ranks_size());
    else if (rank() == 0)
      std::fprintf(stderr,
                   "cleave-worker: the plan has %d ranks but mpirun started "
                   "%d; run it with mpirun -n %d\n",
                   plan->ranks_size(), worldSize(), plan->ranks_size());
    comm::mpiFinalize();
    return 1;
  }

  if (options.list) {
    // Rank 0 prints every rank's listing in rank order (mpirun forwards
    // each process's output on its own schedule).
    std::vector<std::string> listings =
        comm::mpiGatherToRoot(listProgram(*plan));
    for (const std::string &text : listings)
      std::fputs(text.c_str(), stdout);
    std::fflush(stdout);
    comm::mpiFinalize();
    return 0;
  }

  bool hasLoss = false, hasOutputs = false;
  for (const plan::Program &p : plan->programs()) {
    hasLoss = hasLoss || p.has_loss_tensor();
    hasOutputs = hasOutputs || p.output_tensors_size() > 0;
  }
  if (!options.outputsDir.empty() && !hasOutputs)
    return endTogether("--dump-outputs: the plan has no output tensors (only "
                       "inference plans have them)");

  comm::MeshInfo mesh = meshOf(*plan);
  // Every rank finds the same fault with --input files: report it once.
  if (absl::Status s = executor::checkInputFiles(*plan, mesh,
                                                 options.inputFiles);
      !s.ok())
    return endTogether(std::string(s.message()));
  // `comm` carries the worker's own host-side messages (time origin,
  // trace barrier); the executor's collectives go through `deviceComm`
  // on the CUDA backend (NCCL on GPU buffers), through `comm` on the CPU.
  std::unique_ptr<comm::Communicator> comm, deviceComm;
  std::unique_ptr<executor::Backend> backend;
  try {
    comm = comm::createMpiCommunicator(mesh);
  } catch (const std::exception &e) {
    fail(e.what());
  }
  if (options.backend == "cuda") {
#ifdef CLEAVE_HAVE_CUDA
    // Every rank probes alike: report once, end together.
    absl::StatusOr<int> gpus = cuda::probeCuda();
    if (!gpus.ok()) {
      comm.reset();
      return endTogether("--backend cuda: " +
                         std::string(gpus.status().message()));
    }
    absl::StatusOr<cuda::GemmPrecision> precision =
        cuda::parseGemmPrecision(plan->knobs().precision());
    if (!precision.ok())
      fail(std::string(precision.status().message()));
    absl::StatusOr<std::unique_ptr<executor::Backend>> b =
        cuda::createCudaBackend(comm::mpiLocalRank(), *precision);
    if (!b.ok())
      fail(std::string(b.status().message()));
    backend = *std::move(b);
    try {
      deviceComm =
          cuda::createNcclCommunicator(mesh, pointToPointAxes(*plan));
    } catch (const std::exception &e) {
      fail(std::string("NCCL: ") + e.what());
    }
#else
    comm.reset();
    return endTogether("--backend cuda: this build has no CUDA backend (it "
                       "was configured without the CUDA toolkit; see "
                       "docs/dependencies.md)");
#endif
  }

  // A checkpoint or weights to start from: every rank checks that they fit
  // the plan alike, so one reports and all end.
  std::optional<checkpoint::Checkpoint> resumed;
  std::optional<checkpoint::SafeTensorsReader> weights;
  std::vector<std::string> resumeNotes;
  {
    absl::Status fits = absl::OkStatus();
    if (!options.resumePath.empty()) {
      absl::StatusOr<checkpoint::Checkpoint> ckpt =
          checkpoint::openCheckpoint(options.resumePath);
      fits = ckpt.status();
      if (ckpt.ok()) {
        fits = checkpoint::checkPlanMatches(*ckpt, *plan, &resumeNotes);
        resumed = *std::move(ckpt);
      }
      if (!fits.ok())
        fits = absl::Status(fits.code(),
                            "--resume: " + std::string(fits.message()));
    } else if (!options.initFrom.empty()) {
      absl::StatusOr<checkpoint::SafeTensorsReader> reader =
          checkpoint::SafeTensorsReader::open(options.initFrom);
      fits = reader.status();
      if (reader.ok()) {
        fits = checkpoint::checkWeightsMatch(*reader, *plan);
        weights = *std::move(reader);
      }
      if (!fits.ok())
        fits = absl::Status(fits.code(),
                            "--init-from: " + std::string(fits.message()));
    }
    if (!fits.ok()) {
      comm.reset();
      return endTogether(std::string(fits.message()));
    }
  }
  // A resumed run keeps the checkpoint's seed: its data go on where they
  // were (the data position is the step).
  std::optional<uint64_t> seed = options.seed;
  if (resumed && !seed)
    seed = resumed->manifest.run().seed();

  executor::ExecutorOptions execOptions;
  execOptions.backend = backend.get();
  execOptions.seed = seed;
  execOptions.dataPath = options.dataPath;
  execOptions.inputFiles = options.inputFiles;
  execOptions.paddedMasks = options.paddedMasks;
  execOptions.trace = !options.tracePath.empty();
  execOptions.fuse = options.fuse;
  absl::StatusOr<std::unique_ptr<executor::Executor>> ex =
      executor::Executor::create(*plan, rank(),
                                 deviceComm ? *deviceComm : *comm,
                                 execOptions);
  if (!ex.ok())
    fail(std::string(ex.status().message()));
  executor::Watchdog watchdog(
      **ex, options.timeoutSeconds, [] { comm::mpiAbort(1); },
      options.heartbeatDir.empty()
          ? std::string()
          : options.heartbeatDir + "/rank-" + std::to_string(rank()));

  MpiCoordinator coordinator(*comm, rank(), worldSize());
  int64_t firstStep = 1;
  std::string initFrom;
  if (resumed) {
    executor::WatchedPhase phase(**ex, "restoring the checkpoint");
    absl::StatusOr<checkpoint::LoadReport> loaded =
        checkpoint::restoreRank(*resumed, *plan, rank(), **ex);
    if (!loaded.ok())
      fail("--resume: " + std::string(loaded.status().message()));
    reportLoad(*resumed, *loaded, coordinator);
    if (rank() == 0)
      for (const std::string &note : resumeNotes)
        std::printf("checkpoint: %s\n", note.c_str());
    firstStep = resumed->manifest.step() + 1;
    initFrom = resumed->manifest.run().init_from();
  } else if (weights) {
    if (absl::Status s =
            checkpoint::loadWeightsIntoRank(*weights, *plan, rank(), **ex);
        !s.ok())
      fail("--init-from: " + std::string(s.message()));
    std::error_code ec;
    initFrom = std::filesystem::absolute(options.initFrom, ec).string();
  }
  if (!options.generatePath.empty()) {
    if (!plan->has_generation())
      fail("--generate: the plan is not a generation plan (compile it with "
           "--serve -o)");
    generate(options, *plan, **ex);
  } else if (plan->has_generation()) {
    fail("the plan is a generation step over key/value caches: run it with "
         "`cleave generate PLAN --prompt-file FILE`");
  } else {
    train({options, *plan, **ex, *comm, coordinator, firstStep, initFrom,
           hasLoss});
  }
  executor::WatchedPhase finishing(**ex, "finishing the job (MPI_Finalize)");
  comm.reset();
  comm::mpiFinalize();
  return 0;
}
