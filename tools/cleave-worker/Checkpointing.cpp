//===- Checkpointing.cpp - The worker's saves, resumes and weights --------===//

#include "Checkpointing.h"

#include "cleave/runtime/comm/MpiCommunicator.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <sstream>

namespace cleave::worker {

int64_t MpiCoordinator::minAll(int64_t value) {
  int64_t negated = -value;
  comm::CommTensor t{&negated, {1}, comm::ElementType::I64};
  comm_.allReduce(comm_.mesh().axisNames, t, t, comm::Reduction::Max);
  return -negated;
}

std::vector<std::string>
MpiCoordinator::gatherToRoot(const std::string &text) {
  return comm::mpiGatherToRoot(text);
}

checkpoint::Manifest manifestBase(const plan::Plan &plan,
                                  const Options &options, uint64_t seed,
                                  const std::string &initFrom) {
  checkpoint::Manifest m;
  m.set_producer("cleave");
  m.set_plan_knobs(plan.knobs().text());
  checkpoint::ModelInfo &model = *m.mutable_model();
  model.set_name(plan.model().name());
  model.set_source(plan.model().source());
  model.set_graph_hash(plan.model().graph_hash());
  model.set_num_parameters(plan.model().num_parameters());
  checkpoint::RunInfo &run = *m.mutable_run();
  run.set_seed(seed);
  if (!options.dataPath.empty()) {
    std::error_code ec;
    run.set_data_path(std::filesystem::absolute(options.dataPath, ec).string());
    run.set_data_bytes(
        static_cast<int64_t>(std::filesystem::file_size(options.dataPath, ec)));
  }
  run.set_global_batch(plan.training().global_batch());
  run.set_seq_len(plan.training().seq_len());
  run.set_optimizer(plan.training().optimizer());
  run.set_lr(plan.training().lr());
  run.set_init_from(initFrom);
  return m;
}

namespace {

double gb(double bytes) { return bytes / 1e9; }

/// The largest of each rank's `value`, on rank 0.
double maxOnRoot(checkpoint::Coordinator &coord, double value) {
  std::vector<std::string> all = coord.gatherToRoot(std::to_string(value));
  double best = value;
  for (const std::string &v : all)
    best = std::max(best, std::stod(v));
  return best;
}

} // namespace

void reportSaves(checkpoint::Saver &saver, checkpoint::Coordinator &coord,
                 bool async) {
  for (const checkpoint::SaveReport &r : saver.takeReports()) {
    double stall = maxOnRoot(coord, r.stallSeconds);
    double write = maxOnRoot(coord, r.writeSeconds);
    if (coord.rank() != 0)
      continue;
    std::printf("checkpoint: step %lld saved to %s: %.1f MB in %.3f s "
                "(%.2f GB/s written), step stalled %.1f ms (%s)\n",
                static_cast<long long>(r.step), r.dir.c_str(), r.bytes / 1e6,
                r.totalSeconds, write > 0 ? gb(r.bytes) / write : 0.0,
                stall * 1e3, async ? "async" : "sync");
    std::fflush(stdout);
  }
}

void reportLoad(const checkpoint::Checkpoint &ckpt,
                const checkpoint::LoadReport &report,
                checkpoint::Coordinator &coord) {
  std::vector<std::string> bytes =
      coord.gatherToRoot(std::to_string(report.bytesRead));
  double seconds = maxOnRoot(coord, report.seconds);
  if (coord.rank() != 0)
    return;
  double total = 0;
  for (const std::string &b : bytes)
    total += std::stod(b);
  const checkpoint::Manifest &m = ckpt.manifest;
  std::printf("checkpoint: resumed from %s (step %lld, written by %s on %d "
              "rank(s)): %.1f MB read in %.3f s (%.2f GB/s)\n",
              ckpt.dir.c_str(), static_cast<long long>(m.step()),
              m.plan_knobs().c_str(), m.world_size(), total / 1e6, seconds,
              seconds > 0 ? gb(total) / seconds : 0.0);
  std::fflush(stdout);
}

} // namespace cleave::worker
