//===- Saver.cpp - Save a rank's state, synchronously or in the background -===//

#include "cleave/runtime/checkpoint/Saver.h"

#include "cleave/runtime/checkpoint/Directory.h"
#include "cleave/runtime/checkpoint/Files.h"

#include "absl/strings/str_cat.h"

#include <chrono>
#include <ctime>
#include <optional>

namespace cleave::checkpoint {

namespace {

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                       start)
      .count();
}

} // namespace

/// One save in flight: the host copy of this rank's blocks and what
/// writing them gave.
struct Saver::Write {
  int64_t step = 0;
  /// Loss scaling's state at the save (the executor runs on meanwhile).
  std::optional<executor::LossScaleState> lossScale;
  std::string partialDir;
  std::thread thread;
  std::atomic<bool> done{false};
  absl::Status status;
  Manifest part;
  std::chrono::steady_clock::time_point start;
  double stallSeconds = 0;
  double writeSeconds = 0;
};

Saver::Saver(const plan::Plan &plan, int rank, Coordinator &coordinator,
             SaveOptions options, Manifest base)
    : plan_(plan), rank_(rank), coordinator_(coordinator),
      options_(std::move(options)), base_(std::move(base)) {
  blocks_ = blocksWrittenBy(plan_, rank_);
}

Saver::~Saver() {
  if (write_ && write_->thread.joinable())
    write_->thread.join();
}

namespace {

/// Writes the blocks (their copies in `data`) to this rank's shard file,
/// fsync'd; describes them in `part`.
absl::Status writeShard(const std::vector<Block> &blocks,
                        const std::vector<std::string> &data, int rank,
                        const std::string &dir, Manifest &part,
                        const std::function<void()> &afterFirstBlock) {
  std::string name = shardFileName(rank);
  absl::StatusOr<OutputFile> out = OutputFile::create(dir + "/" + name);
  if (!out.ok())
    return out.status();
  ShardFile &file = *part.add_files();
  file.set_path(name);
  file.set_rank(rank);
  for (size_t i = 0; i < blocks.size(); ++i) {
    const Block &b = blocks[i];
    TensorInfo &t = *part.add_tensors();
    t.set_name(b.name);
    t.set_state(b.state);
    t.set_dtype(b.dtype);
    for (int64_t d : b.globalShape)
      t.add_global_shape(d);
    if (b.state.empty())
      for (const std::string &alias : b.aliases)
        t.add_aliases(alias);
    ShardEntry &e = *part.add_entries();
    e.set_tensor(static_cast<int>(i));
    e.set_file(0);
    e.set_offset(out->size());
    e.set_bytes(static_cast<int64_t>(data[i].size()));
    for (int64_t d : b.box.origin)
      e.add_origin(d);
    for (int64_t d : b.box.extent)
      e.add_extent(d);
    e.set_xxh3(hashBytes(data[i].data(), data[i].size()));
    if (absl::Status s = out->append(data[i].data(), data[i].size(),
                                     absl::StrCat("tensor '", b.key(), "'"));
        !s.ok())
      return s;
    if (i == 0 && afterFirstBlock)
      afterFirstBlock();
  }
  if (absl::Status s = out->sync(); !s.ok())
    return s;
  file.set_bytes(out->size());
  return absl::OkStatus();
}

} // namespace

absl::Status Saver::save(int64_t step, executor::Executor &executor) {
  if (pending_)
    if (absl::Status s = poll(/*wait=*/true); !s.ok())
      return s;
  auto start = std::chrono::steady_clock::now();
  absl::Status prepared = absl::OkStatus();
  std::string partial;
  if (rank_ == 0) {
    absl::StatusOr<std::string> dir = preparePartialDir(options_.dir, step);
    prepared = dir.status();
    if (dir.ok())
      partial = *dir;
  }
  // Rank 0 has made the directory before anyone writes into it.
  if (coordinator_.minAll(prepared.ok() ? 1 : -1) < 0)
    return failEverywhere(prepared, step);
  write_ = std::make_unique<Write>();
  Write &w = *write_;
  w.step = step;
  w.start = start;
  if (executor.scalesLoss())
    w.lossScale = executor.lossScaleState();
  w.partialDir = options_.dir + "/" + stepDirName(step) + ".partial";
  if (staging_.empty())
    for (const Block &b : blocks_)
      staging_.emplace_back(
          static_cast<size_t>(executor.tensor(b.tensorId).numBytes()), '\0');
  for (size_t i = 0; i < blocks_.size(); ++i)
    executor.readTensorBytes(blocks_[i].tensorId, staging_[i].data(),
                             static_cast<int64_t>(staging_[i].size()));
  auto body = [this, &w] {
    auto begin = std::chrono::steady_clock::now();
    try {
      w.status = writeShard(blocks_, staging_, rank_, w.partialDir, w.part,
                            options_.afterFirstBlock);
    } catch (const std::exception &e) {
      w.status = absl::InternalError(
          absl::StrCat("writing the shard of rank ", rank_, ": ", e.what()));
    }
    w.writeSeconds = secondsSince(begin);
    w.done = true;
  };
  if (options_.async) {
    w.thread = std::thread(body);
    pending_ = true;
    w.stallSeconds = secondsSince(start);
    return absl::OkStatus();
  }
  body();
  absl::Status s = commit(w);
  if (s.ok() && !reports_.empty())
    reports_.back().stallSeconds = secondsSince(start);
  write_.reset();
  return s;
}

absl::Status Saver::poll(bool wait) {
  if (!pending_)
    return absl::OkStatus();
  auto start = std::chrono::steady_clock::now();
  Write &w = *write_;
  if (wait && w.thread.joinable())
    w.thread.join();
  if (coordinator_.minAll(w.done ? 1 : 0) == 0) {
    w.stallSeconds += secondsSince(start);
    return absl::OkStatus();
  }
  if (w.thread.joinable())
    w.thread.join();
  pending_ = false;
  absl::Status s = commit(w);
  w.stallSeconds += secondsSince(start);
  if (s.ok() && !reports_.empty())
    reports_.back().stallSeconds = w.stallSeconds;
  write_.reset();
  return s;
}

absl::Status Saver::commit(Write &w) {
  if (coordinator_.minAll(w.status.ok() ? 1 : -1) < 0)
    return failEverywhere(w.status, w.step);
  std::vector<std::string> parts =
      coordinator_.gatherToRoot(w.part.SerializeAsString());
  absl::Status committed = absl::OkStatus();
  SaveReport report;
  report.step = w.step;
  report.writeSeconds = w.writeSeconds;
  if (rank_ == 0) {
    std::vector<Manifest> manifests(parts.size());
    for (size_t r = 0; r < parts.size(); ++r)
      if (!manifests[r].ParseFromString(parts[r]))
        committed = absl::InternalError(
            absl::StrCat("the shard list of rank ", r, " does not parse"));
    Manifest base = base_;
    base.set_step(w.step);
    if (w.lossScale) {
      LossScaleInfo *ls = base.mutable_loss_scale();
      ls->set_scale(w.lossScale->scale);
      ls->set_good_steps(w.lossScale->goodSteps);
      ls->set_updates(w.lossScale->updates);
    }
    base.set_world_size(coordinator_.size());
    base.set_created_unix(static_cast<double>(std::time(nullptr)));
    absl::StatusOr<Manifest> merged =
        committed.ok() ? mergeManifests(base, manifests)
                       : absl::StatusOr<Manifest>(committed);
    if (!merged.ok()) {
      committed = merged.status();
    } else {
      for (const ShardFile &f : merged->files())
        report.bytes += f.bytes();
      absl::StatusOr<std::string> dir =
          commitCheckpoint(options_.dir, w.step, *merged);
      committed = dir.status();
      if (dir.ok()) {
        report.dir = *dir;
        pruneCheckpoints(options_.dir, options_.keep);
      }
    }
    if (!committed.ok())
      removePartialDir(options_.dir, w.step);
  }
  if (coordinator_.minAll(committed.ok() ? 1 : -1) < 0) {
    if (rank_ == 0)
      return absl::Status(committed.code(),
                          absl::StrCat("checkpoint step ", w.step,
                                       " not saved (the previous checkpoint "
                                       "is kept): ",
                                       committed.message()));
    return absl::AbortedError(absl::StrCat(
        "checkpoint step ", w.step, " not saved; rank 0 reports why"));
  }
  report.totalSeconds = secondsSince(w.start);
  report.stallSeconds = w.stallSeconds;
  reports_.push_back(report);
  return absl::OkStatus();
}

absl::Status Saver::failEverywhere(const absl::Status &local, int64_t step) {
  std::vector<std::string> messages = coordinator_.gatherToRoot(
      local.ok() ? std::string() : std::string(local.message()));
  std::string combined;
  if (rank_ == 0) {
    removePartialDir(options_.dir, step);
    for (size_t r = 0; r < messages.size(); ++r)
      if (!messages[r].empty())
        absl::StrAppend(&combined, combined.empty() ? "" : "; ",
                        messages.size() > 1 ? absl::StrCat("rank ", r, ": ")
                                            : "",
                        messages[r]);
  }
  // Rank 0 has removed the partial directory before anyone reports.
  coordinator_.minAll(1);
  if (rank_ != 0)
    return absl::AbortedError(absl::StrCat(
        "checkpoint step ", step, " not saved; rank 0 reports why"));
  absl::StatusCode code =
      local.ok() ? absl::StatusCode::kInternal : local.code();
  return absl::Status(code, absl::StrCat("checkpoint step ", step,
                                         " not saved (the previous "
                                         "checkpoint is kept): ",
                                         combined));
}

std::vector<SaveReport> Saver::takeReports() {
  std::vector<SaveReport> out;
  out.swap(reports_);
  return out;
}

} // namespace cleave::checkpoint
