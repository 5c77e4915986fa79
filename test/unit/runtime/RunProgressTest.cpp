//===- RunProgressTest.cpp - The time left on `cleave run`'s step lines ---===//
//
// formatEta: tenths under ten seconds (a CPU step of a few milliseconds
// leaves less than a second), whole seconds under a minute, then m:ss and
// h:mm:ss as a long GPU run needs.
//
//===----------------------------------------------------------------------===//

#include "cleave/runtime/launcher/RunPlan.h"

#include <gtest/gtest.h>

namespace cleave::launcher {
namespace {

TEST(RunProgressTest, EtaIsReadableAtEveryScale) {
  EXPECT_EQ(formatEta(0.04), "0.0 s");
  EXPECT_EQ(formatEta(0.26), "0.3 s");
  EXPECT_EQ(formatEta(9.94), "9.9 s");
  EXPECT_EQ(formatEta(42.4), "42 s");
  EXPECT_EQ(formatEta(187), "3:07");
  EXPECT_EQ(formatEta(3723), "1:02:03");
  EXPECT_EQ(formatEta(-1), "0.0 s"); // a clock that stepped back
}

} // namespace
} // namespace cleave::launcher
