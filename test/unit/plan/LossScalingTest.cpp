//===- LossScalingTest.cpp - --loss-scale's text form ---------------------===//

#include "cleave/runtime/plan/LossScaling.h"

#include "gtest/gtest.h"

using namespace cleave::plan;

namespace {

TEST(LossScaling, DynamicDefaultsAreGradScalers) {
  absl::StatusOr<LossScaling> s = parseLossScaling("dynamic");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->mode(), LossScaling::DYNAMIC);
  EXPECT_EQ(s->initial_scale(), 65536.0);
  EXPECT_EQ(s->growth_factor(), 2.0);
  EXPECT_EQ(s->backoff_factor(), 0.5);
  EXPECT_EQ(s->growth_interval(), 2000);
  EXPECT_EQ(s->min_scale(), 1.0);
  EXPECT_EQ(lossScalingText(*s),
            "dynamic,init=65536,window=2000,growth=2,backoff=0.5,min=1");
}

TEST(LossScaling, FieldsOverrideAndRoundTrip) {
  absl::StatusOr<LossScaling> s =
      parseLossScaling("dynamic,init=1024,window=5,backoff=0.25,min=2");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->initial_scale(), 1024.0);
  EXPECT_EQ(s->growth_interval(), 5);
  EXPECT_EQ(s->backoff_factor(), 0.25);
  EXPECT_EQ(s->min_scale(), 2.0);
  absl::StatusOr<LossScaling> again = parseLossScaling(lossScalingText(*s));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->SerializeAsString(), s->SerializeAsString());
}

TEST(LossScaling, StaticAndNone) {
  absl::StatusOr<LossScaling> s = parseLossScaling("128");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->mode(), LossScaling::STATIC);
  EXPECT_EQ(s->initial_scale(), 128.0);
  EXPECT_EQ(lossScalingText(*s), "static,init=128");
  absl::StatusOr<LossScaling> n = parseLossScaling("none");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->mode(), LossScaling::NONE);
  EXPECT_EQ(lossScalingText(*n), "none");
}

TEST(LossScaling, BadTextNamesTheField) {
  auto message = [](const char *text) {
    absl::StatusOr<LossScaling> s = parseLossScaling(text);
    EXPECT_FALSE(s.ok()) << text;
    return s.ok() ? std::string() : std::string(s.status().message());
  };
  EXPECT_NE(message("sometimes").find("'sometimes' is not none"),
            std::string::npos);
  EXPECT_NE(message("dynamic,speed=2").find("unknown field 'speed'"),
            std::string::npos);
  EXPECT_NE(message("dynamic,init=0").find("init=0"), std::string::npos);
  EXPECT_NE(message("dynamic,window=1.5").find("window=1.5"),
            std::string::npos);
  EXPECT_NE(message("dynamic,backoff=2").find("backoff=2"), std::string::npos);
  EXPECT_NE(message("static,window=3").find("dynamic scaling only"),
            std::string::npos);
  EXPECT_NE(message("dynamic,init").find("NAME=NUMBER"), std::string::npos);
  EXPECT_NE(message("none,init=2").find("takes no fields"), std::string::npos);
}

} // namespace
