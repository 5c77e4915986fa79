//===- InitializationTest.cpp - Deterministic parameters and data ---------===//

#include "cleave/runtime/executor/Initialization.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>

using namespace cleave;
using executor::DataSource;

namespace {

plan::ParameterSharding parameter(plan::InitSpec::Kind kind) {
  plan::ParameterSharding p;
  p.set_name("h.0.mlp.weight");
  p.add_global_shape(6);
  p.add_global_shape(4);
  p.mutable_init()->set_kind(kind);
  p.mutable_init()->set_std(0.02);
  return p;
}

plan::TensorDecl block(int64_t rows, int64_t cols, std::string rowAxis,
                       std::string colAxis) {
  plan::TensorDecl t;
  t.set_name("w");
  t.add_shape(rows);
  t.add_shape(cols);
  t.add_dims();
  t.add_dims();
  if (!rowAxis.empty())
    t.mutable_dims(0)->add_axes(rowAxis);
  if (!colAxis.empty())
    t.mutable_dims(1)->add_axes(colAxis);
  return t;
}

comm::MeshInfo mesh(std::vector<std::string> names, std::vector<int64_t> sizes,
                    std::vector<int64_t> coords) {
  return {std::move(names), std::move(sizes), std::move(coords)};
}

std::vector<float> init(const plan::ParameterSharding &p,
                        const plan::TensorDecl &t, const comm::MeshInfo &m,
                        uint64_t seed = 7) {
  int64_t n = t.shape(0) * t.shape(1);
  std::vector<float> values(n);
  absl::Status s = executor::initializeParameter(p, t, m, seed, values.data());
  EXPECT_TRUE(s.ok()) << s;
  return values;
}

TEST(InitializationTest, ShardedHalvesEqualUnsharded) {
  plan::ParameterSharding p = parameter(plan::InitSpec::NORMAL);
  std::vector<float> whole = init(p, block(6, 4, "", ""), mesh({}, {}, {}));
  double sumSq = 0;
  for (float v : whole)
    sumSq += v * v;
  EXPECT_GT(sumSq, 0);
  EXPECT_LT(std::sqrt(sumSq / 24), 0.05);
  for (int64_t c = 0; c < 2; ++c) {
    // Columns split over tp (the second axis of a dp x tp mesh).
    std::vector<float> cols =
        init(p, block(6, 2, "", "tp"), mesh({"dp", "tp"}, {3, 2}, {1, c}));
    for (int64_t r = 0; r < 6; ++r)
      for (int64_t j = 0; j < 2; ++j)
        EXPECT_EQ(cols[r * 2 + j], whole[r * 4 + c * 2 + j]);
    // Rows split over tp.
    std::vector<float> rows =
        init(p, block(3, 4, "tp", ""), mesh({"tp"}, {2}, {c}));
    for (int64_t i = 0; i < 12; ++i)
      EXPECT_EQ(rows[i], whole[c * 12 + i]);
  }
  // Another seed gives other values.
  EXPECT_NE(init(p, block(6, 4, "", ""), mesh({}, {}, {}), 8), whole);
}

TEST(InitializationTest, TwoAxesOnOneDimAreMajorToMinor) {
  plan::ParameterSharding p = parameter(plan::InitSpec::NORMAL);
  p.set_global_shape(0, 8);
  plan::TensorDecl whole = block(8, 4, "", "");
  std::vector<float> all = init(p, whole, mesh({}, {}, {}));
  plan::TensorDecl t = block(2, 4, "dp", "");
  t.mutable_dims(0)->add_axes("tp");
  // dp coordinate 1, tp coordinate 0 of a 2 x 2 mesh: block 2 of 4.
  std::vector<float> part = init(p, t, mesh({"dp", "tp"}, {2, 2}, {1, 0}));
  for (int64_t i = 0; i < 8; ++i)
    EXPECT_EQ(part[i], all[2 * 8 + i]);
}

TEST(InitializationTest, OnesZerosAndInitialValue) {
  comm::MeshInfo m = mesh({"tp"}, {2}, {1});
  for (float v : init(parameter(plan::InitSpec::ONES), block(6, 2, "", "tp"), m))
    EXPECT_EQ(v, 1.0f);
  for (float v :
       init(parameter(plan::InitSpec::ZEROS), block(6, 2, "", "tp"), m))
    EXPECT_EQ(v, 0.0f);
  plan::ParameterSharding p = parameter(plan::InitSpec::NORMAL);
  std::vector<float> global(24);
  for (int i = 0; i < 24; ++i)
    global[i] = static_cast<float>(i);
  p.set_initial_value(std::string(reinterpret_cast<char *>(global.data()), 96));
  std::vector<float> part = init(p, block(6, 2, "", "tp"), m);
  EXPECT_EQ(part[0], 2.0f);
  EXPECT_EQ(part[1], 3.0f);
  EXPECT_EQ(part[2], 6.0f);
}

TEST(InitializationTest, BlockOutsideParameterIsAnError) {
  plan::ParameterSharding p = parameter(plan::InitSpec::NORMAL);
  std::vector<float> values(16);
  absl::Status s = executor::initializeParameter(
      p, block(4, 4, "tp", ""), mesh({"tp"}, {2}, {1}), 1, values.data());
  EXPECT_FALSE(s.ok());
}

//===----------------------------------------------------------------------===//
// Data

plan::Plan lmPlan(int64_t batch, int64_t seq, int64_t microbatches) {
  plan::Plan p;
  p.mutable_training()->set_global_batch(batch);
  p.mutable_training()->set_seq_len(seq);
  p.mutable_knobs()->set_num_microbatches(microbatches);
  plan::Program *prog = p.add_programs();
  for (const char *name : {"tokens", "labels"}) {
    plan::TensorDecl *t = prog->add_tensors();
    t->set_kind(plan::TensorDecl::INPUT);
    t->set_input_name(name);
    t->set_dtype(plan::I64);
    t->set_vocab(50);
  }
  return p;
}

plan::TensorDecl input(const char *name, int64_t rows, int64_t seq) {
  plan::TensorDecl t;
  t.set_kind(plan::TensorDecl::INPUT);
  t.set_input_name(name);
  t.set_dtype(plan::I64);
  t.set_vocab(50);
  t.add_shape(rows);
  t.add_shape(seq);
  t.set_batch_dim(0);
  t.set_seq_dim(1);
  return t;
}

std::vector<int64_t> fill(const DataSource &source, const plan::TensorDecl &t,
                          int64_t step, int64_t microbatch) {
  std::vector<int64_t> values(t.shape(0) * t.shape(1));
  absl::Status s = source.fill(t, step, microbatch, values.data());
  EXPECT_TRUE(s.ok()) << s;
  return values;
}

TEST(DataTest, LabelsAreNextTokensAndShardsAgree) {
  // 8 sequences of 6 in 2 microbatches; the whole microbatch on one rank
  // against its quarter on dp=2 x cp=2.
  plan::Plan p = lmPlan(8, 6, 2);
  auto whole = DataSource::create(p, mesh({}, {}, {}), 3, "");
  ASSERT_TRUE(whole.ok()) << whole.status();
  std::vector<int64_t> tokens = fill(*whole, input("tokens", 4, 6), 2, 1);
  std::vector<int64_t> labels = fill(*whole, input("labels", 4, 6), 2, 1);
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t i = 0; i + 1 < 6; ++i)
      EXPECT_EQ(labels[r * 6 + i], tokens[r * 6 + i + 1]);
  for (int64_t v : tokens) {
    EXPECT_GE(v, 0);
    EXPECT_LT(v, 50);
  }
  auto part =
      DataSource::create(p, mesh({"dp", "cp"}, {2, 2}, {1, 1}), 3, "");
  ASSERT_TRUE(part.ok());
  std::vector<int64_t> quarter = fill(*part, input("labels", 2, 3), 2, 1);
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t i = 0; i < 3; ++i)
      EXPECT_EQ(quarter[r * 3 + i], labels[(2 + r) * 6 + 3 + i]);
  // Another step, another batch.
  EXPECT_NE(fill(*whole, input("tokens", 4, 6), 3, 1), tokens);
}

// A nanoGPT token file: row r of step k reads the window at
// ((k B + r) seq) mod (len - seq - 1), labels one position later.
TEST(DataTest, TokenFileWindows) {
  std::string path = ::testing::TempDir() + "/cleave-tokens.bin";
  std::vector<uint16_t> file(100);
  for (size_t i = 0; i < file.size(); ++i)
    file[i] = static_cast<uint16_t>(1000 + i);
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char *>(file.data()), file.size() * 2);
  }
  plan::Plan p = lmPlan(8, 6, 2);
  auto source = DataSource::create(p, mesh({"dp"}, {2}, {1}), 3, path);
  ASSERT_TRUE(source.ok()) << source.status();
  // Step 2, microbatch 1, dp rank 1: global rows 6 and 7.
  std::vector<int64_t> tokens = fill(*source, input("tokens", 2, 6), 2, 1);
  std::vector<int64_t> labels = fill(*source, input("labels", 2, 6), 2, 1);
  for (int64_t r = 0; r < 2; ++r) {
    int64_t start = ((1 * 8 + 6 + r) * 6) % (100 - 6 - 1);
    for (int64_t i = 0; i < 6; ++i) {
      EXPECT_EQ(tokens[r * 6 + i], 1000 + start + i);
      EXPECT_EQ(labels[r * 6 + i], 1000 + start + i + 1);
    }
  }
  std::remove(path.c_str());
  EXPECT_FALSE(DataSource::create(p, mesh({}, {}, {}), 3, path).ok());
}

// The compiler may leave seq_dim at -1 (no context parallelism): an integer
// [batch, seq] input still has positions, and labels are the next token.
TEST(DataTest, UndeclaredSequenceDimension) {
  plan::Plan p = lmPlan(4, 6, 1);
  auto source = DataSource::create(p, mesh({}, {}, {}), 3, "");
  ASSERT_TRUE(source.ok());
  plan::TensorDecl tokensDecl = input("tokens", 4, 6);
  plan::TensorDecl labelsDecl = input("labels", 4, 6);
  tokensDecl.set_seq_dim(-1);
  labelsDecl.set_seq_dim(-1);
  std::vector<int64_t> tokens = fill(*source, tokensDecl, 1, 0);
  std::vector<int64_t> labels = fill(*source, labelsDecl, 1, 0);
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t i = 0; i + 1 < 6; ++i)
      EXPECT_EQ(labels[r * 6 + i], tokens[r * 6 + i + 1]);
  EXPECT_EQ(tokens, fill(*source, input("tokens", 4, 6), 1, 0));
}

// --masks padded: each sample keeps a prefix of at least half its
// positions, the lengths differ between samples and steps, and a rank's
// shard (dp x cp) is exactly its part of the whole batch's mask.
TEST(DataTest, PaddedMasksArePrefixesAndShardsAgree) {
  plan::Plan p = lmPlan(8, 16, 2);
  plan::TensorDecl mask = input("attention_mask", 4, 16);
  mask.set_synthesis(plan::TensorDecl::SYNTH_ONES);
  auto ones = DataSource::create(p, mesh({}, {}, {}), 3, "");
  ASSERT_TRUE(ones.ok());
  for (int64_t v : fill(*ones, mask, 1, 0))
    EXPECT_EQ(v, 1);
  auto whole = DataSource::create(p, mesh({}, {}, {}), 3, "", {}, true);
  ASSERT_TRUE(whole.ok());
  std::vector<int64_t> values = fill(*whole, mask, 2, 1);
  std::set<int64_t> lengths;
  for (int64_t r = 0; r < 4; ++r) {
    int64_t length = 0;
    while (length < 16 && values[r * 16 + length] == 1)
      ++length;
    for (int64_t i = length; i < 16; ++i)
      EXPECT_EQ(values[r * 16 + i], 0) << "row " << r << " position " << i;
    EXPECT_GE(length, 8);
    lengths.insert(length);
  }
  EXPECT_GT(lengths.size(), 1u);
  EXPECT_NE(fill(*whole, mask, 3, 1), values);
  auto part = DataSource::create(p, mesh({"dp", "cp"}, {2, 2}, {1, 1}), 3, "",
                                 {}, true);
  ASSERT_TRUE(part.ok());
  plan::TensorDecl quarterDecl = input("attention_mask", 2, 8);
  quarterDecl.set_synthesis(plan::TensorDecl::SYNTH_ONES);
  std::vector<int64_t> quarter = fill(*part, quarterDecl, 2, 1);
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t i = 0; i < 8; ++i)
      EXPECT_EQ(quarter[r * 8 + i], values[(2 + r) * 16 + 8 + i]);
}

TEST(DataTest, WrongRowCountIsAnError) {
  plan::Plan p = lmPlan(8, 6, 2);
  auto source = DataSource::create(p, mesh({}, {}, {}), 3, "");
  ASSERT_TRUE(source.ok());
  std::vector<int64_t> values(8 * 6);
  plan::TensorDecl t = input("tokens", 8, 6);
  EXPECT_FALSE(source->fill(t, 1, 0, values.data()).ok());
}

} // namespace
