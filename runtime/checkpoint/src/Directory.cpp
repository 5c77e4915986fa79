//===- Directory.cpp - A checkpoint directory and its atomic updates -------===//

#include "cleave/runtime/checkpoint/Directory.h"

#include "cleave/runtime/checkpoint/Files.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <sys/stat.h>

namespace fs = std::filesystem;

namespace cleave::checkpoint {

namespace {

constexpr const char *kPartialSuffix = ".partial";
constexpr const char *kLatest = "latest";

/// The step of a directory named step-N (-1 otherwise).
int64_t stepOfName(const std::string &name) {
  if (name.size() <= 5 || name.compare(0, 5, "step-") != 0)
    return -1;
  int64_t step = 0;
  for (size_t i = 5; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9')
      return -1;
    step = step * 10 + (name[i] - '0');
  }
  return step;
}

bool isFile(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool isDirectory(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ' ||
                           text.back() == '\r'))
    text.pop_back();
  return text;
}

} // namespace

std::string stepDirName(int64_t step) {
  return absl::StrFormat("step-%08d", step);
}

std::string shardFileName(int rank) {
  return absl::StrFormat("rank-%05d.shard", rank);
}

absl::StatusOr<std::string> preparePartialDir(const std::string &root,
                                              int64_t step) {
  std::error_code ec;
  if (fs::exists(root, ec) && !fs::is_directory(root, ec))
    return absl::FailedPreconditionError(absl::StrCat(
        root, ": exists and is not a directory (--save needs a directory)"));
  fs::create_directories(root, ec);
  if (ec)
    return absl::PermissionDeniedError(absl::StrCat(
        root, ": cannot create the checkpoint directory: ", ec.message()));
  std::string partial = root + "/" + stepDirName(step) + kPartialSuffix;
  fs::remove_all(partial, ec);
  if (ec)
    return absl::PermissionDeniedError(absl::StrCat(
        partial, ": cannot remove what an earlier save left: ", ec.message()));
  fs::create_directory(partial, ec);
  if (ec)
    return absl::PermissionDeniedError(
        absl::StrCat(partial, ": cannot create: ", ec.message()));
  return partial;
}

absl::StatusOr<std::string> commitCheckpoint(const std::string &root,
                                             int64_t step,
                                             const Manifest &manifest) {
  std::string name = stepDirName(step);
  std::string partial = root + "/" + name + kPartialSuffix;
  std::string final = root + "/" + name;
  // Shard files were fsync'd by their writers; the manifest last.
  if (absl::Status s = replaceFileAtomically(
          partial + "/" + kManifestName, serializeManifest(manifest));
      !s.ok())
    return s;
  if (absl::Status s = syncDirectory(partial); !s.ok())
    return s;
  std::error_code ec;
  if (fs::exists(final, ec)) {
    // A save of a step already saved (a run resumed before it): the old
    // copy goes aside first, so that a crash leaves one of them whole.
    std::string old = final + ".old";
    fs::remove_all(old, ec);
    fs::rename(final, old, ec);
    if (ec)
      return absl::InternalError(absl::StrCat(
          final, ": cannot move the older save of this step aside: ",
          ec.message()));
    fs::rename(partial, final, ec);
    if (ec)
      return absl::InternalError(absl::StrCat(
          partial, ": cannot rename to ", final, ": ", ec.message()));
    fs::remove_all(old, ec);
  } else {
    fs::rename(partial, final, ec);
    if (ec)
      return absl::InternalError(absl::StrCat(
          partial, ": cannot rename to ", final, ": ", ec.message()));
  }
  if (absl::Status s = syncDirectory(root); !s.ok())
    return s;
  if (absl::Status s =
          replaceFileAtomically(root + "/" + kLatest, name + "\n");
      !s.ok())
    return s;
  return final;
}

void removePartialDir(const std::string &root, int64_t step) {
  std::error_code ec;
  fs::remove_all(root + "/" + stepDirName(step) + kPartialSuffix, ec);
}

std::vector<std::pair<int64_t, std::string>>
completeCheckpoints(const std::string &root) {
  std::vector<std::pair<int64_t, std::string>> out;
  std::error_code ec;
  for (const fs::directory_entry &entry : fs::directory_iterator(root, ec)) {
    std::string name = entry.path().filename().string();
    int64_t step = stepOfName(name);
    if (step < 0 || !isFile(entry.path().string() + "/" + kManifestName))
      continue;
    out.emplace_back(step, entry.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

void pruneCheckpoints(const std::string &root, int keep) {
  if (keep <= 0)
    return;
  std::string latest;
  if (absl::StatusOr<std::string> text = readWholeFile(root + "/" + kLatest);
      text.ok())
    latest = trimmed(*text);
  std::vector<std::pair<int64_t, std::string>> all = completeCheckpoints(root);
  int64_t oldestKept = all.size() > size_t(keep)
                           ? all[all.size() - keep].first
                           : (all.empty() ? 0 : all.front().first);
  std::error_code ec;
  for (size_t i = 0; i + keep < all.size(); ++i)
    if (fs::path(all[i].second).filename().string() != latest)
      fs::remove_all(all[i].second, ec);
  // Saves cut before their commit, older than anything kept.
  for (const fs::directory_entry &entry : fs::directory_iterator(root, ec)) {
    std::string name = entry.path().filename().string();
    size_t dot = name.rfind('.');
    if (dot == std::string::npos || name.substr(dot) != kPartialSuffix)
      continue;
    int64_t step = stepOfName(name.substr(0, dot));
    if (step >= 0 && step < oldestKept)
      fs::remove_all(entry.path(), ec);
  }
}

absl::StatusOr<std::string> resolveCheckpoint(const std::string &path) {
  std::string dir = path;
  while (dir.size() > 1 && dir.back() == '/')
    dir.pop_back();
  if (!isDirectory(dir)) {
    if (!fs::exists(dir))
      return absl::NotFoundError(
          absl::StrCat(dir, ": no such checkpoint directory"));
    return absl::InvalidArgumentError(
        absl::StrCat(dir, ": not a checkpoint directory"));
  }
  if (isFile(dir + "/" + kManifestName))
    return dir;
  std::string name = fs::path(dir).filename().string();
  if (name.size() > std::strlen(kPartialSuffix) &&
      name.substr(name.size() - std::strlen(kPartialSuffix)) == kPartialSuffix)
    return absl::FailedPreconditionError(absl::StrCat(
        dir, ": an incomplete save (cut before its manifest was written); "
             "resume from its parent directory, which takes the last complete "
             "checkpoint"));
  if (absl::StatusOr<std::string> text = readWholeFile(dir + "/" + kLatest);
      text.ok()) {
    std::string target = dir + "/" + trimmed(*text);
    if (isFile(target + "/" + kManifestName))
      return target;
  }
  std::vector<std::pair<int64_t, std::string>> all = completeCheckpoints(dir);
  if (all.empty())
    return absl::NotFoundError(absl::StrCat(
        dir, ": no complete checkpoint (no step-* directory with a ",
        kManifestName, ")"));
  return all.back().second;
}

} // namespace cleave::checkpoint
