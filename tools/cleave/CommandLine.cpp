//===- CommandLine.cpp - `cleave`'s flags as typed values -----------------===//

#include "CommandLine.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace cleave::tool {
namespace {


cl::SubCommand importCmd("import",
                         "Import MODEL into the graph dialect and print it. "
                         "Example: cleave import model.onnx -o model.mlir");
cl::SubCommand summaryCmd("summary",
                          "Print parameters, FLOPs, activation bytes and the "
                          "op histogram of MODEL. Example: cleave summary "
                          "zoo:gpt3-175b");
cl::SubCommand zooCmd("zoo", "List the model zoo's families and presets. "
                             "Example: cleave zoo --json");
cl::SubCommand profileCmd(
    "profile", "Measure this machine (GEMMs, memory bandwidth, collectives "
               "across local MPI ranks) into a profile for --profile. "
               "Example: cleave profile --quick -o cpu.profile");
cl::SubCommand compileCmd(
    "compile", "Search (or score, with every knob fixed) a parallel plan of "
               "MODEL on a cluster: step time, TFLOP/s, MFU, memory per "
               "device, bubble; -o writes it as a plan artifact. Example: "
               "cleave compile zoo:gpt,layers=4,hidden=128,heads=4,seq=128,"
               "vocab=1024 --cluster cpu-local,devices=4 --global-batch 16 "
               "-o gpt.cleave");

cl::SubCommand inspectCmd(
    "inspect", "Show a plan artifact: mesh, stages, shardings, collectives, "
               "memory, predictions; one rank's program; the partitioned IR. "
               "Example: cleave inspect gpt.cleave --rank 0");
cl::SubCommand runCmd("run", "Train with a plan artifact on local ranks "
                             "(mpirun; CPU, or one GPU each with --backend "
                             "cuda), optionally checked against one rank. "
                             "Example: cleave run gpt.cleave --steps 5 "
                             "--check");
cl::SubCommand generateCmd(
    "generate", "Generate tokens with a generation plan (compile --serve "
                "-o): greedy or sampled, requests batched continuously over "
                "a paged key/value cache on local ranks. Example: cleave "
                "generate llama.cleave --prompt-file prompts.txt");
cl::SubCommand checkpointCmd(
    "checkpoint", "Show a checkpoint (inspect DIR) or write its parameters "
                  "as whole tensors (export DIR -o model.safetensors). "
                  "Example: cleave checkpoint export ck -o model.safetensors");

cl::OptionCategory modelCategory("Model options");
cl::OptionCategory outputCategory("Output options");
cl::OptionCategory trainingCategory("Training options (of a plan written "
                                    "with -o)");
cl::OptionCategory runtimeCategory("Execution options");

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
cl::list<std::string> trainablePatterns(
    "trainable",
    cl::desc("Train the imported weights whose names match (a glob, as "
             "'*.norm.weight'; repeatable; over --frozen)"),
    cl::value_desc("PATTERN"), cl::sub(importCmd), cl::sub(summaryCmd),
    cl::sub(compileCmd), cl::cat(modelCategory));
cl::list<std::string> frozenPatterns(
    "frozen",
    cl::desc("Freeze the imported weights whose names match (a glob, as "
             "'embeddings.*'; repeatable)"),
    cl::value_desc("PATTERN"), cl::sub(importCmd), cl::sub(summaryCmd),
    cl::sub(compileCmd), cl::cat(modelCategory));
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
cl::opt<std::string> compileHtml(
    "html",
    cl::desc("With -o: also write the plan as one self-contained web page "
             "(as cleave inspect PLAN --html)"),
    cl::value_desc("FILE"), cl::sub(compileCmd), cl::cat(outputCategory));
cl::opt<uint64_t> planSeed("seed",
                           cl::desc("Seed of parameter initialisation and "
                                    "synthetic data in the plan (default: "
                                    "1234)"),
                           cl::value_desc("N"), cl::init(1234),
                           cl::sub(compileCmd), cl::cat(trainingCategory));
cl::opt<std::string> planOptimizer("optimizer",
                                   cl::desc("Optimizer of the plan: adamw, "
                                            "sgd, or none for an inference "
                                            "plan (forward only; default: "
                                            "adamw)"),
                                   cl::value_desc("adamw|sgd|none"),
                                   cl::init("adamw"), cl::sub(compileCmd),
                                   cl::cat(trainingCategory));
cl::opt<double> planLr("lr",
                       cl::desc("Learning rate of the plan (default: 1e-3)"),
                       cl::value_desc("RATE"), cl::init(1e-3),
                       cl::sub(compileCmd), cl::cat(trainingCategory));
cl::opt<std::string> planLossScale(
    "loss-scale",
    cl::desc("Loss scaling: none, dynamic[,init=N,window=STEPS,growth=F,"
             "backoff=F,min=N], static,init=N or a number (default: dynamic "
             "for precision=fp16, none otherwise)"),
    cl::value_desc("SPEC"), cl::sub(compileCmd), cl::cat(trainingCategory));
cl::opt<bool> json("json", cl::desc("Print JSON"), cl::sub(summaryCmd),
                   cl::sub(zooCmd), cl::sub(compileCmd),
                   cl::cat(outputCategory));

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
             "recompute=none|selective|full, precision, overlap-grad=on|off, "
             "overlap-p2p=on|off, overlap-tp=on|off, zero-bucket=tensor|M, "
             "stages=balanced|even, recompute-scope=needed|layer, "
             "attention=fused|unfused (dp defaults to the devices left "
             "over, the rest to 1/off/none)"),
    cl::value_desc("KNOB=VALUE,..."), cl::sub(compileCmd),
    cl::cat(planCategory));
cl::OptionCategory servingCategory(
    "Serving options (compile --serve: inference of a transformer, planned "
    "for latency targets)");
cl::opt<bool> serve("serve",
                    cl::desc("Plan autoregressive generation (prefill, then "
                             "decode against a key/value cache) instead of "
                             "training: tensor and pipeline degrees per "
                             "replica, replicas and batch, for the most "
                             "requests per second within --ttft and --tpot"),
                    cl::sub(compileCmd), cl::cat(servingCategory));
cl::opt<int64_t> promptLen("prompt-len",
                           cl::desc("Prompt tokens per request"),
                           cl::value_desc("N"), cl::sub(compileCmd),
                           cl::cat(servingCategory));
cl::opt<int64_t> outputLen("output-len",
                           cl::desc("Generated tokens per request"),
                           cl::value_desc("N"), cl::sub(compileCmd),
                           cl::cat(servingCategory));
cl::opt<int64_t> maxBatch(
    "max-batch",
    cl::desc("Sequences per replica (default: searched, up to what the "
             "memory left for the cache holds)"),
    cl::value_desc("N"), cl::sub(compileCmd), cl::cat(servingCategory));
cl::opt<int64_t> cacheBlocks(
    "cache-blocks",
    cl::desc("With -o: key/value cache blocks of 16 tokens in the replica "
             "(default: every sequence of the batch at prompt + output "
             "tokens; with fewer, `cleave generate` preempts the latest "
             "sequence when they run out and recomputes it later)"),
    cl::value_desc("N"), cl::sub(compileCmd), cl::cat(servingCategory));
cl::opt<int64_t> stepTokens(
    "step-tokens",
    cl::desc("Tokens a generation step runs (default: searched beside the "
             "batch; with --max-batch, the batch). Every running sequence "
             "takes one; the rest read prompts, a chunk of one prompt at "
             "once (chunked prefill, vLLM's max_num_batched_tokens). More "
             "rows shorten the time to first token and lengthen each step"),
    cl::value_desc("N"), cl::sub(compileCmd), cl::cat(servingCategory));
cl::opt<std::string> batching(
    "batching",
    cl::desc("continuous (a finished sequence's place goes at once to a new "
             "request, its prompt read in chunks on the rows the running "
             "sequences leave, as vLLM batches) or "
             "static (a batch prefilled, then decoded to the end) (default: "
             "continuous)"),
    cl::value_desc("continuous|static"), cl::init("continuous"),
    cl::sub(compileCmd), cl::cat(servingCategory));
cl::opt<bool> disaggregate(
    "disaggregate",
    cl::desc("Plan separate prefill and decode pools (each replica shape "
             "its own; the prompt's KV cache sent from one to the other), "
             "as DistServe and Splitwise serve"),
    cl::sub(compileCmd), cl::cat(servingCategory));
cl::opt<double> ttftTarget("ttft",
                           cl::desc("Time to first token target, seconds "
                                    "(default: none)"),
                           cl::value_desc("SECONDS"), cl::init(0),
                           cl::sub(compileCmd), cl::cat(servingCategory));
cl::opt<double> tpotTarget("tpot",
                           cl::desc("Time per output token target, seconds "
                                    "(default: none)"),
                           cl::value_desc("SECONDS"), cl::init(0),
                           cl::sub(compileCmd), cl::cat(servingCategory));
cl::OptionCategory artifactCategory("Plan artifact options");
cl::opt<std::string> planPath(cl::Positional, cl::Required,
                              cl::desc("PLAN (written by cleave compile -o)"),
                              cl::sub(inspectCmd), cl::sub(runCmd),
                              cl::sub(generateCmd),
                              cl::cat(artifactCategory));
cl::opt<bool> inspectJson("json", cl::desc("Print JSON"), cl::sub(inspectCmd),
                          cl::cat(artifactCategory));
cl::opt<int> inspectRank(
    "rank", cl::desc("Print rank N's instruction stream for one training step"),
    cl::value_desc("N"), cl::init(-1), cl::sub(inspectCmd),
    cl::cat(artifactCategory));
cl::opt<bool> inspectMlir("mlir", cl::desc("Print the partitioned MLIR"),
                          cl::sub(inspectCmd), cl::cat(artifactCategory));
cl::opt<std::string> inspectHtml(
    "html",
    cl::desc("Write the plan as one self-contained web page: devices, "
             "pipeline timeline, memory per stage, collectives, why"),
    cl::value_desc("FILE"), cl::sub(inspectCmd), cl::cat(artifactCategory));
cl::opt<std::string> inspectMeasured(
    "measured",
    cl::desc("With --html: also draw this trace of the plan, as cleave run "
             "--trace wrote it"),
    cl::value_desc("TRACE"), cl::sub(inspectCmd), cl::cat(artifactCategory));
cl::opt<std::string> artifactTrace(
    "trace",
    cl::desc("Write a Chrome trace: inspect, the simulated step; run, the "
             "measured one"),
    cl::value_desc("FILE"), cl::sub(inspectCmd), cl::sub(runCmd),
    cl::cat(artifactCategory));
cl::opt<int64_t> runSteps("steps", cl::desc("Training steps (default: 3)"),
                          cl::value_desc("N"), cl::init(3), cl::sub(runCmd),
                          cl::cat(artifactCategory));
cl::opt<std::string> runData(
    "data", cl::desc("Token ids (flat uint16, as nanoGPT writes them)"),
    cl::value_desc("FILE"), cl::sub(runCmd), cl::cat(artifactCategory));
cl::opt<bool> runCheck(
    "check",
    cl::desc("Also train (generate) with the unpartitioned model on one rank "
             "and compare the loss of every step and the final parameters "
             "(every generated token and its logits)"),
    cl::sub(runCmd), cl::sub(generateCmd), cl::cat(artifactCategory));
cl::opt<double> runTolerance("tolerance",
                             cl::desc("Largest relative error --check and "
                                      "--expect-output accept (default: "
                                      "1e-5)"),
                             cl::value_desc("X"), cl::init(1e-5),
                             cl::sub(runCmd), cl::sub(generateCmd),
                             cl::cat(artifactCategory));
cl::list<std::string> runInputs(
    "input",
    cl::desc("An input's values for the whole global batch (raw "
             "little-endian, the input's dtype)"),
    cl::value_desc("NAME=FILE"), cl::sub(runCmd), cl::cat(artifactCategory));
cl::opt<std::string> runMasks(
    "masks",
    cl::desc("Synthetic attention masks: 'ones' (every position attends), or "
             "'padded' (each sample keeps a random length of at least half "
             "the sequence, the rest masked, as a right-padded batch) "
             "(default: ones)"),
    cl::value_desc("ones|padded"), cl::init("ones"), cl::sub(runCmd),
    cl::cat(artifactCategory));
cl::list<std::string> runExpected(
    "expect-output",
    cl::desc("Compare output I of an inference plan with FILE (raw fp32, the "
             "whole global batch) within --tolerance"),
    cl::value_desc("I=FILE"), cl::sub(runCmd), cl::cat(artifactCategory));
cl::opt<double> runTimeout(
    "timeout",
    cl::desc("Seconds an instruction may take before every rank is stopped "
             "(default: 60)"),
    cl::value_desc("SECONDS"), cl::init(60), cl::sub(runCmd),
    cl::sub(generateCmd), cl::cat(runtimeCategory));
cl::opt<bool> runNoFuse(
    "no-fuse",
    cl::desc("Run every instruction alone instead of fusing a GEMM with its "
             "bias, activation or batch sum (to compare)"),
    cl::sub(runCmd), cl::cat(runtimeCategory));
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
    cl::sub(generateCmd), cl::cat(checkpointCategory));
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
cl::list<std::string> checkpointPositionals(
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
             "reference stays on the CPU) and what `profile` measures "
             "(default: cpu)"),
    cl::value_desc("cpu|cuda"), cl::init("cpu"), cl::sub(profileCmd),
    cl::sub(runCmd), cl::sub(generateCmd), cl::cat(runtimeCategory));
cl::opt<std::string> promptFile(
    "prompt-file",
    cl::desc("Requests, one a line: token ids separated by spaces (a "
             "tokenizer is not cleave's)"),
    cl::value_desc("FILE"), cl::Required, cl::sub(generateCmd),
    cl::cat(runtimeCategory));
cl::opt<int64_t> maxNewTokens(
    "max-new-tokens",
    cl::desc("Tokens to generate a request (default: the plan's "
             "--output-len)"),
    cl::value_desc("N"), cl::init(0), cl::sub(generateCmd),
    cl::cat(runtimeCategory));
cl::opt<double> sampleTemperature(
    "temperature", cl::desc("Sampling temperature (default 0: greedy)"),
    cl::value_desc("T"), cl::init(0), cl::sub(generateCmd),
    cl::cat(runtimeCategory));
cl::opt<int64_t> sampleTopK("top-k",
                      cl::desc("Sample among the K likeliest tokens (default "
                               "0: all)"),
                      cl::value_desc("K"), cl::init(0), cl::sub(generateCmd),
                      cl::cat(runtimeCategory));
cl::opt<double> sampleTopP("top-p",
                     cl::desc("Sample among the likeliest tokens holding "
                              "probability P (default 1: all)"),
                     cl::value_desc("P"), cl::init(1), cl::sub(generateCmd),
                     cl::cat(runtimeCategory));
cl::opt<std::string> logitsOut(
    "dump-logits",
    cl::desc("Write the logits each generated token was chosen from "
             "(float32, request after request)"),
    cl::value_desc("FILE"), cl::sub(generateCmd), cl::cat(runtimeCategory));
cl::opt<double> requestRate(
    "request-rate",
    cl::desc("Requests arrive as a Poisson process of R a second (seeded), "
             "not all at the start; TTFT counts from each arrival"),
    cl::value_desc("R"), cl::init(0), cl::sub(generateCmd),
    cl::cat(runtimeCategory));
cl::opt<int64_t> generateSeed("seed",
                              cl::desc("Seed of the sampling and of the "
                                       "weights' initialisation"),
                              cl::value_desc("S"), cl::sub(generateCmd),
                              cl::cat(runtimeCategory));
cl::opt<std::string> profileOut("o", cl::desc("Profile file to write"),
                                cl::value_desc("FILE"), cl::Required,
                                cl::sub(profileCmd), cl::cat(profileCategory));
cl::opt<int> profileRanks(
    "ranks",
    cl::desc("Local MPI ranks for the collective curves (0 skips them; "
             "default: 2)"),
    cl::value_desc("N"), cl::init(2), cl::sub(profileCmd),
    cl::cat(profileCategory));
cl::opt<bool> profileQuick("quick", cl::desc("A small grid (seconds)"),
                           cl::sub(profileCmd), cl::cat(profileCategory));
cl::opt<std::string> mpiWorker("mpi-worker",
                               cl::desc("The cleave-profile-mpi binary"),
                               cl::value_desc("FILE"),
                               cl::init(CLEAVE_PROFILE_MPI_WORKER),
                               cl::sub(profileCmd), cl::cat(profileCategory));
cl::opt<int> topK("top-k",
                  cl::desc("Print the K best distinct plans (default: 1)"),
                  cl::value_desc("K"), cl::init(1), cl::sub(compileCmd),
                  cl::cat(planCategory));
cl::opt<std::string> versus(
    "versus",
    cl::desc("Also price this plan (a published recipe; knobs as --fix, "
             "those not given searched) and say why each printed plan "
             "beats or loses to it"),
    cl::value_desc("KNOB=VALUE,..."), cl::sub(compileCmd),
    cl::cat(planCategory));
cl::opt<std::string> memoryLimitText(
    "memory-limit", cl::desc("Per-device memory cap (e.g. 40GB)"),
    cl::value_desc("SIZE"), cl::sub(compileCmd), cl::cat(planCategory));
cl::opt<double> timeLimit("time-limit",
                          cl::desc("Stop the search after this many seconds "
                                   "(default: no limit)"),
                          cl::value_desc("SECONDS"), cl::init(0),
                          cl::sub(compileCmd),
                          cl::cat(planCategory));
cl::opt<bool> exhaustive(
    "exhaustive", cl::desc("Simulate every valid combination (small cases)"),
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
    cl::desc("Also build @train_step (backward and AdamW update); a graph "
             "without a scalar loss gets cross-entropy on its first output"),
    cl::sub(importCmd), cl::cat(outputCategory));


template <typename T> std::optional<T> given(const cl::opt<T> &option) {
  if (option.getNumOccurrences() == 0)
    return std::nullopt;
  return option.getValue();
}

std::vector<std::string> values(const cl::list<std::string> &list) {
  return {list.begin(), list.end()};
}

ModelArgs modelArgs() {
  return {model,     given(batch),     given(seq),
          values(dims), noWeights, values(trainablePatterns),
          values(frozenPatterns)};
}

} // namespace

std::optional<Command> parseCommandLine(int argc, char **argv,
                                       const char *overview) {
  const std::pair<cl::SubCommand *, Command> subcommands[] = {
      {&importCmd, Command::Import},   {&summaryCmd, Command::Summary},
      {&zooCmd, Command::Zoo},         {&compileCmd, Command::Compile},
      {&profileCmd, Command::Profile}, {&inspectCmd, Command::Inspect},
      {&runCmd, Command::Run},         {&generateCmd, Command::Generate},
      {&checkpointCmd, Command::Checkpoint}};
  // --help shows cleave's options, not every option LLVM registers.
  std::vector<const cl::OptionCategory *> categories = {
      &modelCategory,    &outputCategory,   &trainingCategory,
      &planCategory,     &profileCategory,  &artifactCategory,
      &runtimeCategory,  &checkpointCategory, &servingCategory};
  cl::HideUnrelatedOptions(categories);
  for (auto [sub, command] : subcommands)
    cl::HideUnrelatedOptions(categories, *sub);
  std::string errors;
  raw_string_ostream errorStream(errors);
  // A subcommand's help shows its own description, not the whole overview.
  if (argc > 1 && argv[1][0] != '-')
    overview = "cleave: automatic model partitioning (`cleave --help` lists "
               "the commands)";
  if (!cl::ParseCommandLineOptions(argc, argv, overview, &errorStream)) {
    errs() << errors;
    return std::nullopt;
  }
  for (auto [sub, command] : subcommands)
    if (*sub)
      return command;
  return Command::None;
}

void printHelp() { cl::PrintHelpMessage(); }

ModelCommandArgs modelCommandArgs() {
  ModelCommandArgs a;
  if (importCmd || summaryCmd)
    a.model = modelArgs();
  a.output = output;
  a.trainingStep = trainingStep;
  a.json = json;
  return a;
}

CompileArgs compileArgs() {
  CompileArgs a;
  a.model = modelArgs();
  a.cluster = clusterSpec;
  a.profile = profilePath;
  a.fix = fixKnobs;
  a.memoryLimit = memoryLimitText;
  a.trace = tracePath;
  a.globalBatch = given(globalBatch);
  a.topK = topK;
  a.versus = versus;
  a.serve = serve;
  a.promptLen = given(promptLen);
  a.outputLen = given(outputLen);
  a.maxBatch = given(maxBatch);
  a.cacheBlocks = given(cacheBlocks);
  a.stepTokens = given(stepTokens);
  a.ttft = ttftTarget;
  a.batching = batching;
  a.disaggregate = disaggregate;
  a.tpot = tpotTarget;
  a.timeLimit = timeLimit;
  a.exhaustive = exhaustive;
  a.explain = explain;
  a.json = json;
  a.planOut = planOut;
  a.html = compileHtml;
  a.seed = planSeed;
  a.optimizer = planOptimizer;
  a.lr = planLr;
  a.lossScale = planLossScale;
  a.initFrom = runInitFrom;
  return a;
}

ProfileArgs profileArgs() {
  return {backend, profileOut, mpiWorker, profileRanks, profileQuick};
}

InspectArgs inspectArgs() {
  return {planPath, artifactTrace, given(inspectRank), inspectJson,
          inspectMlir, inspectHtml, inspectMeasured};
}

RunArgs runArgs() {
  RunArgs a;
  a.plan = planPath;
  a.backend = backend;
  a.data = runData;
  a.trace = artifactTrace;
  a.steps = runSteps;
  a.check = runCheck;
  a.noFuse = runNoFuse;
  a.tolerance = runTolerance;
  a.timeout = runTimeout;
  a.inputs = values(runInputs);
  a.masks = runMasks;
  a.expectedOutputs = values(runExpected);
  a.interleave = values(runInterleave);
  a.save = runSave;
  a.resume = runResume;
  a.initFrom = runInitFrom;
  a.saveEvery = runSaveEvery;
  a.keep = runKeep;
  a.saveSync = runSaveSync;
  a.maxRestarts = runMaxRestarts;
  a.fault = runFault;
  a.faultRank = runFaultRank;
  a.faultStep = runFaultStep;
  return a;
}

GenerateArgs generateArgs() {
  GenerateArgs a;
  a.plan = planPath;
  a.backend = backend;
  a.promptFile = promptFile;
  a.initFrom = runInitFrom;
  a.maxNewTokens = maxNewTokens;
  a.topK = sampleTopK;
  a.temperature = sampleTemperature;
  a.topP = sampleTopP;
  a.timeout = runTimeout;
  a.seed = given(generateSeed);
  a.logitsOut = logitsOut;
  a.check = runCheck;
  a.tolerance = runTolerance;
  a.requestRate = requestRate;
  return a;
}

CheckpointArgs checkpointArgs() {
  return {values(checkpointPositionals), checkpointOut, checkpointJson,
          checkpointNoVerify};
}

} // namespace cleave::tool
