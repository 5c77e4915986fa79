//===- FilesTest.cpp - Durable writes, the directory protocol, safetensors ===//

#include "cleave/runtime/checkpoint/Directory.h"
#include "cleave/runtime/checkpoint/Files.h"
#include "cleave/runtime/checkpoint/SafeTensors.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace cleave::checkpoint;
namespace fs = std::filesystem;

namespace {

std::string freshDir(const std::string &tag) {
  std::string dir = (fs::temp_directory_path() /
                     ("cleave-ckpt-test-" + tag + "-" +
                      std::to_string(getpid())))
                        .string();
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void touch(const std::string &path, const std::string &text = "x") {
  std::ofstream(path) << text;
}

TEST(Files, AFullDiskIsAnErrorNamingTheFileAndTensor) {
  // /dev/full accepts the open and fails every write with ENOSPC.
  absl::StatusOr<OutputFile> out = OutputFile::create("/dev/full");
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<char> data(1 << 16, 1);
  absl::Status s = out->append(data.data(), data.size(), "tensor 'wte'");
  // The kernel may buffer a write to /dev/full until the sync.
  if (s.ok())
    s = out->sync();
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(absl::IsResourceExhausted(s)) << s;
  EXPECT_NE(s.message().find("/dev/full"), std::string::npos) << s;
  EXPECT_NE(s.message().find("No space left on device"), std::string::npos)
      << s;
}

TEST(Files, AnUnwritableDirectoryIsAnError) {
  absl::StatusOr<std::string> dir = preparePartialDir("/proc/cleave-ckpt", 3);
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.status().message().find("/proc/cleave-ckpt"),
            std::string::npos)
      << dir.status();
}

TEST(Files, ReadAtNamesATruncatedFile) {
  std::string dir = freshDir("trunc");
  touch(dir + "/f", "abc");
  char buf[8];
  absl::Status s = readAt(dir + "/f", 0, 8, buf, "tensor 'x'");
  ASSERT_TRUE(absl::IsDataLoss(s)) << s;
  EXPECT_NE(s.message().find("tensor 'x'"), std::string::npos) << s;
  fs::remove_all(dir);
}

TEST(Directory, APartialSaveIsNeverTakenForComplete) {
  std::string root = freshDir("partial");
  Manifest m;
  ASSERT_TRUE(preparePartialDir(root, 2).ok());
  absl::StatusOr<std::string> done = commitCheckpoint(root, 2, m);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(*done, root + "/step-00000002");
  // A save of step 4 cut before its manifest: latest stays on step 2.
  absl::StatusOr<std::string> partial = preparePartialDir(root, 4);
  ASSERT_TRUE(partial.ok());
  touch(*partial + "/rank-00000.shard");
  absl::StatusOr<std::string> resolved = resolveCheckpoint(root);
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_EQ(*resolved, root + "/step-00000002");
  // Asked for by name, it is refused.
  absl::StatusOr<std::string> direct = resolveCheckpoint(*partial);
  EXPECT_FALSE(direct.ok());
  // Without `latest` (a crash between the rename and the pointer), the
  // newest complete step is taken.
  ASSERT_TRUE(preparePartialDir(root, 6).ok());
  ASSERT_TRUE(commitCheckpoint(root, 6, m).ok());
  fs::remove(root + "/latest");
  resolved = resolveCheckpoint(root);
  ASSERT_TRUE(resolved.ok());
  EXPECT_EQ(*resolved, root + "/step-00000006");
  fs::remove_all(root);
}

TEST(Directory, NoCheckpointIsAClearError) {
  std::string root = freshDir("empty");
  absl::StatusOr<std::string> resolved = resolveCheckpoint(root);
  ASSERT_FALSE(resolved.ok());
  EXPECT_NE(resolved.status().message().find("no complete checkpoint"),
            std::string::npos);
  EXPECT_FALSE(resolveCheckpoint(root + "/missing").ok());
  fs::remove_all(root);
}

TEST(Directory, PruneKeepsTheNewestAndLatest) {
  std::string root = freshDir("prune");
  Manifest m;
  for (int64_t step : {1, 2, 3, 4}) {
    ASSERT_TRUE(preparePartialDir(root, step).ok());
    ASSERT_TRUE(commitCheckpoint(root, step, m).ok());
  }
  // A stale partial save of an old step goes too.
  ASSERT_TRUE(preparePartialDir(root, 0).ok());
  pruneCheckpoints(root, 2);
  std::vector<int64_t> kept;
  for (auto &[step, dir] : completeCheckpoints(root))
    kept.push_back(step);
  EXPECT_EQ(kept, (std::vector<int64_t>{3, 4}));
  EXPECT_FALSE(fs::exists(root + "/step-00000000.partial"));
  fs::remove_all(root);
}

TEST(Directory, ResavingAStepReplacesIt) {
  std::string root = freshDir("resave");
  Manifest m;
  m.set_step(5);
  ASSERT_TRUE(preparePartialDir(root, 5).ok());
  ASSERT_TRUE(commitCheckpoint(root, 5, m).ok());
  m.set_plan_knobs("second");
  ASSERT_TRUE(preparePartialDir(root, 5).ok());
  ASSERT_TRUE(commitCheckpoint(root, 5, m).ok());
  absl::StatusOr<Manifest> read =
      readManifestFile(root + "/step-00000005/manifest.pb");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->plan_knobs(), "second");
  EXPECT_FALSE(fs::exists(root + "/step-00000005.old"));
  fs::remove_all(root);
}

TEST(SafeTensors, RoundTripsAndConvertsHalfPrecision) {
  std::string dir = freshDir("st");
  std::string path = dir + "/w.safetensors";
  std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {-0.5f};
  std::vector<SafeTensorOut> tensors = {
      {"layer.b", {1}, [&]() -> absl::StatusOr<std::vector<float>> { return b; }},
      {"layer.a", {2, 3}, [&]() -> absl::StatusOr<std::vector<float>> { return a; }}};
  ASSERT_TRUE(writeSafeTensors(path, tensors, {{"step", "7"}}).ok());
  absl::StatusOr<SafeTensorsReader> r = SafeTensorsReader::open(path);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->tensors().size(), 2u);
  EXPECT_EQ(r->metadata().at("step"), "7");
  const SafeTensorInfo *t = r->find("layer.a");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ((t->begin - 8) % 8, 0);
  absl::StatusOr<std::vector<float>> values = r->readF32(*t);
  ASSERT_TRUE(values.ok());
  EXPECT_EQ(*values, a);

  // An F16 and a BF16 tensor written by hand.
  std::string header =
      R"({"h":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},)"
      R"("g":{"dtype":"BF16","shape":[1],"data_offsets":[4,6]}})";
  std::string file(8, '\0');
  for (int i = 0; i < 8; ++i)
    file[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  file += header;
  // 1.0 and -2.0 in fp16; 1.5 in bf16.
  file += std::string("\x00\x3c\x00\xc0\xc0\x3f", 6);
  std::ofstream(dir + "/h.safetensors", std::ios::binary) << file;
  r = SafeTensorsReader::open(dir + "/h.safetensors");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r->readF32(*r->find("h")), (std::vector<float>{1.0f, -2.0f}));
  EXPECT_EQ(*r->readF32(*r->find("g")), (std::vector<float>{1.5f}));
  fs::remove_all(dir);
}

TEST(SafeTensors, BadFilesAreRefusedByName) {
  std::string dir = freshDir("stbad");
  touch(dir + "/short", "abc");
  EXPECT_FALSE(SafeTensorsReader::open(dir + "/short").ok());
  std::string header = R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})";
  std::string file(8, '\0');
  for (int i = 0; i < 8; ++i)
    file[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  std::ofstream(dir + "/trunc", std::ios::binary) << file + header + "abcd";
  absl::StatusOr<SafeTensorsReader> r = SafeTensorsReader::open(dir + "/trunc");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("tensor 'w'"), std::string::npos)
      << r.status();
  fs::remove_all(dir);
}

} // namespace
