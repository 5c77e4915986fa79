//===- RunDumpsTest.cpp - The comparison behind `cleave run --check` -------===//
//
// compareRuns on hand-written dumps of a one-parameter plan: it must pass
// correct training under every optimizer and still fail on a real
// divergence of a loss, a gradient or a parameter (an injected one here).
// AdamW's rule: an element with reference gradient g may move up to
// lr min(2, tolerance G / |g|) a step beyond the relative error (Adam
// normalises a gradient's rounding into its update); elements with large
// gradients get next to nothing, and under SGD every element is held to
// the tolerance.
//
//===----------------------------------------------------------------------===//

#include "cleave/runtime/launcher/RunDumps.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace cleave::launcher {
namespace {

using ::testing::HasSubstr;

/// One rank holding parameter "w" [4] whole.
plan::Plan onePlan(const std::string &optimizer) {
  plan::Plan p;
  p.mutable_training()->set_optimizer(optimizer);
  p.mutable_training()->set_lr(1e-3);
  plan::ParameterSharding *w = p.add_parameters();
  w->set_name("w");
  w->add_global_shape(4);
  w->add_dims();
  plan::Program *program = p.add_programs();
  plan::TensorDecl *t = program->add_tensors();
  t->set_name("w");
  t->set_kind(plan::TensorDecl::PARAMETER);
  t->set_param_index(0);
  t->add_shape(4);
  plan::RankAssignment *r = p.add_ranks();
  r->set_rank(0);
  r->set_program(0);
  return p;
}

void writeFloats(const std::string &path, std::vector<float> values) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char *>(values.data()),
            values.size() * sizeof(float));
}

struct Dumps {
  explicit Dumps(const std::string &name)
      : dir(::testing::TempDir() + "/rundumps-" + name) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    std::ofstream(lossDumpPath(dir)) << "2.5\n2.25\n";
  }
  void params(std::vector<float> v) {
    writeFloats(parameterDumpPath(dir, "w", 0), std::move(v));
  }
  /// The same gradient at both steps (the file holds one block a step).
  void grads(std::vector<float> v) {
    std::vector<float> both = v;
    both.insert(both.end(), v.begin(), v.end());
    writeFloats(gradientDumpPath(dir, "w", 0), std::move(both));
  }
  std::string dir;
};

// The reference: the key-bias-like element 1 has a gradient that is
// rounding noise (1e-9 against a largest gradient of 1).
const std::vector<float> kRefParams = {0.5f, -0.25f, 0.125f, 1.0f};
const std::vector<float> kRefGrads = {1.0f, 1e-9f, 0.5f, -0.2f};

absl::Status compare(const std::string &optimizer, std::vector<float> params,
                     std::vector<float> grads, std::string *report) {
  std::string name = optimizer + std::to_string(params[0]) +
                     std::to_string(params[1]) + std::to_string(grads[2]);
  Dumps mine("mine" + name), ref("ref" + name);
  ref.params(kRefParams);
  ref.grads(kRefGrads);
  mine.params(std::move(params));
  mine.grads(std::move(grads));
  plan::Plan plan = onePlan(optimizer);
  return compareRuns(plan, mine.dir, plan, ref.dir, 1e-5, report);
}

TEST(CompareRuns, AdamNoiseElementMovesWithinTwoLrPerStep) {
  // Two steps at lr 1e-3: the noise element may differ by up to 4e-3.
  std::vector<float> params = kRefParams;
  params[1] += 3.5e-3f;
  std::string report;
  absl::Status s = compare("adamw", params, kRefGrads, &report);
  ASSERT_TRUE(s.ok()) << s << "\n" << report;
  EXPECT_THAT(report, HasSubstr("rule: AdamW"));
  EXPECT_THAT(report, HasSubstr("1 elements used it"));
  EXPECT_THAT(report, HasSubstr("gradients: 1 compared at every step"));
}

TEST(CompareRuns, AdamStillCatchesADivergence) {
  // An element with a real gradient, 1e-3 off: no slack for it.
  std::vector<float> params = kRefParams;
  params[0] += 1e-3f;
  std::string report;
  absl::Status s = compare("adamw", params, kRefGrads, &report);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("parameter w diverges"));
  EXPECT_THAT(s.message(), HasSubstr("relative error"));

  // The noise element beyond 2 lr per step.
  params = kRefParams;
  params[1] += 5e-3f;
  s = compare("adamw", params, kRefGrads, &report);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("beyond AdamW's allowance"));

  // A gradient off by 0.1 of the largest.
  std::vector<float> grads = kRefGrads;
  grads[2] += 0.1f;
  s = compare("adamw", kRefParams, grads, &report);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(),
              HasSubstr("the gradient of parameter w diverges at step 1"));
}

TEST(CompareRuns, SgdHoldsEveryElementToTheTolerance) {
  std::vector<float> params = kRefParams;
  params[1] += 3.5e-3f;
  std::string report;
  absl::Status s = compare("sgd", params, kRefGrads, &report);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("parameter w diverges"));
  s = compare("sgd", kRefParams, kRefGrads, &report);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_THAT(report, ::testing::Not(HasSubstr("rule: AdamW")));
}

} // namespace
} // namespace cleave::launcher
