//===- CheckpointTest.cpp - Save, resume and reshard an executor's state ===//

#include "MlpPlan.h"

#include "cleave/runtime/checkpoint/Blocks.h"
#include "cleave/runtime/checkpoint/Directory.h"
#include "cleave/runtime/checkpoint/Files.h"
#include "cleave/runtime/checkpoint/Restore.h"
#include "cleave/runtime/checkpoint/Saver.h"
#include "cleave/runtime/checkpoint/Weights.h"
#include "cleave/runtime/comm/Communicator.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <unistd.h>

using namespace cleave;
using namespace cleave::checkpoint;
namespace fs = std::filesystem;

namespace {

std::string freshDir(const std::string &tag) {
  std::string dir = (fs::temp_directory_path() /
                     ("cleave-ckpt-unit-" + tag + "-" +
                      std::to_string(getpid())))
                        .string();
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

comm::MeshInfo meshOf(const plan::Plan &p, int rank) {
  comm::MeshInfo mesh;
  for (const plan::MeshAxis &axis : p.mesh().axes()) {
    mesh.axisNames.push_back(axis.name());
    mesh.axisSizes.push_back(axis.size());
  }
  mesh.coords.assign(p.ranks(rank).coords().begin(),
                     p.ranks(rank).coords().end());
  return mesh;
}

struct LocalRun {
  std::unique_ptr<comm::Communicator> comm;
  std::unique_ptr<executor::Executor> ex;
};

LocalRun start(const plan::Plan &p) {
  LocalRun run;
  run.comm = comm::createLocalCommunicator(meshOf(p, 0));
  auto ex = executor::Executor::create(p, 0, *run.comm);
  EXPECT_TRUE(ex.ok()) << ex.status();
  run.ex = *std::move(ex);
  return run;
}

double step(executor::Executor &ex, int64_t n) {
  auto r = ex.runStep(n);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? r->loss : NAN;
}

/// Every checkpointed tensor's bytes, by key.
std::map<std::string, std::string> state(const plan::Plan &p,
                                         const executor::Executor &ex) {
  std::map<std::string, std::string> out;
  for (const Block &b : blocksOfRank(p, 0))
    out[b.key()] = ex.tensorBytes(b.tensorId);
  return out;
}

TEST(Boxes, CopyRegionCutsOneBoxOutOfAnother) {
  // A 4x6 tensor of values 0..23; src holds columns [2, 6), dst rows [1, 3).
  Box src{{0, 2}, {4, 4}}, dst{{1, 0}, {2, 6}}, region;
  ASSERT_TRUE(intersect(src, dst, region));
  EXPECT_EQ(region, (Box{{1, 2}, {2, 4}}));
  std::vector<float> s(16), d(12, -1);
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c)
      s[r * 4 + c] = float(r * 6 + c + 2);
  copyRegion(reinterpret_cast<char *>(s.data()), src,
             reinterpret_cast<char *>(d.data()), dst, region, 4);
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 6; ++c)
      EXPECT_EQ(d[r * 6 + c], c < 2 ? -1.0f : float((r + 1) * 6 + c)) << r << c;
  Box far{{0, 0}, {4, 2}};
  EXPECT_FALSE(intersect(far, Box{{0, 2}, {4, 4}}, region));
}

TEST(Blocks, EveryBoxIsWrittenOnceAndReplicasShareTheWork) {
  test::MlpPlanOptions o;
  o.dp = 2;
  o.tp = 2;
  o.optimizer = "adamw";
  plan::Plan p = test::buildMlpPlan(o);
  std::map<std::pair<std::string, std::vector<int64_t>>, int> writers;
  std::vector<int64_t> bytes(p.ranks_size(), 0);
  for (int r = 0; r < p.ranks_size(); ++r)
    for (const Block &b : blocksWrittenBy(p, r)) {
      ++writers[{b.key(), b.box.origin}];
      bytes[r] += b.bytes();
    }
  // Two parameters and two AdamW states each, split in two over tp.
  EXPECT_EQ(writers.size(), 2u * 3u * 2u);
  for (auto &[key, count] : writers)
    EXPECT_EQ(count, 1) << key.first;
  // Both dp replicas write.
  EXPECT_GT(bytes[0] + bytes[1], 0);
  EXPECT_GT(bytes[2] + bytes[3], 0);
}

TEST(Saver, ResumeContinuesBitForBit) {
  for (bool async : {false, true}) {
    test::MlpPlanOptions o;
    o.optimizer = "adamw";
    o.microbatches = 2;
    plan::Plan p = test::buildMlpPlan(o);
    std::string dir = freshDir(async ? "async" : "sync");
    // Uninterrupted: five steps.
    LocalRun straight = start(p);
    std::vector<double> losses;
    for (int s = 1; s <= 5; ++s)
      losses.push_back(step(*straight.ex, s));
    // Three steps, a save, a fresh executor resumed for two.
    LocalRun first = start(p);
    for (int s = 1; s <= 3; ++s)
      step(*first.ex, s);
    SingleRankCoordinator coord;
    SaveOptions options;
    options.dir = dir;
    options.async = async;
    {
      Saver saver(p, 0, coord, options, Manifest());
      ASSERT_TRUE(first.ex->finishSteps().ok());
      ASSERT_TRUE(saver.save(3, *first.ex).ok());
      // Training goes on while an asynchronous save is written.
      step(*first.ex, 4);
      ASSERT_TRUE(saver.poll(/*wait=*/true).ok());
      std::vector<SaveReport> reports = saver.takeReports();
      ASSERT_EQ(reports.size(), 1u);
      EXPECT_EQ(reports[0].step, 3);
      EXPECT_GT(reports[0].bytes, 0);
    }
    absl::StatusOr<Checkpoint> ckpt = openCheckpoint(dir);
    ASSERT_TRUE(ckpt.ok()) << ckpt.status();
    EXPECT_EQ(ckpt->manifest.step(), 3);
    ASSERT_TRUE(checkPlanMatches(*ckpt, p).ok());
    LocalRun resumed = start(p);
    absl::StatusOr<LoadReport> loaded = restoreRank(*ckpt, p, 0, *resumed.ex);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    EXPECT_EQ(step(*resumed.ex, 4), losses[3]);
    EXPECT_EQ(step(*resumed.ex, 5), losses[4]);
    EXPECT_EQ(state(p, *resumed.ex), state(p, *straight.ex));
    fs::remove_all(dir);
  }
}

/// A checkpoint of the MLP after two steps, in `dir`.
Checkpoint savedMlp(const plan::Plan &p, const std::string &dir) {
  LocalRun run = start(p);
  step(*run.ex, 1);
  step(*run.ex, 2);
  SingleRankCoordinator coord;
  SaveOptions options;
  options.dir = dir;
  options.async = false;
  Saver saver(p, 0, coord, options, Manifest());
  EXPECT_TRUE(saver.save(2, *run.ex).ok());
  absl::StatusOr<Checkpoint> ckpt = openCheckpoint(dir);
  EXPECT_TRUE(ckpt.ok()) << ckpt.status();
  return *ckpt;
}

TEST(Restore, ACorruptOrTruncatedShardIsRefusedNamingFileAndTensor) {
  plan::Plan p = test::buildMlpPlan({});
  std::string dir = freshDir("corrupt");
  Checkpoint ckpt = savedMlp(p, dir);
  std::string shard = ckpt.dir + "/" + shardFileName(0);
  {
    std::fstream f(shard, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(5);
    char c = 0x55;
    f.write(&c, 1);
  }
  LocalRun run = start(p);
  absl::StatusOr<LoadReport> loaded = restoreRank(ckpt, p, 0, *run.ex);
  ASSERT_FALSE(loaded.ok());
  EXPECT_TRUE(absl::IsDataLoss(loaded.status())) << loaded.status();
  EXPECT_NE(loaded.status().message().find(shard), std::string::npos);
  EXPECT_NE(loaded.status().message().find("tensor 'w1'"), std::string::npos)
      << loaded.status();
  fs::resize_file(shard, 10);
  loaded = restoreRank(ckpt, p, 0, *run.ex);
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.status().message().find("truncated"), std::string::npos)
      << loaded.status();
  fs::remove(shard);
  loaded = restoreRank(ckpt, p, 0, *run.ex);
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.status().message().find("No such file"), std::string::npos)
      << loaded.status();
  fs::remove_all(dir);
}

TEST(Restore, AnotherModelIsRefusedListingEveryMismatch) {
  plan::Plan p = test::buildMlpPlan({});
  std::string dir = freshDir("other");
  Checkpoint ckpt = savedMlp(p, dir);
  test::MlpPlanOptions wider;
  wider.hidden = 12;
  wider.optimizer = "adamw";
  plan::Plan q = test::buildMlpPlan(wider);
  absl::Status s = checkPlanMatches(ckpt, q);
  ASSERT_FALSE(s.ok());
  std::string m(s.message());
  EXPECT_NE(m.find("manifest.pb"), std::string::npos) << m;
  EXPECT_NE(m.find("'w1' is 6x8 F32 in the checkpoint but 6x12 F32"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("6 mismatch(es)"), std::string::npos) << m;
  // A plan whose optimizer keeps state the checkpoint lacks.
  plan::Plan pipeline = test::buildMlpPipelinePlan({});
  s = checkPlanMatches(ckpt, pipeline);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("tensor 'w1.momentum' (6x8) is not in the "
                             "checkpoint"),
            std::string::npos)
      << s;
  fs::remove_all(dir);
}

TEST(Restore, ReadBoxReshardsAcrossSplits) {
  // A 4x6 tensor saved as two column halves, read back as row halves.
  std::string dir = freshDir("reshard");
  Checkpoint ckpt;
  ckpt.dir = dir;
  Manifest &m = ckpt.manifest;
  TensorInfo &t = *m.add_tensors();
  t.set_name("w");
  t.set_dtype(plan::F32);
  t.add_global_shape(4);
  t.add_global_shape(6);
  std::vector<float> whole(24);
  std::iota(whole.begin(), whole.end(), 0.0f);
  for (int half = 0; half < 2; ++half) {
    std::vector<float> block;
    for (int r = 0; r < 4; ++r)
      for (int c = 0; c < 3; ++c)
        block.push_back(whole[r * 6 + half * 3 + c]);
    std::string name = shardFileName(half);
    absl::StatusOr<OutputFile> out = OutputFile::create(dir + "/" + name);
    ASSERT_TRUE(out.ok());
    ASSERT_TRUE(out->append(block.data(), 48, "w").ok());
    ASSERT_TRUE(out->sync().ok());
    ShardFile &f = *m.add_files();
    f.set_path(name);
    f.set_bytes(48);
    ShardEntry &e = *m.add_entries();
    e.set_tensor(0);
    e.set_file(half);
    e.set_bytes(48);
    e.add_origin(0);
    e.add_origin(half * 3);
    e.add_extent(4);
    e.add_extent(3);
    e.set_xxh3(hashBytes(block.data(), 48));
  }
  ASSERT_TRUE(validateManifest(m).ok()) << validateManifest(m);
  for (int half = 0; half < 2; ++half) {
    Box rows{{half * 2, 0}, {2, 6}};
    std::vector<float> got(12);
    int64_t read = 0;
    ASSERT_TRUE(readBox(ckpt, 0, rows, reinterpret_cast<char *>(got.data()),
                        &read)
                    .ok());
    EXPECT_EQ(read, 96);
    EXPECT_EQ(got, std::vector<float>(whole.begin() + half * 12,
                                      whole.begin() + half * 12 + 12));
  }
  // A manifest whose entries leave a hole is refused.
  m.mutable_entries()->RemoveLast();
  EXPECT_FALSE(validateManifest(m).ok());
  fs::remove_all(dir);
}

TEST(Manifest, HeaderAndChecksumAreChecked) {
  Manifest m;
  m.set_step(9);
  std::string bytes = serializeManifest(m);
  absl::StatusOr<Manifest> back = parseManifest(bytes, "m.pb");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->step(), 9);
  std::string corrupt = bytes;
  corrupt.back() ^= 0x1;
  EXPECT_TRUE(absl::IsDataLoss(parseManifest(corrupt, "m.pb").status()));
  EXPECT_FALSE(parseManifest("hello", "m.pb").ok());
  std::string version = bytes;
  version[8] = 7;
  absl::Status s = parseManifest(version, "m.pb").status();
  EXPECT_NE(s.message().find("version 7"), std::string::npos) << s;
}

TEST(Weights, MissingExtraAndMisShapedTensorsAreNamedInOneError) {
  plan::Plan p = test::buildMlpPlan({});
  std::string dir = freshDir("weights");
  std::vector<float> w1(6 * 8, 0.25f), bogus(3, 1.0f);
  std::vector<SafeTensorOut> tensors = {
      {"w1", {8, 6}, [&]() -> absl::StatusOr<std::vector<float>> { return w1; }},
      {"extra", {3}, [&]() -> absl::StatusOr<std::vector<float>> { return bogus; }}};
  ASSERT_TRUE(writeSafeTensors(dir + "/w.safetensors", tensors, {}).ok());
  absl::StatusOr<SafeTensorsReader> r =
      SafeTensorsReader::open(dir + "/w.safetensors");
  ASSERT_TRUE(r.ok());
  absl::Status s = checkWeightsMatch(*r, p);
  ASSERT_FALSE(s.ok());
  std::string m(s.message());
  EXPECT_NE(m.find("1 missing: 'w2' (8x5)"), std::string::npos) << m;
  EXPECT_NE(m.find("'w1' is 8x6, the model's 6x8"), std::string::npos) << m;
  EXPECT_NE(m.find("not parameters of the model: 'extra'"), std::string::npos)
      << m;
  // Fitting weights load as given.
  std::vector<float> w2(8 * 5);
  std::iota(w2.begin(), w2.end(), 0.0f);
  tensors = {
      {"w1", {6, 8}, [&]() -> absl::StatusOr<std::vector<float>> { return w1; }},
      {"w2", {8, 5}, [&]() -> absl::StatusOr<std::vector<float>> { return w2; }}};
  ASSERT_TRUE(writeSafeTensors(dir + "/ok.safetensors", tensors, {}).ok());
  r = SafeTensorsReader::open(dir + "/ok.safetensors");
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(checkWeightsMatch(*r, p).ok());
  LocalRun run = start(p);
  ASSERT_TRUE(loadWeightsIntoRank(*r, p, 0, *run.ex).ok());
  EXPECT_EQ(run.ex->tensorValues(test::kW2), w2);
  fs::remove_all(dir);
}

} // namespace
