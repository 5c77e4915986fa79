//===- RunPlan.cpp - `cleave run`: launch a plan, check it ----------------===//
//
// Plain C++ (the reference plan comes from a callback): the launcher starts
// cleave-worker on as many local ranks as the plan has, and --check runs
// the one-rank reference the same way, both dumping their parameters, then
// assembles every parameter from its blocks and compares.
//
//===----------------------------------------------------------------------===//

#include "cleave/runtime/launcher/RunPlan.h"

#include "cleave/runtime/checkpoint/Restore.h"
#include "cleave/runtime/launcher/JobMonitor.h"
#include "cleave/runtime/launcher/Launch.h"
#include "cleave/runtime/launcher/RunDumps.h"
#include "cleave/runtime/plan/PlanIO.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <ctime>
#include <optional>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sched.h>
#include <sstream>
#include <thread>
#include <unistd.h>

namespace cleave::launcher {

namespace {

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
  /// Pass --dump-outputs (an inference plan's outputs, for --expect-output
  /// or --check).
  bool dumpOutputs = false;
  /// Kernel threads a rank (OMP_NUM_THREADS); 0: the ranks share the
  /// cores out themselves.
  int rankThreads = 0;
};

/// The kernel threads each of a plan's `ranks` ranks on this machine
/// takes (cleave-worker shares the cores out: kernels::adoptRankThreads),
/// for --check's one-rank reference: the same thread count gives the
/// same arithmetic, where a GEMM library may sum in another order on more
/// threads (OpenBLAS's generic kernels do, and a batch norm over two
/// samples makes such a difference a 3e-4 one in the loss a step later).
/// 0 where the user fixed the count for both (OMP_NUM_THREADS or
/// OPENBLAS_NUM_THREADS).
int referenceThreads(int ranks) {
  if (std::getenv("OMP_NUM_THREADS") || std::getenv("OPENBLAS_NUM_THREADS"))
    return 0;
  cpu_set_t set;
  CPU_ZERO(&set);
  int cores = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set)
                                                           : 0;
  if (cores <= 0)
    cores = std::max(1u, std::thread::hardware_concurrency());
  return std::max(1, cores / std::max(1, ranks));
}

/// Prints output `index`'s largest difference from `ref` and returns its
/// relative error (to the largest |ref|), as --expect-output and an
/// inference plan's --check judge it.
double reportOutputError(int index, const std::vector<float> &mine,
                         const std::vector<float> &ref) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    diff = std::max(diff, std::fabs(double(mine[i]) - ref[i]));
    scale = std::max(scale, std::fabs(double(ref[i])));
  }
  double err = scale > 0 ? diff / scale : diff;
  std::cout << absl::StrFormat("output %d: %d values, largest difference "
                               "%.3g, relative error %.2e\n",
                               index, ref.size(), diff, err);
  return err;
}

/// The mean of a scalar output (a model ending in its loss: one value per
/// microbatch and rank that holds it) over the microbatches and replicas,
/// which is the step's loss whatever the partitioning.
absl::StatusOr<double> scalarOutputMean(const plan::Plan &p, int index,
                                        const std::string &dir) {
  int64_t M = std::max<int64_t>(1, p.knobs().num_microbatches());
  double sum = 0;
  int64_t count = 0;
  for (const plan::RankAssignment &rank : p.ranks()) {
    if (index >= p.programs(rank.program()).output_tensors_size())
      continue;
    for (int64_t m = 0; m < M; ++m) {
      auto block =
          launcher::readFloats(launcher::outputDumpPath(dir, index, m,
                                                        rank.rank()));
      if (!block.ok())
        return block.status();
      if (block->size() != 1)
        return absl::InvalidArgumentError(
            absl::StrCat("output ", index, " is neither one row per sample "
                         "nor a scalar"));
      sum += (*block)[0];
      ++count;
    }
  }
  if (count == 0)
    return absl::NotFoundError(absl::StrCat("no rank wrote output ", index));
  return sum / double(count);
}

/// --check of an inference plan: every output of the last step against the
/// one-rank run's, as --expect-output compares one with a file (a scalar
/// output, a model's loss, by its mean). The exit code.
int checkOutputs(const plan::Plan &p, const std::string &planDir,
                 const plan::Plan &reference, const std::string &refDir,
                 double tolerance) {
  int outputs = 0;
  for (const plan::Program &program : p.programs())
    outputs = std::max(outputs, program.output_tensors_size());
  for (int index = 0; index < outputs; ++index) {
    auto mine = launcher::assembleOutput(p, index, planDir);
    auto ref = launcher::assembleOutput(reference, index, refDir);
    if (!mine.ok() || !ref.ok()) {
      // A scalar (the loss of a model that ends in one): its mean.
      auto a = scalarOutputMean(p, index, planDir);
      auto b = scalarOutputMean(reference, index, refDir);
      if (!a.ok() || !b.ok()) {
        std::cerr << "cleave: error: --check: "
                  << (!mine.ok() ? mine.status() : ref.status()).message()
                  << "\n";
        return 1;
      }
      mine = std::vector<float>{float(*a)};
      ref = std::vector<float>{float(*b)};
    }
    if (mine->size() != ref->size()) {
      std::cerr << "cleave: error: --check: output " << index << " has "
                << mine->size() << " values, the unpartitioned run's "
                << ref->size() << "\n";
      return 1;
    }
    double err = reportOutputError(index, *mine, *ref);
    if (!(err <= tolerance)) {
      std::cerr << absl::StrFormat("cleave: error: --check: output %d "
                                   "differs from the unpartitioned run: "
                                   "relative error %.2e > %.0e\n",
                                   index, err, tolerance);
      return 1;
    }
  }
  std::cout << absl::StrFormat("check passed: %d output(s) within %.0e of "
                               "the unpartitioned run\n",
                               outputs, tolerance);
  std::filesystem::remove_all(planDir);
  std::filesystem::remove_all(refDir);
  return 0;
}

absl::Status launchPlan(const RunRequest &r, const std::string &path,
                        int ranks, const std::string &dumpDir,
                        bool printSteps, const LaunchArgs &args);

std::string readText(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// `cleave generate --check`: the plan and a one-rank plan of the same
/// model generate for the same prompts; every request's tokens must be the
/// same and every logit they were chosen from agree within the tolerance
/// (relative to max(1, |reference|)). The exit code.
int checkGeneration(const RunRequest &r, const plan::Plan &p, int ranks,
                    const LaunchArgs &args) {
  auto reference = r.reference(p);
  if (!reference.ok()) {
    std::cerr << "cleave: error: --check: " << reference.status().message()
              << "\n";
    return 1;
  }
  std::string dir = tempDir("generate-check");
  std::string refPath = dir + "/reference.cleave";
  if (absl::Status s = plan::writePlanFile(refPath, *reference); !s.ok()) {
    std::cerr << "cleave: error: " << s.message() << "\n";
    return 1;
  }
  struct Side {
    std::string plan, logits;
    int ranks;
    bool print;
  };
  for (const Side &side : {Side{r.planPath, dir + "/plan.logits", ranks, true},
                           Side{refPath, dir + "/reference.logits", 1, false}}) {
    LaunchArgs sideArgs = args;
    if (!side.print)
      sideArgs.rankThreads = referenceThreads(ranks);
    if (!side.print)
      std::cout << "check: generating with the unpartitioned model on one "
                   "rank"
                << std::endl;
    RunRequest run = r;
    run.generateArgs.insert(run.generateArgs.end(),
                            {"--dump-logits", side.logits});
    // The reference's lines are not the plan's: only errors show.
    if (absl::Status s = launchPlan(run, side.plan, side.ranks, "",
                                    side.print, sideArgs);
        !s.ok()) {
      std::cerr << "cleave: error: " << (side.print ? "" : "--check: ")
                << s.message() << "\n";
      return 1;
    }
  }
  std::string mine = readText(dir + "/plan.logits.tokens"),
              theirs = readText(dir + "/reference.logits.tokens");
  if (mine != theirs) {
    std::istringstream a(mine), b(theirs);
    std::string x, y;
    while (std::getline(a, x) && std::getline(b, y) && x == y) {
    }
    std::cerr << "cleave: error: --check: the tokens differ from the "
                 "unpartitioned run's:\n  plan:      "
              << x << "\n  reference: " << y << "\n";
    return 1;
  }
  std::string la = readText(dir + "/plan.logits"),
              lb = readText(dir + "/reference.logits");
  if (la.size() != lb.size() || la.size() % sizeof(float)) {
    std::cerr << "cleave: error: --check: " << la.size() / sizeof(float)
              << " logits, the unpartitioned run's " << lb.size() / sizeof(float)
              << "\n";
    return 1;
  }
  std::vector<float> va(la.size() / sizeof(float)), vb(va.size());
  std::memcpy(va.data(), la.data(), la.size());
  std::memcpy(vb.data(), lb.data(), lb.size());
  double worst = 0;
  for (size_t i = 0; i < va.size(); ++i)
    worst = std::max(worst, std::abs(double(va[i]) - vb[i]) /
                                std::max(1.0, std::abs(double(vb[i]))));
  int64_t requests = std::count(mine.begin(), mine.end(), '\n');
  if (!(worst <= r.tolerance)) {
    std::cerr << absl::StrFormat("cleave: error: --check: the logits differ "
                                 "from the unpartitioned run's: relative "
                                 "%.2e > %.0e\n",
                                 worst, r.tolerance);
    return 1;
  }
  std::cout << absl::StrFormat("check passed: %d requests generate the same "
                               "tokens as the unpartitioned run, logits "
                               "within %.2e (tolerance %.0e)\n",
                               requests, worst, r.tolerance);
  std::filesystem::remove_all(dir);
  return 0;
}

absl::Status launchPlan(const RunRequest &r, const std::string &path,
                        int ranks, const std::string &dumpDir,
                        bool printSteps, const LaunchArgs &args) {
  launcher::LaunchOptions options;
  options.worker = launcher::defaultWorkerPath(r.argv0);
  options.ranks = ranks;
  options.workerArgs = {path, "--steps", std::to_string(args.steps),
                        "--timeout", absl::StrFormat("%g", r.timeoutSeconds)};
  if (args.rankThreads > 0)
    options.environment.push_back("OMP_NUM_THREADS=" +
                                  std::to_string(args.rankThreads));
  auto add = [&](std::initializer_list<std::string> more) {
    options.workerArgs.insert(options.workerArgs.end(), more);
  };
  options.workerArgs.insert(options.workerArgs.end(), r.generateArgs.begin(),
                            r.generateArgs.end());
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
  if (r.paddedMasks)
    options.workerArgs.insert(options.workerArgs.end(),
                              {"--masks", "padded"});
  if (args.dumpOutputs)
    options.workerArgs.insert(options.workerArgs.end(),
                              {"--dump-outputs", dumpDir});
  int64_t plans = 1 + (printSteps ? int64_t(r.interleave.size()) : 0);
  options.timeoutSeconds = r.timeoutSeconds * (args.steps + 2) * plans + 60;
  // A reference run's steps are not the plan's: at a terminal they show
  // as one progress line (a long reference otherwise looks like a hang),
  // elsewhere not at all.
  bool progress = !printSteps && isatty(STDERR_FILENO);
  if (!printSteps)
    options.onLine = [progress, total = args.steps](const std::string &line) {
      if (progress && line.rfind("step ", 0) == 0)
        std::cerr << "\rcheck: reference step "
                  << line.substr(5, line.find(' ', 5) - 5) << " of " << total
                  << std::flush;
    };
  // The job's folder: the ranks' heartbeats and everything the job prints
  // (kept, and named, when it fails).
  const char *tmp = std::getenv("TMPDIR");
  std::string pattern =
      std::string(tmp && *tmp ? tmp : "/tmp") + "/cleave-run-XXXXXX";
  std::vector<char> folder(pattern.begin(), pattern.end());
  folder.push_back('\0');
  std::string jobDir = mkdtemp(folder.data()) ? folder.data() : "";
  launcher::JobMonitor monitor(jobDir, jobDir.empty() ? "" : jobDir + "/job.log",
                               r.timeoutSeconds, ranks);
  if (!jobDir.empty()) {
    options.workerArgs.insert(options.workerArgs.end(),
                              {"--heartbeat", jobDir});
    options.shouldStop = [&monitor] { return monitor.check(); };
  }
  // cleave's own lines go on; Open MPI's only to the log. The last few
  // of cleave's are kept for the error.
  std::deque<std::string> tail;
  auto show = options.onLine;
  if (!show)
    show = [](const std::string &line) {
      std::printf("%s\n", line.c_str());
      std::fflush(stdout);
    };
  // The plan's own steps end with the time left (when a second or more):
  // the mean wall time of the steps since the first (which also pays for
  // warm-up) times the steps to go.
  if (printSteps && args.steps > 1)
    show = [show, total = args.steps, seen = int64_t(0),
            first = std::chrono::steady_clock::time_point()](
               const std::string &line) mutable {
      if (line.rfind("step ", 0) != 0) {
        show(line);
        return;
      }
      auto now = std::chrono::steady_clock::now();
      if (seen++ == 0)
        first = now;
      if (seen < 2 || seen >= total) {
        show(line);
        return;
      }
      double each =
          std::chrono::duration<double>(now - first).count() / double(seen - 1);
      double left = each * double(total - seen);
      // Under a second to go, a time left says nothing.
      show(left >= 1 ? line + "  ETA " + formatEta(left) : line);
    };
  options.onLine = [&](const std::string &line) {
    if (!monitor.forUser(line))
      return;
    tail.push_back(line);
    if (tail.size() > 8)
      tail.pop_front();
    show(line);
  };
  auto result = launcher::launch(options);
  if (progress)
    std::cerr << "\r" << std::string(48, ' ') << "\r" << std::flush;
  if (!result.ok())
    return result.status();
  if (result->timedOut || result->stopped || result->exitStatus != 0) {
    std::string text = absl::StrCat(
        ranks, " rank(s) of ", path,
        result->timedOut ? " timed out"
                         : absl::StrCat(" failed with status ",
                                        result->exitStatus));
    for (const std::string &finding : monitor.findings())
      text += "\n  " + finding;
    for (const std::string &line : tail)
      if (line.rfind("step ", 0) != 0)
        text += "\n  " + line;
    if (!jobDir.empty())
      text += "\n  (Open MPI's messages: " + monitor.logPath() + ")";
    return absl::InternalError(text);
  }
  std::error_code ec;
  if (!jobDir.empty())
    std::filesystem::remove_all(jobDir, ec);
  return absl::OkStatus();
}

} // namespace

std::string formatEta(double seconds) {
  if (seconds < 10)
    return absl::StrFormat("%.1f s", std::max(0.0, seconds));
  if (seconds < 60)
    return absl::StrFormat("%.0f s", seconds);
  long long s = std::llround(seconds);
  if (s < 3600)
    return absl::StrFormat("%lld:%02lld", s / 60, s % 60);
  return absl::StrFormat("%lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
}

int runPlan(const RunRequest &r) {
  auto loaded = plan::readPlanFile(r.planPath);
  if (!loaded.ok()) {
    std::cerr << "cleave: error: " << loaded.status().message() << "\n";
    return 2;
  }
  const plan::Plan &p = *loaded;
  int ranks = p.ranks_size();
  if (!r.generateArgs.empty() || p.has_generation()) {
    if (r.generateArgs.empty() || !p.has_generation()) {
      std::cerr << "cleave: error: " << r.planPath
                << (p.has_generation()
                        ? " is a generation plan: run it with `cleave "
                          "generate PLAN --prompt-file FILE`"
                        : " is not a generation plan (compile the model "
                          "with --serve -o)")
                << "\n";
      return 2;
    }
    const plan::GenerationConfig &g = p.generation();
    std::cout << "generating with " << r.planPath << " (" << p.model().name()
              << ", " << p.knobs().text() << ") on " << ranks
              << " local rank(s): " << g.max_batch() << " tokens a step";
    if (g.max_sequences() > 0 && g.max_sequences() < g.max_batch())
      std::cout << " (" << g.max_sequences() << " sequences at once)";
    std::cout << ", sequences of up to " << g.max_length()
              << " positions, " << g.blocks() << " cache blocks of "
              << g.block_size() << std::endl;
    LaunchArgs args;
    args.initFrom = r.initFrom;
    if (!r.check) {
      if (absl::Status s = launchPlan(r, r.planPath, ranks, "", true, args);
          !s.ok()) {
        std::cerr << "cleave: error: " << s.message() << "\n";
        return 1;
      }
      return 0;
    }
    return checkGeneration(r, p, ranks, args);
  }
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
  // Say when the data is made up: a loss on random tokens neither falls
  // nor means anything, and a newcomer should not have to guess.
  if (r.dataPath.empty()) {
    std::set<std::string> given, synthetic;
    for (const std::string &spec : r.inputs)
      given.insert(spec.substr(0, spec.find('=')));
    for (const plan::Program &program : p.programs())
      for (const plan::TensorDecl &t : program.tensors())
        if (t.kind() == plan::TensorDecl::INPUT && t.input_name() != "step" &&
            t.input_name() != "loss_scale" && !given.count(t.input_name()))
          synthetic.insert(t.input_name());
    if (!synthetic.empty()) {
      std::cout << "data: synthetic ";
      bool first = true;
      for (const std::string &name : synthetic) {
        std::cout << (first ? "" : ", ") << name;
        first = false;
      }
      std::cout << " (made up as `cleave inspect` lists"
                << (r.paddedMasks ? ", masks right-padded" : "")
                << "; --data FILE or --input NAME=FILE for real data)"
                << std::endl;
    }
  }
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
  // An inference plan's --check compares its outputs (its parameters do
  // not change).
  bool inference = p.training().optimizer() == "none";
  std::string planDir = r.check || compareOutputs ? tempDir("plan") : "";
  LaunchArgs args;
  args.dumpOutputs = compareOutputs || (r.check && inference);
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
      auto mine = launcher::assembleOutput(p, index, planDir);
      auto ref = launcher::readFloats(spec.substr(eq + 1));
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
      double err = reportOutputError(index, *mine, *ref);
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
  std::cout << (inference ? "check: running the unpartitioned model on one "
                            "rank"
                          : "check: training the unpartitioned model on one "
                            "rank")
            << std::endl;
  LaunchArgs refArgs;
  refArgs.steps = target;
  refArgs.initFrom = initFrom;
  refArgs.seed = resumedSeed;
  refArgs.dumpOutputs = inference;
  refArgs.rankThreads = referenceThreads(ranks);
  if (absl::Status s = launchPlan(r, refPath, 1, refDir, false, refArgs);
      !s.ok()) {
    std::cerr << "cleave: error: --check reference: " << s.message() << "\n";
    return 1;
  }
  if (inference)
    return checkOutputs(p, planDir, *reference, refDir, r.tolerance);
  std::string report;
  absl::Status s = launcher::compareRuns(p, planDir, *reference, refDir, r.tolerance,
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

} // namespace cleave::launcher
