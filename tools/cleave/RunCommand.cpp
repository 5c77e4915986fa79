//===- RunCommand.cpp - `cleave run`: launch a plan, check it -------------===//
//
// Plain C++ (the reference plan comes from a callback): the launcher starts
// cleave-worker on as many local ranks as the plan has, and --check runs
// the one-rank reference the same way, both dumping their parameters, then
// assembles every parameter from its blocks and compares.
//
//===----------------------------------------------------------------------===//

#include "RunCommand.h"

#include "cleave/runtime/checkpoint/Restore.h"
#include "cleave/runtime/launcher/Launch.h"
#include "cleave/runtime/plan/PlanIO.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

#include <cmath>
#include <cstdio>
#include <ctime>
#include <optional>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <unistd.h>

namespace cleave::tool {

namespace {

std::string fileName(std::string name) {
  for (char &c : name)
    if (c == '/' || c == '\\' || c == ' ')
      c = '_';
  return name;
}

absl::StatusOr<std::vector<float>> readFloats(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return absl::NotFoundError(absl::StrCat(path, ": missing (the run did "
                                                  "not dump it)"));
  std::ostringstream bytes;
  bytes << in.rdbuf();
  std::string s = bytes.str();
  std::vector<float> out(s.size() / sizeof(float));
  std::memcpy(out.data(), s.data(), out.size() * sizeof(float));
  return out;
}

absl::StatusOr<std::vector<double>> readLosses(const std::string &dir) {
  std::ifstream in(dir + "/loss.txt");
  if (!in)
    return absl::NotFoundError(dir + "/loss.txt: missing");
  std::vector<double> out;
  double v;
  while (in >> v)
    out.push_back(v);
  return out;
}

int64_t axisIndex(const plan::Plan &p, const std::string &name) {
  for (int a = 0; a < p.mesh().axes_size(); ++a)
    if (p.mesh().axes(a).name() == name)
      return a;
  return -1;
}

/// The whole parameter `index` of `plan`, from every rank's block.
absl::StatusOr<std::vector<float>> assemble(const plan::Plan &plan, int index,
                                            const std::string &dir) {
  const plan::ParameterSharding &param = plan.parameters(index);
  std::vector<int64_t> global(param.global_shape().begin(),
                              param.global_shape().end());
  int64_t total = 1;
  for (int64_t d : global)
    total *= d;
  std::vector<float> whole(total, 0.0f);
  std::vector<bool> seen(total, false);
  for (const plan::RankAssignment &rank : plan.ranks()) {
    const plan::Program &program = plan.programs(rank.program());
    bool holds = false;
    for (const plan::TensorDecl &t : program.tensors())
      holds |= t.kind() == plan::TensorDecl::PARAMETER &&
               t.param_index() == index;
    if (!holds)
      continue;
    auto block = readFloats(absl::StrCat(dir, "/", fileName(param.name()),
                                         ".rank", rank.rank(), ".bin"));
    if (!block.ok())
      return block.status();
    // Block extent and origin per dimension.
    size_t rankDims = global.size();
    std::vector<int64_t> local(rankDims), origin(rankDims, 0);
    for (size_t d = 0; d < rankDims; ++d) {
      int64_t parts = 1, coord = 0;
      if (d < size_t(param.dims_size()))
        for (const std::string &axis : param.dims(d).axes()) {
          int64_t a = axisIndex(plan, axis);
          int64_t size = a < 0 ? 1 : plan.mesh().axes(a).size();
          coord = coord * size + (a < 0 ? 0 : rank.coords(a));
          parts *= size;
        }
      local[d] = global[d] / parts;
      origin[d] = coord * local[d];
    }
    int64_t count = 1;
    for (int64_t d : local)
      count *= d;
    if (int64_t(block->size()) != count)
      return absl::DataLossError(absl::StrCat(
          param.name(), " of rank ", rank.rank(), " has ", block->size(),
          " values, expected ", count));
    std::vector<int64_t> idx(rankDims, 0);
    for (int64_t i = 0; i < count; ++i) {
      int64_t g = 0;
      for (size_t d = 0; d < rankDims; ++d)
        g = g * global[d] + origin[d] + idx[d];
      float v = (*block)[i];
      // Replicas must agree exactly: they ran the same updates.
      if (seen[g] && whole[g] != v)
        return absl::InternalError(absl::StrCat(
            param.name(), ": the replica on rank ", rank.rank(),
            " differs from another rank's at element ", g, " (", v, " vs ",
            whole[g], ")"));
      whole[g] = v;
      seen[g] = true;
      for (int64_t d = int64_t(rankDims) - 1; d >= 0; --d) {
        if (++idx[d] < local[d])
          break;
        idx[d] = 0;
      }
    }
  }
  for (int64_t i = 0; i < total; ++i)
    if (!seen[i])
      return absl::DataLossError(absl::StrCat(
          param.name(), ": element ", i, " is held by no rank"));
  return whole;
}

/// max |a - b| / max(max |b|, 1e-3): an error relative to the tensor's
/// scale, so that elements near zero do not dominate. The floor keeps a
/// tensor whose gradient is zero in exact arithmetic (an attention key
/// bias: softmax ignores it) from turning rounding noise of 1e-9 into a
/// relative error of 1: such a tensor is held to an absolute 1e-3 x
/// tolerance.
double relativeError(const std::vector<float> &a, const std::vector<float> &b) {
  double diff = 0, scale = 1e-3;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::fabs(double(a[i]) - double(b[i])));
    scale = std::max(scale, std::fabs(double(b[i])));
  }
  return scale > 0 ? diff / scale : diff;
}

std::string tempDir(const std::string &tag) {
  std::string dir = (std::filesystem::temp_directory_path() /
                     ("cleave-" + tag + "-" + std::to_string(getpid())))
                        .string();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

/// What differs between the launches of one `cleave run`: the first and a
/// restarted one, the plan's and the reference's.
struct LaunchArgs {
  int64_t steps = 1;
  /// Checkpoint to continue from ("" for none).
  std::string resume;
  std::string initFrom;
  /// The seed of the data and initialisation, when not the plan's.
  std::optional<uint64_t> seed;
  /// Pass --save and its flags, and the fault flags.
  bool save = false;
  bool fault = false;
};

absl::Status launchPlan(const RunRequest &r, const std::string &path,
                        int ranks, const std::string &dumpDir,
                        bool printSteps, const LaunchArgs &args) {
  launcher::LaunchOptions options;
  options.worker = launcher::defaultWorkerPath(r.argv0);
  options.ranks = ranks;
  options.workerArgs = {path, "--steps", std::to_string(args.steps),
                        "--timeout", absl::StrFormat("%g", r.timeoutSeconds)};
  auto add = [&](std::initializer_list<std::string> more) {
    options.workerArgs.insert(options.workerArgs.end(), more);
  };
  if (!args.resume.empty())
    add({"--resume", args.resume});
  if (!args.initFrom.empty())
    add({"--init-from", args.initFrom});
  if (args.seed)
    add({"--seed", std::to_string(*args.seed)});
  if (args.save && !r.saveDir.empty()) {
    add({"--save", r.saveDir});
    if (r.saveEvery > 0)
      add({"--save-every", std::to_string(r.saveEvery)});
    if (r.keep > 0)
      add({"--keep", std::to_string(r.keep)});
    if (r.saveSync)
      add({"--save-sync"});
  }
  if (args.fault && !r.fault.empty())
    add({"--fault", r.fault, "--fault-rank", std::to_string(r.faultRank),
         "--fault-step", std::to_string(r.faultStep)});
  if (!r.dataPath.empty())
    options.workerArgs.insert(options.workerArgs.end(), {"--data", r.dataPath});
  // The plan's run (printSteps) on the chosen backend; references on the
  // CPU.
  if (printSteps && r.backend != "cpu")
    options.workerArgs.insert(options.workerArgs.end(),
                              {"--backend", r.backend});
  if (printSteps && !r.fuse)
    options.workerArgs.push_back("--no-fuse");
  if (!r.tracePath.empty() && printSteps)
    options.workerArgs.insert(options.workerArgs.end(),
                              {"--trace", r.tracePath});
  if (!dumpDir.empty())
    options.workerArgs.insert(options.workerArgs.end(),
                              {"--dump-params", dumpDir});
  if (printSteps)
    for (const std::string &other : r.interleave)
      options.workerArgs.insert(options.workerArgs.end(),
                                {"--interleave", other});
  for (const std::string &input : r.inputs)
    options.workerArgs.insert(options.workerArgs.end(), {"--input", input});
  if (!r.expectedOutputs.empty() && printSteps)
    options.workerArgs.insert(options.workerArgs.end(),
                              {"--dump-outputs", dumpDir});
  int64_t plans = 1 + (printSteps ? int64_t(r.interleave.size()) : 0);
  options.timeoutSeconds = r.timeoutSeconds * (args.steps + 2) * plans + 60;
  if (!printSteps)
    options.onLine = [](const std::string &) {};
  auto result = launcher::launch(options);
  if (!result.ok())
    return result.status();
  if (result->timedOut || result->exitStatus != 0) {
    std::string tail;
    for (const std::string &line : result->lastLines)
      tail += "\n  " + line;
    return absl::InternalError(absl::StrCat(
        ranks, " rank(s) of ", path,
        result->timedOut ? " timed out"
                         : absl::StrCat(" failed with status ",
                                        result->exitStatus),
        tail));
  }
  return absl::OkStatus();
}

} // namespace

absl::StatusOr<std::vector<float>> assembleOutput(const plan::Plan &plan,
                                                  int index,
                                                  const std::string &dir) {
  int64_t B = plan.training().global_batch();
  int64_t M = std::max<int64_t>(1, plan.knobs().num_microbatches());
  // Replicas hold different samples: the "dp" axis, and "ep" inside it.
  int64_t dpAxis = axisIndex(plan, "dp"), epAxis = axisIndex(plan, "ep");
  int64_t ep = epAxis < 0 ? 1 : plan.mesh().axes(epAxis).size();
  int64_t dp = (dpAxis < 0 ? 1 : plan.mesh().axes(dpAxis).size()) * ep;
  int64_t rows = B / (M * dp);
  std::vector<float> whole;
  std::vector<bool> seen;
  int64_t rowSize = -1;
  for (const plan::RankAssignment &rank : plan.ranks()) {
    const plan::Program &program = plan.programs(rank.program());
    if (index >= program.output_tensors_size())
      continue;
    int64_t d = (dpAxis < 0 ? 0 : rank.coords(dpAxis)) * ep +
                (epAxis < 0 ? 0 : rank.coords(epAxis));
    for (int64_t m = 0; m < M; ++m) {
      auto block = readFloats(absl::StrCat(dir, "/output", index, ".mb", m,
                                           ".rank", rank.rank(), ".bin"));
      if (!block.ok())
        return block.status();
      if (rowSize < 0) {
        rowSize = int64_t(block->size()) / rows;
        whole.assign(B * rowSize, 0.0f);
        seen.assign(whole.size(), false);
      }
      if (int64_t(block->size()) != rows * rowSize)
        return absl::DataLossError(absl::StrCat(
            "output ", index, " of rank ", rank.rank(), " has ",
            block->size(), " values, expected ", rows * rowSize));
      int64_t start = (m * (B / M) + d * rows) * rowSize;
      for (size_t i = 0; i < block->size(); ++i) {
        float v = (*block)[i];
        if (seen[start + i] && whole[start + i] != v)
          return absl::InternalError(absl::StrCat(
              "output ", index, ": rank ", rank.rank(),
              " disagrees with a replica at element ", start + i));
        whole[start + i] = v;
        seen[start + i] = true;
      }
    }
  }
  if (whole.empty())
    return absl::NotFoundError(
        absl::StrCat("the plan has no output ", index));
  return whole;
}

absl::Status compareRuns(const plan::Plan &plan, const std::string &planDir,
                         const plan::Plan &reference,
                         const std::string &referenceDir, double tolerance,
                         std::string *report, int64_t firstStep) {
  auto losses = readLosses(planDir);
  auto refLosses = readLosses(referenceDir);
  if (!losses.ok())
    return losses.status();
  if (!refLosses.ok())
    return refLosses.status();
  if (losses->size() > refLosses->size())
    return absl::InternalError(absl::StrCat("the plan ran ", losses->size(),
                                            " steps, the reference ",
                                            refLosses->size()));
  // A resumed run's steps are the reference's last ones.
  size_t skip = refLosses->size() - losses->size();
  std::ostringstream out;
  for (size_t s = 0; s < losses->size(); ++s) {
    double a = (*losses)[s], b = (*refLosses)[skip + s];
    double err = std::fabs(a - b) / std::max(std::fabs(b), 1e-30);
    int64_t step = firstStep + static_cast<int64_t>(s);
    out << absl::StrFormat("step %d  loss %.7f  reference %.7f  rel. error "
                           "%.2e\n",
                           step, a, b, err);
    if (!(err <= tolerance)) {
      *report = out.str();
      return absl::InternalError(absl::StrFormat(
          "the loss of step %d diverges: %.9g against the reference's %.9g "
          "(relative error %.2e > %.0e)",
          step, a, b, err, tolerance));
    }
  }
  double worst = 0;
  std::string worstName;
  for (int i = 0; i < plan.parameters_size(); ++i) {
    const std::string &name = plan.parameters(i).name();
    int refIndex = -1;
    for (int j = 0; j < reference.parameters_size(); ++j)
      if (reference.parameters(j).name() == name)
        refIndex = j;
    if (refIndex < 0)
      return absl::InternalError(
          absl::StrCat(name, ": not a parameter of the reference"));
    auto mine = assemble(plan, i, planDir);
    if (!mine.ok())
      return mine.status();
    auto ref = assemble(reference, refIndex, referenceDir);
    if (!ref.ok())
      return ref.status();
    if (mine->size() != ref->size())
      return absl::InternalError(absl::StrCat(name, ": ", mine->size(),
                                              " elements, reference ",
                                              ref->size()));
    double err = relativeError(*mine, *ref);
    if (err > worst) {
      worst = err;
      worstName = name;
    }
    if (!(err <= tolerance)) {
      *report = out.str();
      return absl::InternalError(absl::StrFormat(
          "parameter %s diverges after the last step: relative error %.2e > "
          "%.0e",
          name, err, tolerance));
    }
  }
  out << absl::StrFormat("parameters: %d compared, largest relative error "
                         "%.2e (%s)\n",
                         plan.parameters_size(), worst, worstName);
  *report = out.str();
  return absl::OkStatus();
}

int runPlan(const RunRequest &r) {
  auto loaded = plan::readPlanFile(r.planPath);
  if (!loaded.ok()) {
    std::cerr << "cleave: error: " << loaded.status().message() << "\n";
    return 2;
  }
  const plan::Plan &p = *loaded;
  int ranks = p.ranks_size();
  for (const std::string &other : r.interleave) {
    auto plan = plan::readPlanFile(other);
    if (!plan.ok()) {
      std::cerr << "cleave: error: --interleave: " << plan.status().message()
                << "\n";
      return 2;
    }
    if (plan->ranks_size() != ranks) {
      std::cerr << "cleave: error: --interleave " << other << ": the plan has "
                << plan->ranks_size() << " ranks, " << r.planPath << " has "
                << ranks << " (plans run in turn need the same ranks)\n";
      return 2;
    }
  }
  std::cout << "running " << r.planPath << " (" << p.model().name() << ", "
            << p.knobs().text() << ") on " << ranks << " local rank(s)"
            << std::endl;
  // Where the run starts: after a checkpoint's step, or at the start.
  int64_t startStep = 0;
  std::string initFrom = r.initFrom;
  std::optional<uint64_t> resumedSeed;
  if (!r.resumePath.empty()) {
    absl::StatusOr<checkpoint::Checkpoint> ckpt =
        checkpoint::openCheckpoint(r.resumePath);
    if (!ckpt.ok()) {
      std::cerr << "cleave: error: --resume: " << ckpt.status().message()
                << "\n";
      return 2;
    }
    const checkpoint::Manifest &m = ckpt->manifest;
    startStep = m.step();
    initFrom = m.run().init_from();
    resumedSeed = m.run().seed();
    // --check trains the reference from the start: it must see the data
    // the checkpoint's steps saw.
    if (r.check && m.run().global_batch() != p.training().global_batch()) {
      std::cerr << "cleave: error: --check --resume: the checkpoint's run "
                   "trained on global batches of "
                << m.run().global_batch() << " samples, the plan on "
                << p.training().global_batch()
                << "; one reference cannot retrace both\n";
      return 2;
    }
  }
  int64_t target = startStep + r.steps;
  bool compareOutputs = !r.expectedOutputs.empty();
  std::string planDir = r.check || compareOutputs ? tempDir("plan") : "";
  LaunchArgs args;
  args.steps = r.steps;
  args.resume = r.resumePath;
  args.initFrom = r.resumePath.empty() ? r.initFrom : "";
  args.save = true;
  args.fault = true;
  int64_t lastStart = startStep;
  double launchedAt = static_cast<double>(std::time(nullptr));
  for (int attempt = 0;; ++attempt) {
    absl::Status s = launchPlan(r, r.planPath, ranks, planDir, true, args);
    if (s.ok())
      break;
    if (attempt >= r.maxRestarts) {
      std::cerr << "cleave: error: " << s.message() << "\n";
      if (r.maxRestarts > 0)
        std::cerr << "cleave: error: gave up after " << r.maxRestarts
                  << " restart(s)\n";
      return 1;
    }
    // The newest complete checkpoint this run wrote, else where it began.
    LaunchArgs next = args;
    next.fault = false;
    absl::StatusOr<checkpoint::Checkpoint> latest =
        checkpoint::openCheckpoint(r.saveDir);
    std::string from = lastStart == startStep && r.resumePath.empty()
                           ? "the start"
                           : absl::StrCat("checkpoint step ", lastStart);
    if (latest.ok() && latest->manifest.step() > startStep &&
        latest->manifest.created_unix() + 1 >= launchedAt &&
        latest->manifest.step() < target) {
      lastStart = latest->manifest.step();
      next.resume = latest->dir;
      next.initFrom = "";
      next.steps = target - lastStart;
      from = absl::StrCat("checkpoint step ", lastStart, " (", latest->dir,
                          ")");
    }
    std::cout << "cleave: the job failed (" << s.message().substr(0, s.message().find('\n'))
              << "); restart " << attempt + 1 << " of " << r.maxRestarts
              << " from " << from << std::endl;
    args = next;
  }
  if (compareOutputs) {
    for (const std::string &spec : r.expectedOutputs) {
      size_t eq = spec.find('=');
      int index = -1;
      if (eq == std::string::npos ||
          (index = std::atoi(spec.substr(0, eq).c_str()), spec[0] < '0' ||
           spec[0] > '9')) {
        std::cerr << "cleave: error: --expect-output " << spec
                  << ": expected INDEX=FILE\n";
        return 2;
      }
      auto mine = assembleOutput(p, index, planDir);
      auto ref = readFloats(spec.substr(eq + 1));
      if (!mine.ok() || !ref.ok()) {
        std::cerr << "cleave: error: --expect-output: "
                  << (!mine.ok() ? mine.status() : ref.status()).message()
                  << "\n";
        return 1;
      }
      if (mine->size() != ref->size()) {
        std::cerr << "cleave: error: --expect-output " << spec << ": output "
                  << index << " has " << mine->size() << " values, the file "
                  << ref->size() << "\n";
        return 1;
      }
      double diff = 0, scale = 0;
      for (size_t i = 0; i < ref->size(); ++i) {
        diff = std::max(diff, std::fabs(double((*mine)[i]) - (*ref)[i]));
        scale = std::max(scale, std::fabs(double((*ref)[i])));
      }
      double err = scale > 0 ? diff / scale : diff;
      std::cout << absl::StrFormat(
          "output %d: %d values, largest difference %.3g, relative error "
          "%.2e\n",
          index, ref->size(), diff, err);
      if (!(err <= r.tolerance)) {
        std::cerr << absl::StrFormat("cleave: error: output %d differs from "
                                     "%s: relative error %.2e > %.0e\n",
                                     index, spec.substr(eq + 1), err,
                                     r.tolerance);
        return 1;
      }
    }
    std::cout << "outputs match within " << absl::StrFormat("%.0e", r.tolerance)
              << std::endl;
  }
  if (!r.check) {
    if (!planDir.empty())
      std::filesystem::remove_all(planDir);
    return 0;
  }
  auto reference = r.reference(p);
  if (!reference.ok()) {
    std::cerr << "cleave: error: --check: " << reference.status().message()
              << "\n";
    return 1;
  }
  std::string refDir = tempDir("reference");
  std::string refPath = refDir + "/reference.cleave";
  if (absl::Status s = plan::writePlanFile(refPath, *reference); !s.ok()) {
    std::cerr << "cleave: error: " << s.message() << "\n";
    return 1;
  }
  std::cout << "check: training the unpartitioned model on one rank"
            << std::endl;
  LaunchArgs refArgs;
  refArgs.steps = target;
  refArgs.initFrom = initFrom;
  refArgs.seed = resumedSeed;
  if (absl::Status s = launchPlan(r, refPath, 1, refDir, false, refArgs);
      !s.ok()) {
    std::cerr << "cleave: error: --check reference: " << s.message() << "\n";
    return 1;
  }
  std::string report;
  absl::Status s = compareRuns(p, planDir, *reference, refDir, r.tolerance,
                               &report, lastStart + 1);
  std::cout << report;
  if (!s.ok()) {
    std::cerr << "cleave: error: --check: " << s.message() << "\n";
    return 1;
  }
  std::cout << absl::StrFormat("check passed: %d steps and every parameter "
                               "within %.0e of the unpartitioned run%s\n",
                               r.steps, r.tolerance,
                               target > r.steps
                                   ? absl::StrFormat(" of %d steps", target)
                                   : std::string());
  std::filesystem::remove_all(planDir);
  std::filesystem::remove_all(refDir);
  return 0;
}

} // namespace cleave::tool
