//===- BlasKernelsTest.cpp - The choice of OpenBLAS kernels ---------------===//
//
// Which core types are worth timing on a CPU, which one is kept, and the
// cache that carries the choice from `cleave profile` to the workers
// (BlasKernels.h). The timing and re-execution themselves are tested end
// to end in test/Runtime/blas-kernels.test.
//
//===----------------------------------------------------------------------===//

#include "cleave/runtime/kernels/BlasKernels.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <unistd.h>

using namespace cleave::kernels;

namespace {

TEST(BlasKernels, CandidatesAreWhatTheInstructionSetRuns) {
  EXPECT_TRUE(candidateCoreTypes("").empty());
  EXPECT_TRUE(candidateCoreTypes("fpu sse2 avx").empty());
  using V = std::vector<std::string>;
  EXPECT_EQ(candidateCoreTypes("fpu avx avx2 fma"), V({"Haswell"}));
  EXPECT_EQ(candidateCoreTypes("avx2 fma sse4a"), V({"Haswell", "Zen"}));
  std::string skylake = "avx2 fma avx512f avx512bw avx512dq avx512vl avx512cd";
  EXPECT_EQ(candidateCoreTypes(skylake), V({"Haswell", "SkylakeX"}));
  // A flag that is a prefix of another is not mistaken for it.
  EXPECT_EQ(candidateCoreTypes(skylake + " avx512_bf16x"),
            V({"Haswell", "SkylakeX"}));
  EXPECT_EQ(candidateCoreTypes(skylake + " sse4a avx512_bf16"),
            V({"Haswell", "Zen", "SkylakeX", "Cooperlake"}));
}

TEST(BlasKernels, TheFastestIsKeptOnlyBeyondTheMargin) {
  std::vector<CoreTypeRate> rates = {{"Cooperlake", 100}, {"Haswell", 101.5}};
  EXPECT_EQ(chooseCoreType(rates, "Cooperlake"), "Cooperlake");
  rates.push_back({"Zen", 104});
  EXPECT_EQ(chooseCoreType(rates, "Cooperlake"), "Zen");
  EXPECT_EQ(chooseCoreType(rates, "Cooperlake", 0.05), "Cooperlake");
  // A default that did not run, or nothing measured: the default.
  EXPECT_EQ(chooseCoreType({{"Haswell", 104}}, "Cooperlake"), "Cooperlake");
  EXPECT_EQ(chooseCoreType({}, "Cooperlake"), "Cooperlake");
  // A failed candidate (zero) is never chosen.
  EXPECT_EQ(chooseCoreType({{"Cooperlake", 100}, {"SkylakeX", 0}},
                           "Cooperlake"),
            "Cooperlake");
}

class BlasChoiceCache : public ::testing::Test {
protected:
  void SetUp() override {
    char pattern[] = "/tmp/cleave-blas-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir = pattern;
  }
  void TearDown() override {
    std::string cmd = "rm -rf '" + dir + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
  }
  std::string dir;
};

TEST_F(BlasChoiceCache, ChoicesAreKeptPerMachineKey) {
  std::string path = dir + "/nested/openblas-kernels";
  EXPECT_FALSE(readChoice(path, "cpu A | build 1"));
  ASSERT_TRUE(writeChoice(path, "cpu A | build 1", "Haswell"));
  ASSERT_TRUE(writeChoice(path, "cpu B\twith tab | build 1", "Zen"));
  EXPECT_EQ(readChoice(path, "cpu A | build 1"), std::string("Haswell"));
  EXPECT_EQ(readChoice(path, "cpu B\twith tab | build 1"), std::string("Zen"));
  EXPECT_FALSE(readChoice(path, "cpu A | build 2"));
  // A new choice for a key replaces the old one and keeps the others.
  ASSERT_TRUE(writeChoice(path, "cpu A | build 1", "SkylakeX"));
  EXPECT_EQ(readChoice(path, "cpu A | build 1"), std::string("SkylakeX"));
  EXPECT_EQ(readChoice(path, "cpu B\twith tab | build 1"), std::string("Zen"));
  // No temporary file is left behind.
  std::ifstream temporary(path + ".tmp." + std::to_string(getpid()));
  EXPECT_FALSE(temporary.good());
  // Nothing to store, or nowhere to store it.
  EXPECT_FALSE(writeChoice(path, "cpu A | build 1", ""));
  EXPECT_FALSE(writeChoice("", "cpu A | build 1", "Haswell"));
  EXPECT_FALSE(writeChoice("/proc/cleave-cannot-write/openblas-kernels",
                           "cpu A | build 1", "Haswell"));
}

TEST_F(BlasChoiceCache, ThePathFollowsTheEnvironment) {
  auto keep = [](const char *name) {
    const char *v = std::getenv(name);
    return std::pair<std::string, bool>(v ? v : "", v != nullptr);
  };
  auto restore = [](const char *name, const std::pair<std::string, bool> &v) {
    if (v.second)
      setenv(name, v.first.c_str(), 1);
    else
      unsetenv(name);
  };
  auto cache = keep("CLEAVE_CACHE_DIR"), xdg = keep("XDG_CACHE_HOME"),
       home = keep("HOME");
  setenv("CLEAVE_CACHE_DIR", "/c", 1);
  setenv("XDG_CACHE_HOME", "/x", 1);
  setenv("HOME", "/h", 1);
  EXPECT_EQ(choiceCachePath(), "/c/openblas-kernels");
  unsetenv("CLEAVE_CACHE_DIR");
  EXPECT_EQ(choiceCachePath(), "/x/cleave/openblas-kernels");
  unsetenv("XDG_CACHE_HOME");
  EXPECT_EQ(choiceCachePath(), "/h/.cache/cleave/openblas-kernels");
  unsetenv("HOME");
  EXPECT_EQ(choiceCachePath(), "");
  restore("CLEAVE_CACHE_DIR", cache);
  restore("XDG_CACHE_HOME", xdg);
  restore("HOME", home);
}

TEST(BlasKernels, TheKeyDoesNotNameTheLoadedKernels) {
  // Adopting a choice changes the kernels OpenBLAS loads and names in its
  // configuration; the key must stay the one the choice was stored under.
  std::string core = openBlasCoreName();
  if (core.empty())
    GTEST_SKIP() << "the BLAS is not OpenBLAS";
  EXPECT_NE(openBlasConfig().find(core), std::string::npos);
  EXPECT_EQ(choiceKey().find(" " + core + " "), std::string::npos)
      << choiceKey();
  EXPECT_GT(probeGemmRate(0.05), 0);
}

} // namespace
