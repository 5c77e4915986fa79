//===- Interleave.cpp - Plans timed in turn in one launch -----------------===//

#include "Interleave.h"
#include "Job.h"

#include "cleave/runtime/comm/MpiCommunicator.h"
#include "cleave/runtime/executor/Executor.h"
#include "cleave/runtime/plan/PlanIO.h"

#include <cstdio>
#include <memory>

namespace cleave::worker {

namespace {

/// One plan of --interleave: its rank's executor and what keeps it running.
struct InterleavedPlan {
  std::string path;
  plan::Plan plan;
  std::unique_ptr<comm::Communicator> comm;
  std::unique_ptr<executor::Executor> executor;
  std::unique_ptr<executor::Watchdog> watchdog;
};

} // namespace

int runInterleaved(const Options &options) {
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
    if (p.plan.ranks_size() != worldSize())
      fail(p.path + ": the plan has " + std::to_string(p.plan.ranks_size()) +
           " ranks but mpirun started " + std::to_string(worldSize()) +
           " (--interleave needs plans of one size)");
    try {
      p.comm = comm::createMpiCommunicator(meshOf(p.plan));
    } catch (const std::exception &e) {
      fail(p.path + ": " + e.what());
    }
    executor::ExecutorOptions execOptions;
    execOptions.seed = options.seed;
    execOptions.fuse = options.fuse;
    absl::StatusOr<std::unique_ptr<executor::Executor>> ex =
        executor::Executor::create(p.plan, rank(), *p.comm, execOptions);
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
      if (rank() == 0) {
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

} // namespace cleave::worker
