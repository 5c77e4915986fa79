//===- Restore.cpp - Load a checkpoint into any plan of its model ----------===//

#include "cleave/runtime/checkpoint/Restore.h"

#include "cleave/runtime/checkpoint/Directory.h"
#include "cleave/runtime/checkpoint/Files.h"
#include "cleave/runtime/plan/PlanIO.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include <chrono>
#include <map>
#include <set>

namespace cleave::checkpoint {

namespace {

std::string shapeText(const std::vector<int64_t> &shape) {
  return shape.empty() ? "scalar" : absl::StrJoin(shape, "x");
}

std::map<std::string, int> tensorIndex(const Manifest &m) {
  std::map<std::string, int> index;
  for (int i = 0; i < m.tensors_size(); ++i)
    index[tensorKey(m.tensors(i))] = i;
  return index;
}

} // namespace

absl::StatusOr<Checkpoint> openCheckpoint(const std::string &path) {
  absl::StatusOr<std::string> dir = resolveCheckpoint(path);
  if (!dir.ok())
    return dir.status();
  absl::StatusOr<Manifest> manifest =
      readManifestFile(*dir + "/" + kManifestName);
  if (!manifest.ok())
    return manifest.status();
  return Checkpoint{*dir, *std::move(manifest)};
}

absl::Status checkPlanMatches(const Checkpoint &ckpt, const plan::Plan &plan,
                              std::vector<std::string> *notes) {
  const Manifest &m = ckpt.manifest;
  std::map<std::string, int> index = tensorIndex(m);
  std::vector<std::string> problems;
  std::set<std::string> needed, planParams;
  for (int r = 0; r < plan.ranks_size(); ++r)
    for (const Block &b : blocksOfRank(plan, r)) {
      if (!needed.insert(b.key()).second)
        continue;
      if (b.state.empty())
        planParams.insert(b.name);
      auto it = index.find(b.key());
      if (it == index.end()) {
        problems.push_back(absl::StrCat(
            "tensor '", b.key(), "' (", shapeText(b.globalShape),
            ") is not in the checkpoint"));
        continue;
      }
      const TensorInfo &t = m.tensors(it->second);
      std::vector<int64_t> shape(t.global_shape().begin(),
                                 t.global_shape().end());
      if (shape != b.globalShape || t.dtype() != b.dtype)
        problems.push_back(absl::StrCat(
            "tensor '", b.key(), "' is ", shapeText(shape), " ",
            plan::DType_Name(static_cast<plan::DType>(t.dtype())),
            " in the checkpoint but ", shapeText(b.globalShape), " ",
            plan::DType_Name(b.dtype), " in the plan"));
    }
  std::vector<std::string> dropped;
  for (const TensorInfo &t : m.tensors()) {
    if (needed.count(tensorKey(t)))
      continue;
    if (t.state().empty())
      problems.push_back(absl::StrCat("tensor '", t.name(),
                                      "' of the checkpoint is not a parameter "
                                      "of the plan"));
    else
      dropped.push_back(tensorKey(t));
  }
  if (notes && !dropped.empty())
    notes->push_back(absl::StrCat(
        "the plan's optimizer (", plan.training().optimizer(),
        ") keeps no state of the checkpoint's ", m.run().optimizer(), ": ",
        dropped.size(), " tensor(s) dropped (", dropped.front(), ", ...)"));
  if (problems.empty())
    return absl::OkStatus();
  size_t total = problems.size();
  if (problems.size() > 20) {
    problems.resize(20);
    problems.push_back(absl::StrCat("... and ", total - 20, " more"));
  }
  std::string model =
      m.model().graph_hash() == plan.model().graph_hash()
          ? ""
          : absl::StrCat(" (the checkpoint is of model '", m.model().name(),
                         "', ", m.model().source(), ", graph ",
                         m.model().graph_hash(), "; the plan of '",
                         plan.model().name(), "', ", plan.model().source(),
                         ", graph ", plan.model().graph_hash(), ")");
  return absl::FailedPreconditionError(absl::StrCat(
      ckpt.dir, "/", kManifestName, ": the checkpoint does not fit the plan",
      model, ": ", total, " mismatch(es):\n  ",
      absl::StrJoin(problems, "\n  ")));
}

absl::Status readBox(const Checkpoint &ckpt, int tensor, const Box &box,
                     char *dst, int64_t *bytesRead) {
  const Manifest &m = ckpt.manifest;
  const TensorInfo &t = m.tensors(tensor);
  int64_t elementBytes = plan::dtypeBytes(static_cast<plan::DType>(t.dtype()));
  int64_t covered = 0;
  std::string data;
  for (const ShardEntry &e : m.entries()) {
    if (e.tensor() != tensor)
      continue;
    Box entryBox{{e.origin().begin(), e.origin().end()},
                 {e.extent().begin(), e.extent().end()}};
    Box region;
    if (!intersect(entryBox, box, region))
      continue;
    const ShardFile &f = m.files(e.file());
    std::string path = ckpt.dir + "/" + f.path();
    std::string what = absl::StrCat("tensor '", tensorKey(t), "' (bytes ",
                                    e.offset(), "-", e.offset() + e.bytes(),
                                    ")");
    data.resize(static_cast<size_t>(e.bytes()));
    if (absl::Status s = readAt(path, e.offset(), e.bytes(), data.data(), what);
        !s.ok())
      return s;
    if (hashBytes(data.data(), e.bytes()) != e.xxh3())
      return absl::DataLossError(absl::StrCat(
          path, ": corrupt shard: ", what,
          " does not match its checksum"));
    if (bytesRead)
      *bytesRead += e.bytes();
    copyRegion(data.data(), entryBox, dst, box, region, elementBytes);
    covered += region.numElements();
  }
  if (covered != box.numElements())
    return absl::DataLossError(absl::StrCat(
        ckpt.dir, ": tensor '", tensorKey(t), "': the shards hold ", covered,
        " of the ", box.numElements(), " elements needed"));
  return absl::OkStatus();
}

absl::StatusOr<LoadReport> restoreRank(const Checkpoint &ckpt,
                                       const plan::Plan &plan, int rank,
                                       executor::Executor &executor) {
  auto start = std::chrono::steady_clock::now();
  std::map<std::string, int> index = tensorIndex(ckpt.manifest);
  LoadReport report;
  report.step = ckpt.manifest.step();
  std::string buffer;
  for (const Block &b : blocksOfRank(plan, rank)) {
    auto it = index.find(b.key());
    if (it == index.end())
      return absl::NotFoundError(absl::StrCat(
          ckpt.dir, ": tensor '", b.key(), "' is not in the checkpoint"));
    buffer.assign(static_cast<size_t>(b.bytes()), '\0');
    if (absl::Status s =
            readBox(ckpt, it->second, b.box, buffer.data(), &report.bytesRead);
        !s.ok())
      return s;
    executor.writeTensorBytes(b.tensorId, buffer.data(), b.bytes());
  }
  report.seconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - start)
                       .count();
  return report;
}

} // namespace cleave::checkpoint
