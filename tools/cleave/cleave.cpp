//===- cleave.cpp - The cleave command ------------------------------------===//
//
// Subcommands: import, summary, zoo. Exit codes: 0 success, 1 the work
// failed, 2 bad usage or bad input (the message names the file, node, key or
// flag).
//
//===----------------------------------------------------------------------===//

#include "cleave/Driver/GraphPlanner.h"
#include "cleave/Driver/PlanArtifact.h"
#include "cleave/Driver/PlanReport.h"
#include "cleave/Search/GraphPlanChoice.h"
#include "CheckpointCommand.h"
#include "RunCommand.h"
#include "inspect/Inspect.h"

#include "cleave/runtime/plan/LossScaling.h"
#include "cleave/runtime/plan/PlanIO.h"

#include "cleave/Analysis/ModelSummary.h"
#include "cleave/Analysis/TransformerShape.h"
#include "cleave/Lowering/ActivationEstimate.h"
#include "cleave/Search/GraphPlan.h"
#include "cleave/cost_model/Cluster.h"
#include "cleave/cost_model/PlanKnobs.h"
#include "cleave/cost_model/PlanSearch.h"
#include "cleave/cost_model/Profile.h"
#include "cleave/runtime/kernels/BlasKernels.h"
#include "cleave/runtime/launcher/Launch.h"
#include "cleave/runtime/profiler/CpuProfiler.h"
#ifdef CLEAVE_HAVE_CUDA
#include "cleave/runtime/cuda/CudaProfiler.h"
#endif
#include "cleave/Importers/ModelLoader.h"
#include "cleave/Importers/ModelZoo.h"
#include "cleave/Pipelines.h"
#include "cleave/Transforms/Autodiff.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <sstream>

using cleave::cost::Knob;
using namespace llvm;

namespace {
enum ExitCode { kOk = 0, kFailed = 1, kBadInput = 2 };

cl::SubCommand importCmd("import",
                         "Import MODEL into the graph dialect and print it");
cl::SubCommand summaryCmd("summary",
                          "Print parameters, FLOPs, activation bytes and the "
                          "op histogram of MODEL");
cl::SubCommand zooCmd("zoo", "List the model zoo's families and presets");
cl::SubCommand profileCmd(
    "profile", "Measure this machine (GEMMs, memory bandwidth, collectives "
               "across local MPI ranks) into a profile for --profile");
cl::SubCommand compileCmd(
    "compile", "Score a parallel training plan of MODEL on a cluster: step "
               "time, TFLOP/s, MFU, memory per device, bubble");

cl::SubCommand inspectCmd(
    "inspect", "Show a plan artifact: mesh, stages, shardings, collectives, "
               "memory, predictions; one rank's program; the partitioned IR");
cl::SubCommand runCmd("run", "Train with a plan artifact on local CPU ranks "
                             "(mpirun), optionally checked against one rank");
cl::SubCommand checkpointCmd(
    "checkpoint", "Show a checkpoint (inspect DIR) or write its parameters "
                  "as whole tensors (export DIR -o model.safetensors)");

cl::OptionCategory modelCategory("Model options");
cl::OptionCategory outputCategory("Output options");

cl::opt<std::string> model(cl::Positional, cl::Required,
                           cl::desc("MODEL (a .onnx or .mlir file, or "
                                    "zoo:NAME[,key=value...])"),
                           cl::sub(importCmd), cl::sub(summaryCmd),
                           cl::sub(compileCmd), cl::cat(modelCategory));
cl::opt<int64_t> batch("batch", cl::desc("Bind the batch dimension"),
                       cl::value_desc("N"), cl::sub(importCmd),
                       cl::sub(summaryCmd), cl::sub(compileCmd),
                       cl::cat(modelCategory));
cl::opt<int64_t> seq("seq", cl::desc("Bind the sequence dimension"),
                     cl::value_desc("N"), cl::sub(importCmd),
                     cl::sub(summaryCmd), cl::sub(compileCmd),
                     cl::cat(modelCategory));
cl::list<std::string> dims("dim",
                           cl::desc("Bind a symbolic dimension by name"),
                           cl::value_desc("NAME=VALUE"), cl::sub(importCmd),
                           cl::sub(summaryCmd), cl::sub(compileCmd),
                           cl::cat(modelCategory));
cl::opt<bool> noWeights("no-weights",
                        cl::desc("Drop imported weights (keep shapes only)"),
                        cl::sub(importCmd), cl::sub(summaryCmd),
                        cl::cat(modelCategory));
cl::opt<std::string> output("o", cl::desc("Output file (default: stdout)"),
                            cl::value_desc("FILE"), cl::init("-"),
                            cl::sub(importCmd), cl::cat(outputCategory));
cl::opt<std::string> planOut(
    "o",
    cl::desc("Lower the plan to per-rank programs and write the plan "
             "artifact (the search then keeps to what the lowering "
             "supports)"),
    cl::value_desc("PLAN"), cl::sub(compileCmd), cl::cat(outputCategory));
cl::opt<uint64_t> planSeed("seed",
                           cl::desc("Seed of parameter initialisation and "
                                    "synthetic data in the plan"),
                           cl::init(1234), cl::sub(compileCmd),
                           cl::cat(outputCategory));
cl::opt<std::string> planOptimizer("optimizer",
                                   cl::desc("Optimizer of the plan: adamw, "
                                            "sgd, or none for an inference "
                                            "plan (forward only)"),
                                   cl::init("adamw"), cl::sub(compileCmd),
                                   cl::cat(outputCategory));
cl::opt<double> planLr("lr", cl::desc("Learning rate of the plan"),
                       cl::init(1e-3), cl::sub(compileCmd),
                       cl::cat(outputCategory));
cl::opt<std::string> planLossScale(
    "loss-scale",
    cl::desc("Loss scaling: none, dynamic[,init=N,window=STEPS,growth=F,"
             "backoff=F,min=N], static,init=N or a number (default: dynamic "
             "for precision=fp16, none otherwise)"),
    cl::value_desc("SPEC"), cl::sub(compileCmd), cl::cat(outputCategory));
cl::opt<bool> json("json", cl::desc("Print JSON"), cl::sub(summaryCmd),
                   cl::sub(zooCmd), cl::sub(compileCmd), cl::cat(outputCategory));

cl::OptionCategory planCategory("Plan options");
cl::opt<std::string> clusterSpec(
    "cluster",
    cl::desc("Cluster preset or file, with overrides "
             "(e.g. dgx-a100-80g,nodes=128; see `docs/cluster-format.md`)"),
    cl::value_desc("SPEC"), cl::sub(compileCmd), cl::cat(planCategory));
cl::opt<std::string> profilePath(
    "profile", cl::desc("Measured profile replacing the formulas"),
    cl::value_desc("FILE"), cl::sub(compileCmd), cl::cat(planCategory));
cl::opt<int64_t> globalBatch("global-batch",
                             cl::desc("Samples per training step"),
                             cl::value_desc("B"), cl::sub(compileCmd),
                             cl::cat(planCategory));
cl::opt<std::string> fixKnobs(
    "fix",
    cl::desc("Plan knobs: dp, tp, pp, cp, ep, sp=on|off, zero=0-3, "
             "microbatch, schedule=gpipe|1f1b|interleaved|zb-h1, vpp, "
             "recompute=none|selective|full, precision, "
             "overlap-grad=on|off, overlap-p2p=on|off, overlap-tp=on|off, "
             "zero-bucket=tensor|M, "
             "stages=balanced|even, recompute-scope=needed|layer, "
             "attention=fused|unfused (dp "
             "defaults to the devices left over, "
             "the rest to 1/off/none)"),
    cl::value_desc("KNOB=VALUE,..."), cl::sub(compileCmd),
    cl::cat(planCategory));
cl::OptionCategory artifactCategory("Plan artifact options");
cl::opt<std::string> planPath(cl::Positional, cl::Required,
                              cl::desc("PLAN (written by cleave compile -o)"),
                              cl::sub(inspectCmd), cl::sub(runCmd),
                              cl::cat(artifactCategory));
cl::opt<bool> inspectJson("json", cl::desc("Print JSON"), cl::sub(inspectCmd),
                          cl::cat(artifactCategory));
cl::opt<int> inspectRank("rank",
                         cl::desc("Print rank N's instruction stream for one "
                                  "training step"),
                         cl::value_desc("N"), cl::init(-1),
                         cl::sub(inspectCmd), cl::cat(artifactCategory));
cl::opt<bool> inspectMlir("mlir", cl::desc("Print the partitioned MLIR"),
                          cl::sub(inspectCmd), cl::cat(artifactCategory));
cl::opt<std::string> artifactTrace(
    "trace",
    cl::desc("Write a Chrome trace: inspect, the simulated step; run, the "
             "measured one"),
    cl::value_desc("FILE"), cl::sub(inspectCmd), cl::sub(runCmd),
    cl::cat(artifactCategory));
cl::opt<int64_t> runSteps("steps", cl::desc("Training steps"), cl::init(3),
                          cl::sub(runCmd), cl::cat(artifactCategory));
cl::opt<std::string> runData(
    "data", cl::desc("Token ids (flat uint16, as nanoGPT writes them)"),
    cl::value_desc("FILE"), cl::sub(runCmd), cl::cat(artifactCategory));
cl::opt<bool> runCheck(
    "check",
    cl::desc("Also train the unpartitioned model on one rank and compare the "
             "loss of every step and the final parameters"),
    cl::sub(runCmd), cl::cat(artifactCategory));
cl::opt<double> runTolerance("tolerance",
                             cl::desc("Largest relative error --check accepts"),
                             cl::init(1e-5), cl::sub(runCmd),
                             cl::cat(artifactCategory));
cl::list<std::string> runInputs(
    "input",
    cl::desc("An input's values for the whole global batch (raw "
             "little-endian, the input's dtype)"),
    cl::value_desc("NAME=FILE"), cl::sub(runCmd), cl::cat(artifactCategory));
cl::list<std::string> runExpected(
    "expect-output",
    cl::desc("Compare output I of an inference plan with FILE (raw fp32, the "
             "whole global batch) within --tolerance"),
    cl::value_desc("I=FILE"), cl::sub(runCmd), cl::cat(artifactCategory));
cl::opt<double> runTimeout(
    "timeout",
    cl::desc("Seconds an instruction may take before every rank is stopped"),
    cl::init(60), cl::sub(runCmd), cl::cat(artifactCategory));
cl::opt<bool> runNoFuse(
    "no-fuse",
    cl::desc("Run every instruction alone instead of fusing a GEMM with its "
             "bias, activation or batch sum (to compare)"),
    cl::init(false), cl::sub(runCmd), cl::cat(artifactCategory));
cl::list<std::string> runInterleave(
    "interleave",
    cl::desc("Another plan of as many ranks to time in the same launch: one "
             "step of each plan in turn (benchmarks comparing plans)"),
    cl::value_desc("PLAN"), cl::sub(runCmd), cl::cat(artifactCategory));
cl::OptionCategory checkpointCategory("Checkpoint options");
cl::opt<std::string> runSave(
    "save", cl::desc("Save checkpoints into DIR (each rank its shards)"),
    cl::value_desc("DIR"), cl::sub(runCmd), cl::cat(checkpointCategory));
cl::opt<int64_t> runSaveEvery(
    "save-every", cl::desc("Save every K steps (and after the last)"),
    cl::value_desc("K"), cl::init(0), cl::sub(runCmd),
    cl::cat(checkpointCategory));
cl::opt<int64_t> runKeep("keep",
                         cl::desc("Keep the N newest complete checkpoints"),
                         cl::value_desc("N"), cl::init(0), cl::sub(runCmd),
                         cl::cat(checkpointCategory));
cl::opt<bool> runSaveSync(
    "save-sync",
    cl::desc("Write checkpoints on the training thread (default: in the "
             "background while training goes on)"),
    cl::sub(runCmd), cl::cat(checkpointCategory));
cl::opt<std::string> runResume(
    "resume",
    cl::desc("Continue from a checkpoint (a --save directory's latest, or a "
             "step directory), under this plan whichever plan wrote it"),
    cl::value_desc("DIR"), cl::sub(runCmd), cl::cat(checkpointCategory));
cl::opt<std::string> runInitFrom(
    "init-from",
    cl::desc("Start from whole weights by parameter name (.safetensors, or "
             "an .onnx file with initializers); compile bakes them into the "
             "plan, run reads them at the start"),
    cl::value_desc("FILE"), cl::sub(compileCmd), cl::sub(runCmd),
    cl::cat(checkpointCategory));
cl::opt<int> runMaxRestarts(
    "max-restarts",
    cl::desc("When a rank dies or hangs, restart the job from the last "
             "complete checkpoint up to R times"),
    cl::value_desc("R"), cl::init(0), cl::sub(runCmd),
    cl::cat(checkpointCategory));
// Fault injection for the tests of recovery (cleave-worker --fault), on the
// first launch only.
cl::opt<std::string> runFault("fault", cl::Hidden, cl::sub(runCmd));
cl::opt<int> runFaultRank("fault-rank", cl::Hidden, cl::init(-1),
                          cl::sub(runCmd));
cl::opt<int64_t> runFaultStep("fault-step", cl::Hidden, cl::init(1),
                              cl::sub(runCmd));
cl::list<std::string> checkpointArgs(
    cl::Positional, cl::OneOrMore, cl::desc("inspect DIR | export DIR"),
    cl::sub(checkpointCmd), cl::cat(checkpointCategory));
cl::opt<std::string> checkpointOut(
    "o", cl::desc("export: the safetensors file to write"),
    cl::value_desc("FILE"), cl::sub(checkpointCmd),
    cl::cat(checkpointCategory));
cl::opt<bool> checkpointJson("json", cl::desc("inspect: print JSON"),
                             cl::sub(checkpointCmd),
                             cl::cat(checkpointCategory));
cl::opt<bool> checkpointNoVerify(
    "no-verify",
    cl::desc("inspect: skip reading every shard to verify its checksums"),
    cl::sub(checkpointCmd), cl::cat(checkpointCategory));
cl::OptionCategory profileCategory("Profile options");
cl::opt<std::string> backend(
    "backend",
    cl::desc("cpu or cuda: where `run` trains (one GPU per rank; --check's "
             "reference stays on the CPU) and what `profile` measures"),
    cl::init("cpu"), cl::sub(profileCmd), cl::sub(runCmd),
    cl::cat(profileCategory));
cl::opt<std::string> profileOut("o", cl::desc("Profile file to write"),
                                cl::value_desc("FILE"), cl::Required,
                                cl::sub(profileCmd), cl::cat(profileCategory));
cl::opt<int> profileRanks("ranks",
                          cl::desc("Local MPI ranks for the collective "
                                   "curves (0 skips them)"),
                          cl::init(2), cl::sub(profileCmd), cl::cat(profileCategory));
cl::opt<bool> profileQuick("quick", cl::desc("A small grid (seconds)"),
                           cl::sub(profileCmd), cl::cat(profileCategory));
cl::opt<std::string> mpiWorker(
    "mpi-worker", cl::desc("The cleave-profile-mpi binary"),
    cl::init(CLEAVE_PROFILE_MPI_WORKER), cl::sub(profileCmd), cl::cat(profileCategory));
cl::opt<int> topK("top-k", cl::desc("Print the K best distinct plans"),
                  cl::init(1), cl::sub(compileCmd), cl::cat(planCategory));
cl::opt<std::string> memoryLimitText(
    "memory-limit", cl::desc("Per-device memory cap (e.g. 40GB)"),
    cl::value_desc("SIZE"), cl::sub(compileCmd), cl::cat(planCategory));
cl::opt<double> timeLimit("time-limit",
                          cl::desc("Stop the search after this many seconds"),
                          cl::init(0), cl::sub(compileCmd),
                          cl::cat(planCategory));
cl::opt<bool> exhaustive(
    "exhaustive",
    cl::desc("Simulate every valid combination (small cases)"),
    cl::sub(compileCmd), cl::cat(planCategory));
cl::opt<bool> explain("explain",
                      cl::desc("Show the best plan of every shape and what "
                               "bounds it"),
                      cl::sub(compileCmd), cl::cat(planCategory));
cl::opt<std::string> tracePath(
    "trace", cl::desc("Write the simulated step as a Chrome trace (Perfetto)"),
    cl::value_desc("FILE"), cl::sub(compileCmd), cl::cat(planCategory));
cl::opt<bool> trainingStep(
    "training-step",
    cl::desc("Also build @train_step (backward and AdamW update, cl::cat(outputCategory)); a graph "
             "without a scalar loss gets cross-entropy on its first output"),
    cl::sub(importCmd));

int badUsage(const Twine &message) {
  WithColor::error(errs(), "cleave") << message << "\n";
  return kBadInput;
}

/// Fills import options from the flags; false after reporting a bad flag.
bool parseImportOptions(cleave::ImportOptions &options) {
  if (batch.getNumOccurrences()) {
    if (batch <= 0)
      return badUsage("--batch must be positive, got " + Twine(batch)), false;
    options.batch = batch;
  }
  if (seq.getNumOccurrences()) {
    if (seq <= 0)
      return badUsage("--seq must be positive, got " + Twine(seq)), false;
    options.seq = seq;
  }
  for (const std::string &d : dims) {
    auto [name, value] = StringRef(d).split('=');
    int64_t v;
    if (name.empty() || value.getAsInteger(10, v) || v <= 0)
      return badUsage("--dim expects NAME=VALUE with a positive VALUE, got '" +
                      d + "'"),
             false;
    if (options.dims.count(name.str()))
      return badUsage("--dim " + name + " is given twice"), false;
    options.dims[name.str()] = v;
  }
  options.keepWeights = !noWeights;
  return true;
}

/// Prints a diagnostic as "where: error: message", where is the file
/// position, the ONNX node or the zoo spec that the location names.
void printDiagnostic(mlir::Diagnostic &diag, raw_ostream &os) {
  std::string where;
  llvm::raw_string_ostream w(where);
  mlir::Location loc = diag.getLocation();
  if (auto file = dyn_cast<mlir::FileLineColLoc>(loc)) {
    w << file.getFilename().getValue();
    if (file.getLine())
      w << ":" << file.getLine() << ":" << file.getColumn();
  } else if (auto name = dyn_cast<mlir::NameLoc>(loc)) {
    w << name.getName().getValue();
  } else if (!isa<mlir::UnknownLoc>(loc)) {
    loc.print(w);
  }
  StringRef severity = diag.getSeverity() == mlir::DiagnosticSeverity::Error
                           ? "error"
                       : diag.getSeverity() == mlir::DiagnosticSeverity::Warning
                           ? "warning"
                           : "note";
  os << (where.empty() ? "cleave" : where) << ": " << severity << ": " << diag
     << "\n";
  for (mlir::Diagnostic &note : diag.getNotes())
    printDiagnostic(note, os);
}

/// An MLIR context with every cleave dialect and interface, whose
/// diagnostics print as "where: error: message" without dumping the op.
struct ToolContext {
  static mlir::DialectRegistry registry() {
    mlir::DialectRegistry r;
    cleave::registerCleaveDialects(r);
    cleave::registerAutodiffExternalModels(r);
    return r;
  }

  ToolContext()
      : ctx(registry()), diagnostics(&ctx, [](mlir::Diagnostic &diag) {
          printDiagnostic(diag, errs());
          return mlir::success();
        }) {
    ctx.printOpOnDiagnostic(false);
  }

  /// Loads the MODEL positional argument.
  mlir::OwningOpRef<mlir::ModuleOp>
  loadModel(const cleave::ImportOptions &options) {
    return cleave::loadModel(ctx, model, options);
  }

  mlir::MLIRContext ctx;
  mlir::ScopedDiagnosticHandler diagnostics;
};

int runZoo() {
  std::vector<cleave::ZooEntry> entries = cleave::listZooModels();
  if (json) {
    json::Array arr;
    for (const auto &e : entries)
      arr.push_back(json::Object{{"name", e.name},
                                 {"family", e.family},
                                 {"settings", e.settings},
                                 {"description", e.description}});
    outs() << formatv("{0:2}", json::Value(std::move(arr))) << "\n";
    return kOk;
  }
  for (const auto &e : entries)
    outs() << formatv("{0,-16} {1,-11} {2}\n    {3}\n", e.name, e.family,
                      e.description, e.settings);
  return kOk;
}

int runModelCommand() {
  cleave::ImportOptions options;
  if (!parseImportOptions(options))
    return kBadInput;
  ToolContext tool;
  mlir::MLIRContext &ctx = tool.ctx;
  mlir::OwningOpRef<mlir::ModuleOp> module = tool.loadModel(options);
  if (!module)
    return kBadInput;

  // The training step: printed by `import --training-step`, counted by
  // `summary` (which falls back to an estimate when the model cannot be
  // differentiated, e.g. an integer output).
  auto buildTrainingStep = [&](mlir::ModuleOp m) {
    mlir::PassManager pm(&ctx);
    cleave::TrainingPipelineOptions options;
    options.appendLoss = cleave::needsLoss(m);
    cleave::buildTrainingPipeline(pm, options);
    return pm.run(m);
  };

  if (importCmd) {
    if (trainingStep && failed(buildTrainingStep(*module)))
      return kFailed;
    std::string error;
    auto file = mlir::openOutputFile(output, &error);
    if (!file) {
      WithColor::error(errs(), "cleave") << "-o " << output << ": " << error
                                         << "\n";
      return kFailed;
    }
    module->print(file->os(), mlir::OpPrintingFlags().elideLargeResourceString());
    file->os() << "\n";
    file->keep();
    return kOk;
  }
  // The model as given, with training FLOPs counted on a copy that holds
  // @train_step (and the loss appended when it had none). A model that
  // cannot be differentiated keeps the estimate, and the output says so.
  cleave::ModelSummary summary = cleave::summarizeModel(*module);
  mlir::OwningOpRef<mlir::ModuleOp> withStep(module->clone());
  {
    mlir::ScopedDiagnosticHandler quiet(&ctx, [](mlir::Diagnostic &) {
      return mlir::success();
    });
    if (succeeded(buildTrainingStep(*withStep))) {
      cleave::ModelSummary trained = cleave::summarizeModel(*withStep);
      summary.trainingFlops = trained.trainingFlops;
      summary.trainingFlopsCounted = trained.trainingFlopsCounted;
    }
  }
  if (json)
    outs() << formatv("{0:2}", cleave::toJson(summary)) << "\n";
  else
    cleave::printSummary(summary, outs());
  return kOk;
}
/// Writes `text` to `path` for the flag `flag` ("-o", "--trace"); the exit
/// code (kFailed, with the reason, when the file cannot be written).
int writeTextFile(const std::string &path, StringRef flag,
                  const std::string &text) {
  std::error_code ec;
  raw_fd_ostream file(path, ec);
  if (ec) {
    WithColor::error(errs(), "cleave")
        << flag << " " << path << ": " << ec.message() << "\n";
    return kFailed;
  }
  file << text;
  return kOk;
}

/// Writes `profile` with its header `comment` to -o.
int writeProfile(const absl::StatusOr<cleave::cost::Profile> &profile,
                 const std::string &comment) {
  if (!profile.ok()) {
    WithColor::error(errs(), "cleave")
        << "profiling failed: " << std::string(profile.status().message())
        << "\n";
    return kFailed;
  }
  return writeTextFile(profileOut, "-o",
                       cleave::cost::formatProfile(*profile, comment));
}

int runProfile(char **argv) {
  auto progress = [](const std::string &line) {
    errs() << "profile: " << line << "\n";
  };
  if (backend == "cuda") {
#ifdef CLEAVE_HAVE_CUDA
    cleave::cuda::CudaProfileOptions options;
    options.quick = profileQuick;
    options.progress = progress;
    return writeProfile(cleave::cuda::profileCuda(options),
                        cleave::cuda::cudaProfileComment(options));
#else
    return badUsage("--backend cuda: this build has no CUDA backend (it was "
                    "configured without the CUDA toolkit)");
#endif
  }
  if (backend != "cpu")
    return badUsage("--backend must be cpu or cuda, not '" + backend + "'");
  if (profileRanks < 0 || profileRanks == 1)
    return badUsage("--ranks must be 0 (no collectives) or at least 2");
  // The OpenBLAS kernels first (BlasKernels.h): time each this CPU can run
  // and keep the fastest, then measure everything with it. Where the choice
  // is not what this process loaded, it starts again with it (and with
  // OPENBLAS_CORETYPE then set, chooses nothing again); a value the user
  // set is theirs, and CLEAVE_BLAS_CORETYPE=default keeps OpenBLAS's own.
  const char *blasOff = std::getenv("CLEAVE_BLAS_CORETYPE");
  if (!std::getenv("OPENBLAS_CORETYPE") &&
      !(blasOff && std::string(blasOff) == "default")) {
    auto choice = cleave::profiler::chooseBlasKernels(
        cleave::launcher::defaultWorkerPath(argv[0]));
    if (choice.ok()) {
      progress("blas: " + cleave::profiler::describeBlasChoice(*choice));
      if (choice->stored)
        cleave::kernels::adoptChosenBlasKernels(argv);
    } else {
      progress("blas: kernels not chosen: " +
               std::string(choice.status().message()));
    }
  }
  cleave::profiler::CpuProfileOptions options;
  options.ranks = profileRanks;
  options.quick = profileQuick;
  options.mpiWorker = mpiWorker;
  options.progress = progress;
  return writeProfile(cleave::profiler::profileCpu(options),
                      cleave::profiler::cpuProfileComment(options));
}

/// Parses "80GB", "40 GiB" or a plain byte count.
std::optional<double> parseBytes(StringRef text) {
  text = text.trim();
  size_t digits = text.find_first_not_of("0123456789.eE+");
  double value;
  if (text.substr(0, digits).getAsDouble(value) || value < 0)
    return std::nullopt;
  StringRef unit = text.substr(digits).trim();
  double scale = llvm::StringSwitch<double>(unit.lower())
                     .Cases("", "b", 1)
                     .Case("kb", 1e3)
                     .Case("mb", 1e6)
                     .Case("gb", 1e9)
                     .Case("tb", 1e12)
                     .Case("kib", 1024.0)
                     .Case("mib", 1024.0 * 1024)
                     .Case("gib", 1024.0 * 1024 * 1024)
                     .Default(-1);
  if (scale < 0)
    return std::nullopt;
  return value * scale;
}

/// Lowers `prediction` of the model to the plan artifact -o names (the
/// knob-level shape when the model is a transformer, else only its name).
int writeArtifact(ToolContext &tool, const cleave::ImportOptions &options,
                  const cleave::cost::Cluster &cluster,
                  const cleave::cost::PlanPrediction &prediction,
                  const cleave::cost::Profile *prof,
                  std::optional<cleave::cost::TransformerModel> shape,
                  const std::string &name, std::string simulatedTrace = {},
                  std::vector<std::string> why = {}) {
  cleave::driver::ArtifactRequest request;
  request.path = planOut;
  request.modelSource = model;
  request.clusterSpec = clusterSpec;
  request.cluster = cluster;
  request.transformer = shape.has_value();
  if (shape)
    request.shape = *shape;
  request.shape.name = name;
  request.prediction = prediction;
  request.profile = prof;
  if (prof)
    request.profilePath = profilePath;
  request.globalBatch = globalBatch;
  request.seed = planSeed;
  request.step.optimizer = planOptimizer;
  request.step.lr = planLr;
  if (!planLossScale.empty()) {
    absl::StatusOr<cleave::plan::LossScaling> scaling =
        cleave::plan::parseLossScaling(planLossScale);
    if (!scaling.ok())
      return badUsage("--loss-scale=" + planLossScale + ": " +
                      std::string(scaling.status().message()));
    request.lossScaling = *scaling;
  }
  request.importOptions = options;
  request.simulatedTrace = std::move(simulatedTrace);
  request.why = std::move(why);
  request.load = [&](const cleave::ImportOptions &o) {
    return tool.loadModel(o);
  };
  if (runInitFrom.empty())
    return cleave::driver::writePlanArtifact(request);
  // The weights to bake: a safetensors file, or an ONNX file's
  // initializers written to a temporary one (removed once baked).
  absl::StatusOr<std::string> weights =
      cleave::tool::weightsForWorkers(runInitFrom);
  if (!weights.ok())
    return badUsage("--init-from " + runInitFrom + ": " +
                    std::string(weights.status().message()));
  std::string source = std::filesystem::absolute(runInitFrom.getValue());
  request.initFromFile = *weights;
  request.initFromSource = source;
  int code = cleave::driver::writePlanArtifact(request);
  if (*weights != source)
    std::filesystem::remove(*weights);
  return code;
}

/// Set when the model's file fixes its batch (fixedBatch below).
std::optional<int64_t> fileBatch;

/// The batch a model's file fixes: imported at another batch, its first
/// input keeps the leading dimension it had in `module` (zoo models follow
/// the batch asked for).
std::optional<int64_t> fixedBatch(ToolContext &tool,
                                  const cleave::ImportOptions &options,
                                  mlir::ModuleOp module) {
  if (StringRef(model).starts_with("zoo:"))
    return std::nullopt;
  int64_t imported = cleave::summarizeModel(module).samples;
  if (StringRef(model).ends_with(".mlir"))
    return imported; // MLIR text has static shapes
  cleave::ImportOptions other = options;
  other.batch = imported + 1;
  other.keepWeights = false; // the shapes are all this asks of it
  mlir::OwningOpRef<mlir::ModuleOp> again;
  {
    mlir::ScopedDiagnosticHandler quiet(
        &tool.ctx, [](mlir::Diagnostic &) { return mlir::success(); });
    again = tool.loadModel(other);
  }
  if (!again || cleave::summarizeModel(*again).samples != imported)
    return std::nullopt;
  return imported;
}

/// `compile` for a graph without transformer layers (ResNets, imported CNNs
/// and MLPs): data parallelism, pipeline stages of its residual blocks and
/// tensor parallelism inside a node, its sharding chosen by the
/// intra-operator search (dp x pp x tp = every device), with the
/// microbatch, schedule (GPipe, 1F1B, interleaved, ZB-H1) and ZeRO stage
/// searched
/// (cleave/Search/GraphPlan.h).
int compileGraph(ToolContext &tool, cleave::ImportOptions options,
                 const cleave::cost::Cluster &cluster,
                 cleave::cost::ParallelConfig plan,
                 const cleave::cost::KnobSet &fixed,
                 const cleave::cost::Profile *prof,
                 std::optional<double> memoryLimit) {
  cleave::driver::GraphPlanRequest request;
  request.model = model;
  request.options = options;
  request.fileBatch = fileBatch;
  request.cluster = cluster;
  request.plan = plan;
  request.fixed = fixed;
  request.profile = prof;
  request.memoryLimit = memoryLimit;
  request.globalBatch = globalBatch;
  request.optimizer = planOptimizer;
  request.exhaustive = exhaustive;
  request.topK = topK;
  request.explain = explain;
  request.showProgress = !json && sys::Process::StandardErrIsDisplayed();
  request.load = [&](const cleave::ImportOptions &o) {
    return tool.loadModel(o);
  };
  request.context = &tool.ctx;
  absl::StatusOr<cleave::driver::GraphPlanResult> searched =
      cleave::driver::planGraph(std::move(request));
  if (!searched.ok()) {
    if (absl::IsInvalidArgument(searched.status()))
      return badUsage(std::string(searched.status().message()));
    WithColor::error(errs(), "cleave")
        << std::string(searched.status().message()) << "\n";
    return kFailed;
  }
  const cleave::driver::GraphPlanResult &result = *searched;
  const cleave::cost::PlanPrediction *best = &result.best();
  const std::string &name = result.name, &trace = result.trace;
  options.batch = best->plan.microbatchSize;
  if (!tracePath.empty()) {
    if (trace.empty())
      return badUsage("--trace: " + model + "'s plan is one data-parallel "
                      "stage, priced by formula; only pipelined plans (and "
                      "transformer plans) have a simulated timeline");
    if (int code = writeTextFile(tracePath, "--trace", trace))
      return code;
  }
  if (!planOut.empty()) {
    if (int code = writeArtifact(tool, options, cluster, *best, prof,
                                 std::nullopt, name, trace))
      return code;
  }
  if (json) {
    outs() << formatv("{0:2}", json::Value(cleave::driver::graphPlanJson(
                                   result, cluster.name)))
           << "\n";
    return kOk;
  }
  cleave::driver::printGraphPlan(result, cluster.name, explain, outs());
  return kOk;
}

int runCompile() {
  if (clusterSpec.empty())
    return badUsage(
        "compile needs --cluster (e.g. --cluster dgx-a100-80g,nodes=4)");
  if (globalBatch.getNumOccurrences() == 0 || globalBatch <= 0)
    return badUsage("compile needs a positive --global-batch");
  // A step's microbatches are simulated one by one: bound them (the largest
  // published global batches are tens of thousands of samples).
  constexpr int64_t kMaxGlobalBatch = int64_t(1) << 20;
  if (globalBatch > kMaxGlobalBatch)
    return badUsage("--global-batch " + Twine(int64_t(globalBatch)) +
                    " is more than " + Twine(kMaxGlobalBatch) +
                    " samples a step");
  if (!runInitFrom.empty() && planOut.empty())
    return badUsage("--init-from bakes weights into the plan artifact: it "
                    "needs -o FILE");
  auto cluster = cleave::cost::parseCluster(clusterSpec);
  if (!cluster.ok())
    return badUsage("--cluster: " +
                    Twine(std::string(cluster.status().message())));
  std::optional<cleave::cost::Profile> profile;
  if (!profilePath.empty()) {
    auto loaded = cleave::cost::loadProfileFile(profilePath);
    if (!loaded.ok())
      return badUsage("--profile: " +
                      Twine(std::string(loaded.status().message())));
    profile = *std::move(loaded);
  }
  cleave::cost::ParallelConfig plan;
  plan.globalBatch = globalBatch;
  auto given = cleave::cost::applyPlanKnobs(fixKnobs, plan);
  if (!given.ok())
    return badUsage("--fix: " + Twine(std::string(given.status().message())));
  cleave::cost::KnobSet fixed = *given;
  if (fixed.contains(Knob::Vpp))
    fixed.insert(Knob::Schedule);
  // dp is given, or fixed by tp x pp x cp filling the devices.
  bool dpGiven = fixed.contains(Knob::Dp);
  if (dpGiven || (fixed.contains(Knob::Tp) && fixed.contains(Knob::Pp) && fixed.contains(Knob::Cp))) {
    if (auto status = cleave::cost::inferDataParallel(cluster->numDevices(),
                                                      dpGiven, plan);
        !status.ok())
      return badUsage("--fix: " + Twine(std::string(status.message())));
    fixed.insert(Knob::Dp);
  }
  if (!planOut.empty() && plan.recomputeWholeLayer)
    return badUsage("--fix: recompute-scope=layer prices Megatron-LM's full "
                    "recomputation (the whole layer forward again); cleave's "
                    "lowering recomputes only what the backward pass reads, "
                    "so a plan written with -o cannot take it");
  if (!planOut.empty() && plan.overlapTpComm)
    return badUsage("--fix: overlap-tp=on prices Transformer Engine's "
                    "collective GEMMs (Megatron-Core's --tp-comm-overlap); "
                    "cleave's runtime runs each tensor-parallel collective "
                    "between its GEMMs, so a plan written with -o cannot "
                    "take it");
  if (!planOut.empty() && plan.halfGradReduce)
    return badUsage("--fix: grad-reduce=half prices weight gradients "
                    "accumulated and reduced in 16 bits (Megatron-LM's fp16 "
                    "runs); cleave's lowering keeps them in fp32, so a plan "
                    "written with -o cannot take it");
  if (!planOut.empty() && plan.zeroBucketElements > 0)
    return badUsage("--fix: zero-bucket prices ZeRO collectives over packed "
                    "buckets (Megatron-Core's distributed optimizer); "
                    "cleave's lowering runs one per parameter tensor, so a "
                    "plan written with -o cannot take it");
  if (!planOut.empty()) {
    // Knobs not fixed yet are the search's, which keeps to what lowers.
    cleave::cost::ParallelConfig asked = plan;
    if (!fixed.contains(Knob::Precision))
      asked.precision = cleave::cost::DType::Fp32;
    if (std::string why = cleave::driver::whyNotLowerable(asked); !why.empty())
      for (Knob knob : {Knob::Cp, Knob::Ep, Knob::Schedule, Knob::Precision})
        if (fixed.contains(knob) &&
            why.find(cleave::cost::knobName(knob)) != std::string::npos)
          return badUsage("-o: --fix " + std::string(cleave::cost::knobName(knob)) +
                          " asks for what the lowering to programs does not "
                          "support yet (" + why + ")");
    cleave::driver::restrictToLowerable(plan, fixed);
  }
  if (planOptimizer != "adamw" && planOptimizer != "sgd" &&
      planOptimizer != "none")
    return badUsage("--optimizer must be adamw, sgd or none (an inference "
                    "plan), got '" + planOptimizer + "'");
  if (!(planLr > 0))
    return badUsage("--lr must be positive");
  if (topK < 1)
    return badUsage("--top-k must be at least 1, got " + Twine(topK));
  if (timeLimit < 0 || std::isnan(double(timeLimit)))
    return badUsage("--time-limit must be a non-negative number of seconds");
  std::optional<double> memoryLimit;
  if (!memoryLimitText.empty()) {
    memoryLimit = parseBytes(memoryLimitText);
    if (!memoryLimit || *memoryLimit <= 0)
      return badUsage("--memory-limit expects a size such as 40GB, got '" +
                      memoryLimitText + "'");
  }

  cleave::ImportOptions options;
  if (!parseImportOptions(options))
    return kBadInput;
  // The search imports the model at each microbatch it tries; this first
  // import only reads what the model is, so a symbolic batch need not be
  // given (a dimension --dim binds, or a batch fixed in the file, wins).
  if (!options.batch && !StringRef(model).starts_with("zoo:") &&
      !StringRef(model).ends_with(".mlir"))
    options.batch = 1;
  ToolContext tool;
  mlir::OwningOpRef<mlir::ModuleOp> module = tool.loadModel(options);
  if (!module)
    return kBadInput;
  const cleave::cost::Profile *prof = profile ? &*profile : nullptr;
  // A file that fixes its batch (a number, or a dimension --dim binds)
  // imports at that batch whatever microbatch is asked: the microbatch is
  // that batch, not a knob to search.
  if (std::optional<int64_t> b = fixedBatch(tool, options, *module)) {
    fileBatch = b;
    if (fixed.contains(Knob::Microbatch) && plan.microbatchSize != *b)
      return badUsage("--fix microbatch=" + Twine(plan.microbatchSize) +
                      ": " + model + " fixes its batch at " + Twine(*b) +
                      " (the leading dimension of its first input), so "
                      "each microbatch holds " + Twine(*b) + " samples");
    plan.microbatchSize = *b;
    fixed.insert(Knob::Microbatch);
  }
  // Transformers are planned by their layers; other graphs op by op.
  mlir::FailureOr<std::optional<cleave::cost::TransformerModel>> read =
      cleave::getTransformerModel(*module);
  if (failed(read))
    return kBadInput; // a transformer whose dimensions do not read
  if (!read->has_value())
    return compileGraph(tool, options, *cluster, plan, fixed, prof,
                        memoryLimit);
  mlir::FailureOr<cleave::cost::TransformerModel> shape = **read;

  // Every knob fixed: score exactly that plan. Otherwise search the rest.
  static const Knob kKnobs[] = {Knob::Dp,   Knob::Tp,         Knob::Pp,
                                Knob::Cp,   Knob::Ep,         Knob::Sp,
                                Knob::Zero, Knob::Microbatch, Knob::Schedule,
                                Knob::Recompute};
  bool allFixed = llvm::all_of(kKnobs, [&](Knob k) {
    return fixed.contains(k) || (k == Knob::Ep && shape->experts == 0);
  });
  std::vector<cleave::cost::PlanPrediction> plans;
  std::optional<cleave::cost::PlanSearchResult> search;
  if (allFixed && !exhaustive) {
    cleave::cost::Cluster capped = *cluster;
    if (memoryLimit)
      capped.device.memoryBytes = *memoryLimit;
    auto predicted =
        cleave::cost::scoreTransformerPlan(*shape, capped, plan, prof);
    if (!predicted.ok()) {
      WithColor::error(errs(), "cleave")
          << "infeasible plan " << cleave::cost::planKnobsString(plan) << ": "
          << std::string(predicted.status().message()) << "\n";
      return kFailed;
    }
    plans.push_back(*predicted);
  } else {
    cleave::cost::PlanSearchOptions so;
    so.fixed = plan;
    so.fixedKnobs = fixed;
    so.memoryLimit = memoryLimit.value_or(0);
    so.timeLimit = timeLimit;
    so.topK = topK;
    so.exhaustive = exhaustive;
    so.explain = explain;
    if (!planOut.empty())
      so.admissible = [](const cleave::cost::ParallelConfig &p) {
        return cleave::driver::whyNotLowerable(p).empty();
      };
    auto started = std::chrono::steady_clock::now();
    bool showProgress = !json && sys::Process::StandardErrIsDisplayed();
    so.progress = [&](double fraction) {
      double seconds = std::chrono::duration<double>(
                           std::chrono::steady_clock::now() - started)
                           .count();
      if (showProgress && seconds > 1)
        errs() << formatv("\rsearching: {0,3:F0}%", 100 * fraction);
    };
    auto found = cleave::cost::searchTransformerPlans(*shape, *cluster,
                                                      globalBatch, so, prof);
    if (showProgress)
      errs() << "\r               \r";
    if (!found.ok()) {
      WithColor::error(errs(), "cleave")
          << std::string(found.status().message()) << "\n";
      return kFailed;
    }
    search = *std::move(found);
    plans = search->best;
  }

  const cleave::cost::PlanPrediction &best = plans.front();
  if (!planOut.empty()) {
    // The search's verdict, for `cleave inspect`'s "why".
    std::vector<std::string> why;
    if (search)
      why.push_back(
          formatv("the fastest of {0} plans searched ({1} infeasible, {2} "
                  "simulated){3}",
                  search->candidates, search->infeasible, search->simulated,
                  search->timedOut
                      ? formatv("; stopped at the time limit, optimality gap "
                                "at most {0:F1}%",
                                100 * search->optimalityGap)
                            .str()
                      : std::string("; optimal within the cost model"))
              .str());
    else
      why.push_back("every knob fixed by --fix: no search");
    if (plans.size() > 1)
      why.push_back(formatv("the next best plan, {0}, takes {1:F1}% longer",
                            cleave::cost::planKnobsString(plans[1].plan),
                            100 * (plans[1].stepSeconds / best.stepSeconds -
                                   1))
                        .str());
    if (int code = writeArtifact(tool, options, *cluster, best, prof, *shape,
                                 shape->name, {}, std::move(why)))
      return code;
  }
  if (!tracePath.empty()) {
    cleave::cost::TaskGraph graph;
    cleave::cost::Timeline timeline;
    cleave::cost::Cluster capped = *cluster;
    if (memoryLimit)
      capped.device.memoryBytes = *memoryLimit;
    (void)cleave::cost::scoreTransformerPlan(*shape, capped, best.plan, prof,
                                             &graph, &timeline);
    std::ostringstream trace;
    cleave::cost::writeChromeTrace(graph, timeline, trace);
    if (int code = writeTextFile(tracePath, "--trace", trace.str()))
      return code;
  }

  cleave::driver::TransformerReport report{shape->name, *cluster, plans,
                                           search ? &*search : nullptr,
                                           memoryLimit};
  if (json) {
    outs() << formatv("{0:2}",
                      json::Value(cleave::driver::transformerPlanJson(report)))
           << "\n";
    return kOk;
  }
  // The graph's own count (the knob-level model approximates some layers).
  report.parameters =
      double(cleave::summarizeModel(*module).trainableParams);
  cleave::driver::printTransformerPlan(report, explain, outs());
  return kOk;
}

int runInspect() {
  auto loaded = cleave::plan::readPlanFile(planPath);
  if (!loaded.ok())
    return badUsage(std::string(loaded.status().message()));
  const cleave::plan::Plan &plan = *loaded;
  if (!artifactTrace.empty()) {
    if (absl::Status s = cleave::inspect::writeSimulatedTrace(plan, artifactTrace);
        !s.ok()) {
      WithColor::error(errs(), "cleave") << std::string(s.message()) << "\n";
      return kFailed;
    }
  }
  if (inspectRank.getNumOccurrences()) {
    auto text = cleave::inspect::formatRankProgram(plan, inspectRank);
    if (!text.ok())
      return badUsage("--rank: " + Twine(std::string(text.status().message())));
    outs() << *text;
    return kOk;
  }
  if (inspectMlir) {
    auto text = cleave::inspect::planMlir(plan);
    if (!text.ok()) {
      WithColor::error(errs(), "cleave")
          << std::string(text.status().message()) << "\n";
      return kFailed;
    }
    outs() << *text;
    return kOk;
  }
  outs() << (inspectJson ? cleave::inspect::formatPlanJson(plan)
                         : cleave::inspect::formatPlanSummary(plan));
  return kOk;
}

int runRun(const char *argv0) {
  if (runSteps < 1)
    return badUsage("--steps must be at least 1, got " + Twine(runSteps));
  if (!(runTolerance > 0) || !std::isfinite(double(runTolerance)))
    return badUsage("--tolerance must be a positive number, got " +
                    formatv("{0}", double(runTolerance)).str());
  if (!(runTimeout > 0) || !std::isfinite(double(runTimeout)))
    return badUsage("--timeout must be a positive number of seconds");
  if (!runData.empty() && !sys::fs::exists(runData))
    return badUsage("--data " + runData + ": no such file");
  if (!runData.empty()) {
    // Token ids are uint16 (nanoGPT's .bin files): a directory, an empty
    // file or an odd byte count is not such a file (the workers check too).
    uint64_t size = 0;
    if (!sys::fs::is_regular_file(runData) || sys::fs::file_size(runData, size))
      return badUsage("--data " + runData + ": not a file of token ids");
    if (size < 2 || size % 2)
      return badUsage("--data " + runData + ": " + Twine(size) +
                      " bytes; token ids are uint16, 2 bytes each, and at "
                      "least one is needed");
  }
  if (backend != "cpu" && backend != "cuda")
    return badUsage("--backend must be cpu or cuda, not '" + backend + "'");
  cleave::tool::RunRequest request;
  request.backend = backend;
  request.planPath = planPath;
  request.argv0 = argv0;
  request.steps = runSteps;
  request.dataPath = runData;
  request.tracePath = artifactTrace;
  request.timeoutSeconds = runTimeout;
  request.check = runCheck;
  request.fuse = !runNoFuse;
  request.inputs.assign(runInputs.begin(), runInputs.end());
  request.expectedOutputs.assign(runExpected.begin(), runExpected.end());
  for (const std::string &input : request.inputs) {
    size_t eq = input.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == input.size())
      return badUsage("--input " + input + ": expected NAME=FILE");
  }
  for (const std::string &expected : request.expectedOutputs) {
    size_t eq = expected.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == expected.size())
      return badUsage("--expect-output " + expected + ": expected I=FILE");
  }
  request.interleave.assign(runInterleave.begin(), runInterleave.end());
  if (!request.interleave.empty()) {
    // The plans run in turn in one launch, for their step times only.
    const char *alone = runCheck                  ? "--check"
                        : !artifactTrace.empty()  ? "--trace"
                        : !runInputs.empty()      ? "--input"
                        : !runExpected.empty()    ? "--expect-output"
                        : !runData.empty()        ? "--data"
                        : backend != "cpu"        ? "--backend cuda"
                                                  : nullptr;
    if (alone)
      return badUsage(Twine("--interleave times plans in turn; it does not "
                            "take ") +
                      alone);
  }
  if (runSaveEvery < 0 || runKeep < 0 || runMaxRestarts < 0)
    return badUsage("--save-every, --keep and --max-restarts take a "
                    "non-negative number");
  if (runSave.empty() && (runSaveEvery > 0 || runKeep > 0 || runSaveSync))
    return badUsage("--save-every, --keep and --save-sync need --save DIR");
  if (runMaxRestarts > 0 && runSave.empty())
    return badUsage("--max-restarts needs --save DIR (a restart continues "
                    "from the last checkpoint saved there)");
  if (!runResume.empty() && !runInitFrom.empty())
    return badUsage("--resume and --init-from exclude each other (a "
                    "checkpoint holds the weights already)");
  if ((!runSave.empty() || !runResume.empty() || !runInitFrom.empty()) &&
      !request.interleave.empty())
    return badUsage("--interleave times plans in turn; it does not take "
                    "--save, --resume or --init-from");
  request.saveDir = runSave;
  request.saveEvery = runSaveEvery;
  request.keep = runKeep;
  request.saveSync = runSaveSync;
  request.resumePath = runResume;
  request.maxRestarts = runMaxRestarts;
  request.fault = runFault;
  request.faultRank = runFaultRank;
  request.faultStep = runFaultStep;
  if (!runInitFrom.empty()) {
    // An ONNX file's initializers are written out as safetensors, which
    // every rank reads.
    absl::StatusOr<std::string> weights =
        cleave::tool::weightsForWorkers(runInitFrom);
    if (!weights.ok())
      return badUsage("--init-from " + runInitFrom + ": " +
                      std::string(weights.status().message()));
    request.initFrom = *weights;
  }
  request.tolerance = runTolerance;
  request.reference = [](const cleave::plan::Plan &plan) {
    ToolContext tool;
    return cleave::driver::buildReferencePlan(
        plan, [&](const std::string &source, const cleave::ImportOptions &o) {
          return cleave::loadModel(tool.ctx, source, o);
        });
  };
  return cleave::tool::runPlan(request);
}

int runCheckpoint() {
  std::vector<std::string> args(checkpointArgs.begin(), checkpointArgs.end());
  if (args.size() != 2 || (args[0] != "inspect" && args[0] != "export"))
    return badUsage("usage: cleave checkpoint inspect DIR [--json] "
                    "[--no-verify] | cleave checkpoint export DIR -o "
                    "FILE.safetensors");
  if (args[0] == "inspect")
    return cleave::tool::inspectCheckpoint(args[1], checkpointJson,
                                           !checkpointNoVerify);
  if (checkpointOut.empty())
    return badUsage("checkpoint export needs -o FILE.safetensors");
  return cleave::tool::exportCheckpoint(args[1], checkpointOut);
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  // --help shows cleave's options, not every option LLVM registers.
  std::vector<const cl::OptionCategory *> categories = {
      &modelCategory, &outputCategory, &planCategory, &profileCategory,
      &artifactCategory, &checkpointCategory};
  cl::HideUnrelatedOptions(categories);
  for (cl::SubCommand *sub :
       {&importCmd, &summaryCmd, &zooCmd, &compileCmd, &profileCmd,
        &inspectCmd, &runCmd, &checkpointCmd})
    cl::HideUnrelatedOptions(categories, *sub);
  std::string errors;
  raw_string_ostream errorStream(errors);
  if (!cl::ParseCommandLineOptions(argc, argv,
                                   "cleave: automatic model partitioning\n\n"
                                   "  cleave import MODEL [-o out.mlir]\n"
                                   "  cleave compile MODEL --cluster C "
                                   "--global-batch B [--fix KNOBS] [--json] "
                                   "[-o PLAN]\n"
                                   "  cleave inspect PLAN [--json] [--rank N] "
                                   "[--mlir] [--trace out.json]\n"
                                   "  cleave run PLAN [--steps K] [--data "
                                   "tokens.bin] [--check] [--trace out.json]\n"
                                   "             [--save DIR [--save-every K] "
                                   "[--max-restarts R]] [--resume DIR] "
                                   "[--init-from FILE]\n"
                                   "  cleave checkpoint inspect|export DIR "
                                   "[-o model.safetensors]\n"
                                   "  cleave summary MODEL [--json]\n"
                                   "  cleave zoo [--json]\n"
                                   "  cleave profile --backend cpu -o FILE\n",
                                   &errorStream)) {
    errs() << errors;
    return kBadInput;
  }
  if (importCmd || summaryCmd)
    return runModelCommand();
  if (compileCmd)
    return runCompile();
  if (profileCmd)
    return runProfile(argv);
  if (inspectCmd)
    return runInspect();
  if (runCmd)
    return runRun(argv[0]);
  if (checkpointCmd)
    return runCheckpoint();
  if (zooCmd)
    return runZoo();
  cl::PrintHelpMessage();
  return kBadInput;
}

