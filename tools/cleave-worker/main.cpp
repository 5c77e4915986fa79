//===- main.cpp - One rank of a plan under mpirun -------------------------===//
//
// Usage: mpirun -n N cleave-worker PLAN [--steps K] [--data tokens.bin]
//        [--seed S] [--trace out.json] [--dump-params DIR] [--timeout S]
//        [--input NAME=FILE]... [--dump-outputs DIR]
//        [--interleave PLAN2]... [--save DIR [--save-every K] [--keep N]
//        [--save-sync]] [--resume DIR] [--init-from FILE.safetensors]
//
// Every rank reads the plan, runs its program for K training steps, and
// rank 0 prints one line per step:
//
//   step 1  loss 4.8523  time 12.3 ms  tokens/s 12345  TFLOP/s 0.05
//
// (TFLOP/s per device; a plan with loss scaling adds `loss scale S`, and
// `skipped (gradients overflowed)` for a step that applied no update). An inference plan (no loss) prints
//
//   step 1  time 3.2 ms  samples/s 2500  TFLOP/s 0.01
//
// `--input NAME=FILE` feeds input NAME from a raw file of its global batch
// (the same rows every step); `--dump-outputs DIR` writes the output
// tensors of the last step, DIR/output<i>.mb<m>.rank<R>.bin. Any error on any rank is printed with the rank and
// ends the whole job (MPI_Abort), so that no rank waits forever on a peer
// that gave up; a watchdog does the same for an instruction that runs past
// --timeout.
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
#include "Options.h"

#include "cleave/runtime/checkpoint/Weights.h"

#include "cleave/runtime/comm/MpiCommunicator.h"
#ifdef CLEAVE_HAVE_CUDA
#include "cleave/runtime/cuda/CudaBackend.h"
#include "cleave/runtime/cuda/NcclCommunicator.h"
#endif
#include "cleave/runtime/executor/Executor.h"
#include "cleave/runtime/kernels/BlasKernels.h"
#include "cleave/runtime/launcher/RunDumps.h"
#include "cleave/runtime/plan/PlanIO.h"

#include "absl/strings/str_cat.h"

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <fstream>
#include <sstream>
#include <thread>

using namespace cleave;

namespace {

int gRank = 0;
int gSize = 1;

/// Prints the error and ends the job: every rank, not just this one.
[[noreturn]] void fail(const std::string &message) {
  std::fprintf(stderr, "cleave-worker: rank %d: %s\n", gRank, message.c_str());
  std::fflush(stderr);
  if (gSize > 1)
    comm::mpiAbort(1);
  comm::mpiFinalize();
  std::exit(1);
}

int64_t nowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void injectFault(const worker::Options &options, int64_t step) {
  if (options.fault.empty() || options.faultRank != gRank ||
      options.faultStep != step)
    return;
  std::fprintf(stderr, "rank %d: injecting fault '%s' at step %lld\n", gRank,
               options.fault.c_str(), static_cast<long long>(step));
  std::fflush(stderr);
  if (options.fault == "kill")
    std::raise(SIGKILL);
  if (options.fault == "exit")
    std::_Exit(3);
  if (options.fault == "hang")
    for (;;)
      std::this_thread::sleep_for(std::chrono::seconds(1));
}

void dumpParameters(const plan::Plan &plan, const executor::Executor &ex,
                    const std::string &dir,
                    const std::vector<double> &losses) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  for (const plan::TensorDecl &t : ex.program().tensors()) {
    if (t.kind() != plan::TensorDecl::PARAMETER)
      continue;
    std::string name = plan.parameters(t.param_index()).name();
    std::string path = launcher::parameterDumpPath(
        dir, name.empty() ? t.name() : name, gRank);
    std::vector<float> values = ex.tensorValues(t.id());
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char *>(values.data()),
              static_cast<std::streamsize>(values.size() * sizeof(float)));
    if (!out)
      fail("cannot write " + path);
  }
  if (gRank == 0) {
    std::ofstream out(launcher::lossDumpPath(dir), std::ios::trunc);
    char line[64];
    for (double loss : losses) {
      std::snprintf(line, sizeof(line), "%.9g\n", loss);
      out << line;
    }
    if (!out)
      fail("cannot write " + launcher::lossDumpPath(dir));
  }
}

/// --dump-outputs: per output i and microbatch m of the last step, the
/// slot's raw contents (fp32 for F32 outputs) in DIR/output<i>.mb<m>.rank<R>.bin.
/// Only ranks whose program has outputs write; nothing else is written.
void dumpOutputs(const executor::Executor &ex, const std::string &dir) {
  const plan::Program &p = ex.program();
  if (p.output_tensors_size() == 0)
    return;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  for (int i = 0; i < p.output_tensors_size(); ++i)
    for (int64_t m = 0; m < ex.numMicrobatches(); ++m) {
      std::string path = launcher::outputDumpPath(dir, i, m, gRank);
      std::string bytes = ex.outputBytes(i, m);
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      if (!out)
        fail("cannot write " + path);
    }
}

/// --list: the rank's program as the executor will run it.
/// The mesh axes any program of the plan sends along (the same on every
/// rank, which the NCCL communicator's collective setup needs).
std::vector<std::string> pointToPointAxes(const plan::Plan &plan) {
  std::set<std::string> axes;
  for (const plan::Program &program : plan.programs())
    for (const plan::Segment &segment : program.segments())
      for (const plan::Instruction &inst : segment.instructions()) {
        if (inst.op() != "comm.send" && inst.op() != "comm.recv")
          continue;
        auto axis = inst.attrs().find("axis");
        if (axis != inst.attrs().end())
          axes.insert(axis->second.s());
      }
  return {axes.begin(), axes.end()};
}

std::string listProgram(const plan::Plan &plan) {
  const plan::Program &p = plan.programs(plan.ranks(gRank).program());
  std::string text = "rank " + std::to_string(gRank) + ": program " +
                     std::to_string(p.id()) + " (" + p.name() + "), arena " +
                     std::to_string(p.arena_bytes()) + " bytes\n  schedule:";
  for (const plan::ScheduleStep &s : p.schedule())
    text += " " + p.segments(s.segment()).name() + ":" +
            std::to_string(s.microbatch());
  text += "\n";
  for (int s = 0; s < p.segments_size(); ++s) {
    const plan::Segment &segment = p.segments(s);
    text += "  segment " + std::to_string(s) + " '" + segment.name() + "'\n";
    for (int i = 0; i < segment.instructions_size(); ++i) {
      const plan::Instruction &inst = segment.instructions(i);
      text += "    " + std::to_string(i) + " " + inst.op() + " (";
      for (int k = 0; k < inst.inputs_size(); ++k)
        text += (k ? ", " : "") + std::to_string(inst.inputs(k));
      text += ") -> (";
      for (int k = 0; k < inst.outputs_size(); ++k)
        text += (k ? ", " : "") + std::to_string(inst.outputs(k));
      text += ")";
      std::map<std::string, std::string> attrs;
      for (const auto &[name, value] : inst.attrs())
        attrs[name] = value.ShortDebugString();
      for (const auto &[name, value] : attrs)
        text += " " + name + "={" + value + "}";
      if (inst.has_async_handle())
        text += " async=" + std::to_string(inst.async_handle());
      text += "\n";
    }
  }
  return text;
  std::fflush(stdout);
}

/// Each rank writes its events to PATH.rankR; after a barrier rank 0 joins
/// them into PATH (one process per rank) and removes the parts.
void writeTrace(comm::Communicator &comm, const executor::Executor &ex,
                const std::string &path, double originUs) {
  std::string part = path + ".rank" + std::to_string(gRank);
  {
    std::ofstream out(part, std::ios::trunc);
    bool first = true;
    executor::writeChromeTraceRankNames(gRank, out, first);
    executor::writeChromeTraceEvents(ex.traceEvents(), gRank, originUs, out,
                                     first);
    if (!out)
      fail("cannot write " + part);
  }
  float token = 0;
  comm::CommTensor barrier{&token, {1}, comm::ElementType::F32};
  comm.allReduce(comm.mesh().axisNames, barrier, barrier, comm::Reduction::Sum);
  if (gRank != 0)
    return;
  std::ofstream out(path, std::ios::trunc);
  executor::writeChromeTraceHeader(out);
  for (int r = 0; r < gSize; ++r) {
    std::string name = path + ".rank" + std::to_string(r);
    std::ifstream in(name);
    std::stringstream text;
    text << in.rdbuf();
    if (r > 0)
      out << ",\n";
    out << text.str();
    std::remove(name.c_str());
  }
  executor::writeChromeTraceFooter(out);
  if (!out)
    fail("cannot write " + path);
}

/// One plan of --interleave: its rank's executor and what keeps it running.
struct InterleavedPlan {
  std::string path;
  plan::Plan plan;
  std::unique_ptr<comm::Communicator> comm;
  std::unique_ptr<executor::Executor> executor;
  std::unique_ptr<executor::Watchdog> watchdog;
};

/// --interleave: K steps of every plan, one step of each in turn. Round r
/// starts with plan r mod N, so that no plan always follows the same one.
/// Rank 0 prints `plan I step K  loss L  time T ms` per step (I in the
/// order given, the positional plan first). Each step ends in an
/// all-reduce of its loss over every rank, so the next plan's step starts
/// with the ranks together, as a step of `cleave run` does.
int runInterleaved(const worker::Options &options) {
  std::vector<std::string> paths = {options.planPath};
  paths.insert(paths.end(), options.interleavePaths.begin(),
               options.interleavePaths.end());
  std::vector<InterleavedPlan> plans(paths.size());
  for (size_t i = 0; i < paths.size(); ++i) {
    InterleavedPlan &p = plans[i];
    p.path = paths[i];
    absl::StatusOr<plan::Plan> read = plan::readPlanFile(p.path);
    if (!read.ok())
      fail(std::string(read.status().message()));
    p.plan = *std::move(read);
    if (p.plan.ranks_size() != gSize)
      fail(p.path + ": the plan has " + std::to_string(p.plan.ranks_size()) +
           " ranks but mpirun started " + std::to_string(gSize) +
           " (--interleave needs plans of one size)");
    comm::MeshInfo mesh;
    for (const plan::MeshAxis &axis : p.plan.mesh().axes()) {
      mesh.axisNames.push_back(axis.name());
      mesh.axisSizes.push_back(axis.size());
    }
    mesh.coords.assign(p.plan.ranks(gRank).coords().begin(),
                       p.plan.ranks(gRank).coords().end());
    try {
      p.comm = comm::createMpiCommunicator(mesh);
    } catch (const std::exception &e) {
      fail(p.path + ": " + e.what());
    }
    executor::ExecutorOptions execOptions;
    execOptions.seed = options.seed;
    execOptions.fuse = options.fuse;
    absl::StatusOr<std::unique_ptr<executor::Executor>> ex =
        executor::Executor::create(p.plan, gRank, *p.comm, execOptions);
    if (!ex.ok())
      fail(p.path + ": " + std::string(ex.status().message()));
    p.executor = *std::move(ex);
    p.watchdog = std::make_unique<executor::Watchdog>(
        *p.executor, options.timeoutSeconds, [] { comm::mpiAbort(1); });
  }
  size_t n = plans.size();
  for (int64_t step = 1; step <= options.steps; ++step)
    for (size_t turn = 0; turn < n; ++turn) {
      size_t i = (static_cast<size_t>(step - 1) + turn) % n;
      absl::StatusOr<executor::StepResult> result =
          plans[i].executor->runStep(step);
      if (!result.ok())
        fail(plans[i].path + ": " + std::string(result.status().message()));
      if (gRank == 0) {
        std::printf("plan %zu step %lld  loss %.4f  time %.1f ms\n", i,
                    static_cast<long long>(step), result->loss,
                    result->seconds * 1e3);
        std::fflush(stdout);
      }
    }
  for (InterleavedPlan &p : plans)
    if (absl::Status s = p.executor->finishSteps(); !s.ok())
      fail(p.path + ": " + std::string(s.message()));
  // Executors and watchdogs before their communicators, all before MPI.
  for (InterleavedPlan &p : plans) {
    p.watchdog.reset();
    p.executor.reset();
    p.comm.reset();
  }
  comm::mpiFinalize();
  return 0;
}

} // namespace

/// `--blas-probe`: the loaded OpenBLAS kernels' name and GEMM rate, for
/// the profiler's choice of kernels (BlasKernels.h); `--blas-info`: the
/// kernels this worker runs on and the choice it found. Neither starts MPI.
int blasReport(const std::string &mode) {
  if (mode == "--blas-probe") {
    double rate = kernels::probeGemmRate();
    std::printf("%s %.3f\n", kernels::openBlasCoreName().c_str(), rate);
    return rate > 0 ? 0 : 1;
  }
  std::optional<std::string> chosen =
      kernels::readChoice(kernels::choiceCachePath(), kernels::choiceKey());
  const char *forced = std::getenv("OPENBLAS_CORETYPE");
  std::printf("loaded: %s\nOPENBLAS_CORETYPE: %s\nchoice: %s\ncache: %s\n"
              "key: %s\n",
              kernels::openBlasCoreName().c_str(), forced ? forced : "(unset)",
              chosen ? chosen->c_str() : "(none)",
              kernels::choiceCachePath().c_str(), kernels::choiceKey().c_str());
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 2 && std::string(argv[1]) == "--blas-probe")
    return blasReport(argv[1]);
  // Before MPI starts: this may re-execute the worker.
  kernels::adoptChosenBlasKernels(argv);
  if (argc == 2 && std::string(argv[1]) == "--blas-info")
    return blasReport(argv[1]);
  comm::mpiInitialize(&argc, &argv);
  gRank = comm::mpiWorldRank();
  gSize = comm::mpiWorldSize();

  worker::Options options;
  std::string error;
  if (!worker::parseOptions(argc, argv, options, error)) {
    if (gRank == 0)
      std::fprintf(stderr, "cleave-worker: %s\n%s", error.c_str(),
                   worker::kUsage);
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
      if (gRank == 0)
        std::fprintf(stderr, "cleave-worker: --backend cuda: this build has "
                             "no CUDA backend\n");
      comm::mpiFinalize();
      return 1;
#endif
    }
    if (gRank == 0)
      for (const std::string &op : ops)
        std::printf("%s\n", op.c_str());
    comm::mpiFinalize();
    return 0;
  }

  absl::StatusOr<plan::Plan> plan = plan::readPlanFile(options.planPath);
  if (!plan.ok())
    fail(std::string(plan.status().message()));
  if (plan->ranks_size() != gSize) {
    // Every rank sees the same mismatch: report once, end together.
    if (gRank == 0 && comm::mpiDisabled())
      std::fprintf(stderr,
                   "cleave-worker: the plan has %d ranks, and without MPI "
                   "(CLEAVE_NO_MPI=1) the worker is one; run it with mpirun "
                   "-n %d\n",
                   plan->ranks_size(), plan->ranks_size());
    else if (gRank == 0)
      std::fprintf(stderr,
                   "cleave-worker: the plan has %d ranks but mpirun started "
                   "%d; run it with mpirun -n %d\n",
                   plan->ranks_size(), gSize, plan->ranks_size());
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
  if (!options.outputsDir.empty() && !hasOutputs) {
    if (gRank == 0)
      std::fprintf(stderr,
                   "cleave-worker: --dump-outputs: the plan has no output "
                   "tensors (only inference plans have them)\n");
    comm::mpiFinalize();
    return 1;
  }

  comm::MeshInfo mesh;
  for (const plan::MeshAxis &axis : plan->mesh().axes()) {
    mesh.axisNames.push_back(axis.name());
    mesh.axisSizes.push_back(axis.size());
  }
  mesh.coords.assign(plan->ranks(gRank).coords().begin(),
                     plan->ranks(gRank).coords().end());
  // Every rank finds the same fault with --input files: report it once.
  if (absl::Status s = executor::checkInputFiles(*plan, mesh,
                                                 options.inputFiles);
      !s.ok()) {
    if (gRank == 0)
      std::fprintf(stderr, "cleave-worker: %s\n",
                   std::string(s.message()).c_str());
    comm::mpiFinalize();
    return 1;
  }
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
      if (gRank == 0)
        std::fprintf(stderr, "cleave-worker: --backend cuda: %s\n",
                     std::string(gpus.status().message()).c_str());
      comm.reset();
      comm::mpiFinalize();
      return 1;
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
    if (gRank == 0)
      std::fprintf(stderr,
                   "cleave-worker: --backend cuda: this build has no CUDA "
                   "backend (it was configured without the CUDA toolkit; "
                   "see docs/dependencies.md)\n");
    comm.reset();
    comm::mpiFinalize();
    return 1;
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
      if (gRank == 0)
        std::fprintf(stderr, "cleave-worker: %s\n",
                     std::string(fits.message()).c_str());
      comm.reset();
      comm::mpiFinalize();
      return 1;
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
  execOptions.trace = !options.tracePath.empty();
  execOptions.fuse = options.fuse;
  absl::StatusOr<std::unique_ptr<executor::Executor>> ex =
      executor::Executor::create(*plan, gRank,
                                 deviceComm ? *deviceComm : *comm,
                                 execOptions);
  if (!ex.ok())
    fail(std::string(ex.status().message()));
  executor::Watchdog watchdog(**ex, options.timeoutSeconds,
                              [] { comm::mpiAbort(1); });

  worker::MpiCoordinator coordinator(*comm, gRank, gSize);
  int64_t firstStep = 1;
  std::string initFrom;
  if (resumed) {
    absl::StatusOr<checkpoint::LoadReport> loaded =
        checkpoint::restoreRank(*resumed, *plan, gRank, **ex);
    if (!loaded.ok())
      fail("--resume: " + std::string(loaded.status().message()));
    worker::reportLoad(*resumed, *loaded, coordinator);
    if (gRank == 0)
      for (const std::string &note : resumeNotes)
        std::printf("checkpoint: %s\n", note.c_str());
    firstStep = resumed->manifest.step() + 1;
    initFrom = resumed->manifest.run().init_from();
  } else if (weights) {
    if (absl::Status s =
            checkpoint::loadWeightsIntoRank(*weights, *plan, gRank, **ex);
        !s.ok())
      fail("--init-from: " + std::string(s.message()));
    std::error_code ec;
    initFrom = std::filesystem::absolute(options.initFrom, ec).string();
  }
  std::unique_ptr<checkpoint::Saver> saver;
  // The step whose save the kill-in-save fault cuts (the writer thread
  // reads it).
  std::atomic<int64_t> savingStep{0};
  if (!options.saveDir.empty()) {
    checkpoint::SaveOptions saveOptions;
    saveOptions.dir = options.saveDir;
    saveOptions.async = !options.saveSync;
    saveOptions.keep = static_cast<int>(options.keep);
    if (options.fault == "kill-in-save" && options.faultRank == gRank)
      saveOptions.afterFirstBlock = [&options, &savingStep] {
        if (savingStep.load() < options.faultStep)
          return;
        std::fprintf(stderr, "rank %d: injecting fault 'kill-in-save' while "
                             "saving step %lld\n",
                     gRank, static_cast<long long>(savingStep.load()));
        std::fflush(stderr);
        std::raise(SIGKILL);
      };
    saver = std::make_unique<checkpoint::Saver>(
        *plan, gRank, coordinator, std::move(saveOptions),
        worker::manifestBase(*plan, options, (*ex)->seed(), initFrom));
  }
  // A failed save: rank 0 holds every rank's message and ends the job;
  // the others wait to be ended with it.
  auto failSave = [&](const absl::Status &s) {
    if (absl::IsAborted(s) && gRank != 0)
      comm::mpiBarrier();
    fail(std::string(s.message()));
  };

  // A common time origin for the trace: the latest clock reading before a
  // collective precedes every event after it on every rank.
  int64_t origin = nowUs();
  comm::CommTensor originTensor{&origin, {1}, comm::ElementType::I64};
  comm->allReduce(mesh.axisNames, originTensor, originTensor,
                  comm::Reduction::Max);

  const plan::TrainingConfig &training = plan->training();
  double tokens = training.tokens_per_step();
  if (tokens <= 0)
    tokens = static_cast<double>(training.global_batch()) *
             std::max<int64_t>(1, training.seq_len());
  std::vector<double> losses;
  int64_t lastStep = firstStep + options.steps - 1;
  for (int64_t step = firstStep; step <= lastStep; ++step) {
    injectFault(options, step);
    absl::StatusOr<executor::StepResult> result = (*ex)->runStep(step);
    if (!result.ok())
      fail(std::string(result.status().message()));
    losses.push_back(result->loss);
    if (gRank == 0) {
      double seconds = result->seconds;
      double tflops = training.flops_per_step() / seconds / gSize / 1e12;
      if (!hasLoss) {
        // An inference plan: no loss; samples of the global batch.
        std::string line = "step " + std::to_string(step);
        char text[128];
        std::snprintf(text, sizeof(text), "  time %.1f ms  samples/s %.0f",
                      seconds * 1e3,
                      static_cast<double>(training.global_batch()) / seconds);
        line += text;
        if (training.flops_per_step() > 0) {
          std::snprintf(text, sizeof(text), "  TFLOP/s %.3g", tflops);
          line += text;
        }
        std::printf("%s\n", line.c_str());
        std::fflush(stdout);
        continue;
      }
      // Loss scaling: the scale the step's loss was seeded with, and a
      // step whose gradients overflowed (no update anywhere).
      std::string scaling;
      if ((*ex)->scalesLoss())
        scaling = absl::StrCat("  loss scale ", result->lossScale,
                               result->skipped ? "  skipped (gradients "
                                                 "overflowed)"
                                               : "");
      std::printf("step %lld  loss %.4f  time %.1f ms  tokens/s %.0f  "
                  "TFLOP/s %.3g%s\n",
                  static_cast<long long>(step), result->loss, seconds * 1e3,
                  tokens / seconds, tflops, scaling.c_str());
      std::fflush(stdout);
    }
    if (saver) {
      bool due = step == lastStep ||
                 (options.saveEvery > 0 && step % options.saveEvery == 0);
      absl::Status s = absl::OkStatus();
      if (due) {
        // ZeRO's gathers of the updated blocks complete the parameters.
        if (absl::Status f = (*ex)->finishSteps(); !f.ok())
          fail(std::string(f.message()));
        savingStep = step;
        s = saver->save(step, **ex);
      } else {
        s = saver->poll(/*wait=*/false);
      }
      if (!s.ok())
        failSave(s);
      worker::reportSaves(*saver, coordinator, !options.saveSync);
    }
  }
  if (saver) {
    if (absl::Status s = saver->poll(/*wait=*/true); !s.ok())
      failSave(s);
    worker::reportSaves(*saver, coordinator, !options.saveSync);
  }
  if (absl::Status s = (*ex)->finishSteps(); !s.ok())
    fail(std::string(s.message()));
  if (!options.dumpDir.empty())
    dumpParameters(*plan, **ex, options.dumpDir, losses);
  if (!options.outputsDir.empty())
    dumpOutputs(**ex, options.outputsDir);
  if (!options.tracePath.empty())
    writeTrace(*comm, **ex, options.tracePath, static_cast<double>(origin));
  comm.reset();
  comm::mpiFinalize();
  return 0;
}
