//===- SubprocessTest.cpp - Child processes and their MPI session dirs ----===//

#include "cleave/runtime/subprocess/Subprocess.h"

#include "gtest/gtest.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

using namespace cleave::subprocess;
namespace fs = std::filesystem;

namespace {

/// Each mpirun gets its own Open MPI session directory under TMPDIR, which
/// goes with everything in it; the child sees it in its environment.
TEST(MpiSessionDirectory, FreshPerLaunchAndRemoved) {
  fs::path base = fs::temp_directory_path() / "cleave-session-test";
  fs::create_directories(base);
  const char *old = std::getenv("TMPDIR");
  std::string saved = old ? old : "";
  setenv("TMPDIR", base.c_str(), 1);

  std::string dir;
  {
    MpiSessionDirectory a, b;
    ASSERT_EQ(a.environment().size(), 1u);
    ASSERT_EQ(b.environment().size(), 1u);
    const std::string prefix = "OMPI_MCA_orte_tmpdir_base=";
    std::string entry = a.environment()[0];
    ASSERT_EQ(entry.rfind(prefix, 0), 0u) << entry;
    dir = entry.substr(prefix.size());
    EXPECT_NE(a.environment()[0], b.environment()[0]);
    EXPECT_EQ(fs::path(dir).parent_path(), base);
    ASSERT_TRUE(fs::is_directory(dir));
    // What Open MPI leaves behind goes too.
    fs::create_directories(fs::path(dir) / "ompi.host.0" / "jf.1");
    std::ofstream(fs::path(dir) / "ompi.host.0" / "contact.txt") << "x";

    auto outcome = runProcess({"sh", "-c", "echo $OMPI_MCA_orte_tmpdir_base"},
                              a.environment(), 10, {});
    ASSERT_TRUE(outcome.ok());
    ASSERT_FALSE(outcome->lastLines.empty());
    EXPECT_EQ(outcome->lastLines.back(), dir);
  }
  EXPECT_FALSE(fs::exists(dir));
  if (old)
    setenv("TMPDIR", saved.c_str(), 1);
  else
    unsetenv("TMPDIR");
  fs::remove_all(base);
}

/// Without a writable TMPDIR, nothing is passed and mpirun keeps its default.
TEST(MpiSessionDirectory, UnwritableBaseFallsBack) {
  const char *old = std::getenv("TMPDIR");
  std::string saved = old ? old : "";
  setenv("TMPDIR", "/nonexistent/cleave", 1);
  {
    MpiSessionDirectory d;
    EXPECT_TRUE(d.environment().empty());
  }
  if (old)
    setenv("TMPDIR", saved.c_str(), 1);
  else
    unsetenv("TMPDIR");
}

} // namespace
