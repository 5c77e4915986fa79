//===- CompileCommand.cpp - `cleave compile`: the flags to a request ------===//
//
// Checks and types the flags (the cluster, the profile, --fix, sizes and
// limits) into a driver::CompileRequest; cleave/Driver/Compile.h does the
// rest.
//
//===----------------------------------------------------------------------===//

#include "CheckpointCommand.h"
#include "Commands.h"
#include "inspect/Inspect.h"

#include "cleave/runtime/plan/PlanIO.h"
#include "ToolSupport.h"

#include "cleave/Driver/Compile.h"
#include "cleave/cost_model/Quantity.h"

#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <filesystem>

using namespace llvm;

namespace cleave::tool {

using cost::Knob;

namespace {

/// --fix or --versus KNOBS onto `plan`: the knobs given in `fixed`; dp
/// given, or fixed by tp x pp x cp filling the devices.
int applyKnobs(const char *flag, const std::string &knobs,
               const cost::Cluster &cluster, cost::ParallelConfig &plan,
               cost::KnobSet &fixed) {
  auto given = cost::applyPlanKnobs(knobs, plan);
  if (!given.ok())
    return badUsage(Twine(flag) + ": " +
                    Twine(std::string(given.status().message())));
  fixed = *given;
  if (fixed.contains(Knob::Vpp))
    fixed.insert(Knob::Schedule);
  bool dpGiven = fixed.contains(Knob::Dp);
  if (dpGiven || (fixed.contains(Knob::Tp) && fixed.contains(Knob::Pp) &&
                  fixed.contains(Knob::Cp))) {
    if (auto status =
            cost::inferDataParallel(cluster.numDevices(), dpGiven, plan);
        !status.ok())
      return badUsage(Twine(flag) + ": " + Twine(std::string(status.message())));
    fixed.insert(Knob::Dp);
  }
  return kOk;
}


/// --serve's workload and targets, checked before any work.
int buildServing(const CompileArgs &a, driver::CompileRequest &request) {
  if (!a.promptLen || *a.promptLen < 1)
    return badUsage("--serve needs a positive --prompt-len (prompt tokens "
                    "per request)");
  if (!a.outputLen || *a.outputLen < 1)
    return badUsage("--serve needs a positive --output-len (generated "
                    "tokens per request)");
  if (a.maxBatch && *a.maxBatch < 1)
    return badUsage("--max-batch must be at least 1, got " +
                    Twine(*a.maxBatch));
  if (a.cacheBlocks && a.planOut.empty())
    return badUsage("--cache-blocks sizes the cache of the plan -o writes; "
                    "give -o");
  // One sequence at its whole length must fit, or nothing could finish.
  int64_t perSequence = (*a.promptLen + *a.outputLen + 15) / 16;
  if (a.cacheBlocks && *a.cacheBlocks < perSequence)
    return badUsage("--cache-blocks " + Twine(*a.cacheBlocks) +
                    ": a sequence of --prompt-len + --output-len tokens "
                    "needs " + Twine(perSequence) + " blocks of 16");
  request.cacheBlocks = a.cacheBlocks;
  if (a.stepTokens && a.maxBatch && *a.stepTokens < *a.maxBatch)
    return badUsage("--step-tokens " + Twine(*a.stepTokens) +
                    " is fewer than --max-batch " + Twine(*a.maxBatch) +
                    ": every running sequence takes a token of each step");
  if (a.stepTokens && *a.stepTokens < 1)
    return badUsage("--step-tokens must be at least 1, got " +
                    Twine(*a.stepTokens));
  request.stepTokens = a.stepTokens;
  if (!(a.ttft >= 0) || !(a.tpot >= 0) || std::isinf(a.ttft) ||
      std::isinf(a.tpot))
    return badUsage("--ttft and --tpot are seconds, zero or more (0: no "
                    "target)");
  if (!a.planOut.empty() && a.disaggregate)
    return badUsage("--serve --disaggregate -o: lowering separate prefill "
                    "and decode pools is not implemented yet (without "
                    "--disaggregate, -o writes one replica's generation "
                    "step)");
  if (a.globalBatch)
    return badUsage("--global-batch is a training step's: with --serve the "
                    "batch is --max-batch (or searched)");
  cost::ServingWorkload w;
  if (a.batching == "static")
    w.batching = cost::Batching::Static;
  else if (a.batching != "continuous")
    return badUsage("--batching must be continuous or static, got '" +
                    a.batching + "'");
  if (a.disaggregate && a.batching != "continuous")
    return badUsage("--disaggregate: the decode pool batches continuously "
                    "and the prefill pool one prompt at a time; --batching "
                    "does not apply");
  if (a.disaggregate && a.maxBatch)
    return badUsage("--disaggregate searches each decode shape's batch; "
                    "--max-batch does not apply");
  if (a.stepTokens && a.batching != "continuous")
    return badUsage("--step-tokens sizes a continuous batch's step: with "
                    "--batching static a step reads the whole batch's "
                    "prompts");
  w.disaggregated = a.disaggregate;
  w.promptLen = *a.promptLen;
  w.outputLen = *a.outputLen;
  w.batch = a.maxBatch.value_or(0);
  w.stepTokens = a.stepTokens.value_or(0);
  w.ttft = a.ttft;
  w.tpot = a.tpot;
  request.serve = w;
  return kOk;
}

/// The typed request, or the exit code of what the flags get wrong.
int buildRequest(const CompileArgs &a, driver::CompileRequest &request) {
  driver::PlanInputs &r = request.inputs;
  if (a.cluster.empty())
    return badUsage(
        "compile needs --cluster (e.g. --cluster dgx-a100-80g,nodes=4)");
  if (a.serve) {
    if (int code = buildServing(a, request))
      return code;
  } else {
    for (auto [flag, given] :
         {std::pair<const char *, bool>{"--prompt-len", a.promptLen.has_value()},
          {"--output-len", a.outputLen.has_value()},
          {"--max-batch", a.maxBatch.has_value()},
          {"--cache-blocks", a.cacheBlocks.has_value()},
          {"--step-tokens", a.stepTokens.has_value()},
          {"--ttft", a.ttft != 0},
          {"--batching", a.batching != "continuous"},
          {"--disaggregate", a.disaggregate},
          {"--tpot", a.tpot != 0}})
      if (given)
        return badUsage(Twine(flag) + " describes a serving workload: give "
                                      "--serve too");
  }
  if (a.serve && !a.globalBatch)
    r.globalBatch = 1; // no training step
  else if (!a.globalBatch || *a.globalBatch <= 0)
    return badUsage("compile needs a positive --global-batch");
  // A step's microbatches are simulated one by one: bound them (the largest
  // published global batches are tens of thousands of samples).
  constexpr int64_t kMaxGlobalBatch = int64_t(1) << 20;
  if (*a.globalBatch > kMaxGlobalBatch)
    return badUsage("--global-batch " + Twine(*a.globalBatch) +
                    " is more than " + Twine(kMaxGlobalBatch) +
                    " samples a step");
  if (a.globalBatch)
    r.globalBatch = *a.globalBatch;
  if (!a.initFrom.empty() && a.planOut.empty())
    return badUsage("--init-from bakes weights into the plan artifact: it "
                    "needs -o FILE");
  // Outputs are checked before the search and the lowering, which may
  // take minutes on a large model.
  if (int code = checkOutputPath(a.planOut, "-o"))
    return code;
  if (!a.html.empty() && a.planOut.empty())
    return badUsage("--html draws the plan artifact: give -o PLAN too");
  if (int code = checkOutputPath(a.html, "--html"))
    return code;
  if (int code = checkOutputPath(a.trace, "--trace"))
    return code;
  auto cluster = cost::parseCluster(a.cluster);
  if (!cluster.ok())
    return badUsage("--cluster: " +
                    Twine(std::string(cluster.status().message())));
  request.clusterSpec = a.cluster;
  r.cluster = *std::move(cluster);
  if (!a.profile.empty()) {
    auto loaded = cost::loadProfileFile(a.profile);
    if (!loaded.ok())
      return badUsage("--profile: " +
                      Twine(std::string(loaded.status().message())));
    request.profile = *std::move(loaded);
    request.profilePath = a.profile;
  }
  r.plan.globalBatch = r.globalBatch;
  cost::ParallelConfig defaults = r.plan;
  if (int code = applyKnobs("--fix", a.fix, r.cluster, r.plan, r.fixed))
    return code;
  if (!a.versus.empty()) {
    request.versus.emplace();
    request.versus->plan = defaults;
    if (int code = applyKnobs("--versus", a.versus, r.cluster,
                              request.versus->plan, request.versus->fixed))
      return code;
  }
  std::optional<Optimizer> optimizer = parseOptimizer(a.optimizer);
  if (!optimizer)
    return badUsage("--optimizer must be adamw, sgd or none (an inference "
                    "plan), got '" + a.optimizer + "'");
  if (!(a.lr > 0))
    return badUsage("--lr must be positive");
  request.step.optimizer = *optimizer;
  request.step.lr = a.lr;
  if (!a.lossScale.empty()) {
    absl::StatusOr<plan::LossScaling> scaling =
        plan::parseLossScaling(a.lossScale);
    if (!scaling.ok())
      return badUsage("--loss-scale=" + a.lossScale + ": " +
                      std::string(scaling.status().message()));
    request.lossScaling = *scaling;
  }
  if (a.topK < 1)
    return badUsage("--top-k must be at least 1, got " + Twine(a.topK));
  if (a.timeLimit < 0 || std::isnan(a.timeLimit))
    return badUsage("--time-limit must be a non-negative number of seconds");
  if (!a.memoryLimit.empty()) {
    absl::StatusOr<double> bytes =
        cost::parseQuantity(a.memoryLimit, cost::Quantity::Bytes);
    if (!bytes.ok() || *bytes <= 0)
      return badUsage("--memory-limit expects a size such as 40GB, got '" +
                      a.memoryLimit + "'");
    r.memoryLimit = *bytes;
  }
  if (!parseImportOptions(a.model, request.importOptions))
    return kBadInput;
  request.model = a.model.source;
  r.topK = a.topK;
  r.exhaustive = a.exhaustive;
  r.explain = a.explain;
  request.timeLimit = a.timeLimit;
  request.json = a.json;
  request.showProgress = !a.json && sys::Process::StandardErrIsDisplayed();
  request.planOut = a.planOut;
  request.tracePath = a.trace;
  request.seed = a.seed;
  return kOk;
}

} // namespace

int runCompile(const CompileArgs &args) {
  driver::CompileRequest request;
  if (int code = buildRequest(args, request))
    return code;
  if (!args.initFrom.empty()) {
    // The weights to bake: a safetensors file, or an ONNX file's
    // initializers written to a temporary one (removed once baked).
    absl::StatusOr<std::string> weights = weightsForWorkers(args.initFrom);
    if (!weights.ok())
      return badUsage("--init-from " + args.initFrom + ": " +
                      std::string(weights.status().message()));
    request.initFromFile = *weights;
    request.initFromSource = std::filesystem::absolute(args.initFrom);
  }
  ToolContext tool;
  int code = exitCode(driver::compileModel(tool.ctx, request, outs()));
  if (code == kOk && !args.html.empty()) {
    auto plan = plan::readPlanFile(args.planOut, plan::Weights::kSkip);
    if (!plan.ok())
      return failure(std::string(plan.status().message()));
    std::error_code ec;
    raw_fd_ostream file(args.html, ec);
    if (ec)
      return failure("--html " + Twine(args.html) + ": " + ec.message());
    file << inspect::formatPlanHtml(*plan);
    outs() << "wrote:        " << args.html << " (open it in a browser)\n";
  }
  if (!request.initFromFile.empty() &&
      request.initFromFile != request.initFromSource)
    std::filesystem::remove(request.initFromFile);
  return code;
}

} // namespace cleave::tool
