//===- Train.cpp - The training steps of one rank -------------------------===//

#include "Train.h"
#include "Checkpointing.h"
#include "Dumps.h"
#include "Job.h"

#include "cleave/runtime/comm/MpiCommunicator.h"

#include "absl/strings/str_cat.h"

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <thread>

namespace cleave::worker {

namespace {

void injectFault(const Options &options, int64_t step) {
  if (options.fault.empty() || options.faultRank != rank() ||
      options.faultStep != step)
    return;
  std::fprintf(stderr, "rank %d: injecting fault '%s' at step %lld\n", rank(),
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

} // namespace

void train(const TrainingRun &run) {
  const Options &options = run.options;
  const plan::Plan &plan = run.plan;
  executor::Executor &ex = run.executor;
  comm::Communicator &comm = run.comm;
  const int64_t firstStep = run.firstStep;
  const bool hasLoss = run.hasLoss;
  MpiCoordinator &coordinator = run.coordinator;
  const std::string &initFrom = run.initFrom;
  std::unique_ptr<checkpoint::Saver> saver;
  // The step whose save the kill-in-save fault cuts (the writer thread
  // reads it).
  std::atomic<int64_t> savingStep{0};
  if (!options.saveDir.empty()) {
    checkpoint::SaveOptions saveOptions;
    saveOptions.dir = options.saveDir;
    saveOptions.async = !options.saveSync;
    saveOptions.keep = static_cast<int>(options.keep);
    if (options.fault == "kill-in-save" && options.faultRank == rank())
      saveOptions.afterFirstBlock = [&options, &savingStep] {
        if (savingStep.load() < options.faultStep)
          return;
        std::fprintf(stderr, "rank %d: injecting fault 'kill-in-save' while "
                             "saving step %lld\n",
                     rank(), static_cast<long long>(savingStep.load()));
        std::fflush(stderr);
        std::raise(SIGKILL);
      };
    saver = std::make_unique<checkpoint::Saver>(
        plan, rank(), coordinator, std::move(saveOptions),
        manifestBase(plan, options, ex.seed(), initFrom));
  }
  // A failed save: rank 0 holds every rank's message and ends the job;
  // the others wait to be ended with it.
  auto failSave = [&](const absl::Status &s) {
    if (absl::IsAborted(s) && rank() != 0)
      comm::mpiBarrier();
    fail(std::string(s.message()));
  };

  // A common time origin for the trace: the latest clock reading before a
  // collective precedes every event after it on every rank.
  int64_t origin = nowUs();
  comm::CommTensor originTensor{&origin, {1}, comm::ElementType::I64};
  {
    executor::WatchedPhase phase(ex, "agreeing on the trace's time origin");
    comm.allReduce(comm.mesh().axisNames, originTensor, originTensor,
                   comm::Reduction::Max);
  }

  const plan::TrainingConfig &training = plan.training();
  double tokens = training.tokens_per_step();
  if (tokens <= 0)
    tokens = static_cast<double>(training.global_batch()) *
             std::max<int64_t>(1, training.seq_len());
  std::vector<double> losses;
  int64_t lastStep = firstStep + options.steps - 1;
  for (int64_t step = firstStep; step <= lastStep; ++step) {
    injectFault(options, step);
    absl::StatusOr<executor::StepResult> result = ex.runStep(step);
    if (!result.ok())
      fail(std::string(result.status().message()));
    losses.push_back(result->loss);
    if (!options.dumpDir.empty() && hasLoss) {
      // The step's gradients, complete once its deferred work is.
      if (absl::Status f = ex.finishSteps(); !f.ok())
        fail(std::string(f.message()));
      dumpGradients(plan, ex, options.dumpDir, step == firstStep);
    }
    if (rank() == 0) {
      double seconds = result->seconds;
      double tflops = training.flops_per_step() / seconds / worldSize() / 1e12;
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
      if (ex.scalesLoss())
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
        if (absl::Status f = ex.finishSteps(); !f.ok())
          fail(std::string(f.message()));
        savingStep = step;
        executor::WatchedPhase phase(ex, "saving a checkpoint");
        s = saver->save(step, ex);
      } else {
        executor::WatchedPhase phase(ex, "checking on a checkpoint's save");
        s = saver->poll(/*wait=*/false);
      }
      if (!s.ok())
        failSave(s);
      executor::WatchedPhase phase(ex, "reporting the checkpoint saves");
      reportSaves(*saver, coordinator, !options.saveSync);
    }
  }
  if (saver) {
    executor::WatchedPhase phase(ex, "completing the last checkpoint");
    if (absl::Status s = saver->poll(/*wait=*/true); !s.ok())
      failSave(s);
    reportSaves(*saver, coordinator, !options.saveSync);
  }
  if (absl::Status s = ex.finishSteps(); !s.ok())
    fail(std::string(s.message()));
  if (!options.dumpDir.empty())
    dumpParameters(plan, ex, options.dumpDir, losses);
  if (!options.outputsDir.empty())
    dumpOutputs(ex, options.outputsDir);
  if (!options.tracePath.empty())
    writeTrace(comm, ex, options.tracePath, static_cast<double>(origin));
}

} // namespace cleave::worker
