//===- Restore.cpp - Load a checkpoint into any plan of its model ----------===//

#include "cleave/runtime/checkpoint/Restore.h"

#include "cleave/runtime/checkpoint/Directory.h"
#include "cleave/runtime/checkpoint/Files.h"
#include "cleave/runtime/comm/Bfloat16.h"
#include "cleave/runtime/comm/Float16.h"
#include "cleave/runtime/plan/PlanIO.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include <chrono>
#include <cstring>
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

/// Where a plan block's values come from: the checkpoint's tensor of the
/// same key and dtype, or, across precisions, what stands for it. A plan
/// whose 16-bit (bf16, fp16) parameters keep fp32 master weights (ZeRO
/// under mixed precision) and one with fp32 parameters load each other's
/// checkpoints: an fp32 parameter reads the master weights (exact), a
/// master block reads the fp32 parameter, a 16-bit parameter the fp32 one
/// rounded; only where no fp32 copy was saved is a 16-bit parameter
/// widened (or rounded from the other 16-bit type).
struct Source {
  int tensor = -1;
  plan::DType from = plan::F32;
};

bool isFloatStorage(plan::DType t) {
  return t == plan::F32 || t == plan::BF16 || t == plan::F16;
}

Source sourceOf(const Block &b, const Manifest &m,
                const std::map<std::string, int> &index) {
  auto find = [&](const std::string &key) {
    auto it = index.find(key);
    return it == index.end() ? -1 : it->second;
  };
  auto dtype = [&](int i) { return static_cast<plan::DType>(m.tensors(i).dtype()); };
  int same = find(b.key());
  if (same >= 0 && dtype(same) == b.dtype)
    return {same, b.dtype};
  bool param = b.state.empty(), master = b.state == "master";
  if (!param && !master)
    return {same, same >= 0 ? dtype(same) : b.dtype};
  int fp32 = -1, half = -1;
  for (int i : {find(b.name + ".master"), find(b.name)}) {
    if (i >= 0 && dtype(i) == plan::F32 && fp32 < 0)
      fp32 = i;
    if (i >= 0 && (dtype(i) == plan::BF16 || dtype(i) == plan::F16) &&
        half < 0)
      half = i;
  }
  if (isFloatStorage(b.dtype) && fp32 >= 0)
    return {fp32, plan::F32};
  if (isFloatStorage(b.dtype) && half >= 0)
    return {half, dtype(half)};
  return {same, same >= 0 ? dtype(same) : b.dtype};
}

/// Converts `n` values of `from` in `src` into `to` in `dst`.
void convert(const char *src, plan::DType from, char *dst, plan::DType to,
             int64_t n) {
  std::vector<float> values(static_cast<size_t>(n));
  const uint16_t *halves = reinterpret_cast<const uint16_t *>(src);
  if (from == plan::BF16)
    comm::bf16ToFloats(halves, values.data(), n);
  else if (from == plan::F16)
    comm::f16ToFloats(halves, values.data(), n);
  else
    std::memcpy(values.data(), src, static_cast<size_t>(n) * 4);
  uint16_t *out = reinterpret_cast<uint16_t *>(dst);
  if (to == plan::BF16)
    comm::floatsToBf16(values.data(), out, n);
  else if (to == plan::F16)
    comm::floatsToF16(values.data(), out, n);
  else
    std::memcpy(dst, values.data(), static_cast<size_t>(n) * 4);
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
  std::set<std::string> needed, planParams, used;
  for (int r = 0; r < plan.ranks_size(); ++r)
    for (const Block &b : blocksOfRank(plan, r)) {
      if (!needed.insert(b.key()).second)
        continue;
      if (b.state.empty())
        planParams.insert(b.name);
      Source src = sourceOf(b, m, index);
      if (src.tensor < 0) {
        problems.push_back(absl::StrCat(
            "tensor '", b.key(), "' (", shapeText(b.globalShape),
            ") is not in the checkpoint"));
        continue;
      }
      const TensorInfo &t = m.tensors(src.tensor);
      used.insert(tensorKey(t));
      bool converts =
          (b.state.empty() || b.state == "master") &&
          isFloatStorage(static_cast<plan::DType>(t.dtype())) &&
          isFloatStorage(b.dtype);
      std::vector<int64_t> shape(t.global_shape().begin(),
                                 t.global_shape().end());
      if (shape != b.globalShape || (t.dtype() != b.dtype && !converts))
        problems.push_back(absl::StrCat(
            "tensor '", b.key(), "' is ", shapeText(shape), " ",
            plan::DType_Name(static_cast<plan::DType>(t.dtype())),
            " in the checkpoint but ", shapeText(b.globalShape), " ",
            plan::DType_Name(b.dtype), " in the plan"));
    }
  std::vector<std::string> dropped;
  for (const TensorInfo &t : m.tensors()) {
    if (needed.count(tensorKey(t)) || used.count(tensorKey(t)))
      continue;
    // Master weights of parameters the plan holds in fp32 are read as
    // those parameters where it needs them; otherwise they are redundant.
    if (t.state() == "master" && planParams.count(t.name()))
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
  std::string converted;
  for (const Block &b : blocksOfRank(plan, rank)) {
    Source src = sourceOf(b, ckpt.manifest, index);
    if (src.tensor < 0)
      return absl::NotFoundError(absl::StrCat(
          ckpt.dir, ": tensor '", b.key(), "' is not in the checkpoint"));
    int64_t n = b.box.numElements();
    buffer.assign(static_cast<size_t>(n * plan::dtypeBytes(src.from)), '\0');
    if (absl::Status s =
            readBox(ckpt, src.tensor, b.box, buffer.data(), &report.bytesRead);
        !s.ok())
      return s;
    if (src.from != b.dtype) {
      converted.assign(static_cast<size_t>(b.bytes()), '\0');
      convert(buffer.data(), src.from, converted.data(), b.dtype, n);
      buffer.swap(converted);
    }
    executor.writeTensorBytes(b.tensorId, buffer.data(), b.bytes());
  }
  // Loss scaling goes on where it was; a checkpoint of a run that scaled
  // no loss applied an update every step.
  executor::LossScaleState scaling = executor.lossScaleState();
  scaling.updates = ckpt.manifest.step();
  if (ckpt.manifest.has_loss_scale()) {
    const LossScaleInfo &ls = ckpt.manifest.loss_scale();
    scaling.updates = ls.updates();
    if (executor.scalesLoss()) {
      scaling.scale = ls.scale();
      scaling.goodSteps = ls.good_steps();
    }
  }
  executor.setLossScaleState(scaling);
  report.seconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - start)
                       .count();
  return report;
}

} // namespace cleave::checkpoint
