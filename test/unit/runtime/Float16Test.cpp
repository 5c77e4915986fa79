//===- Float16Test.cpp - fp16 rounding on the host ------------------------===//
//
// The conversions fp16 plans store with (widening kernels' operands,
// narrowing their results, the MPI reductions, checkpoints): IEEE binary16,
// round to nearest even, overflow to infinity, subnormals kept, as CUDA's
// __float2half_rn rounds.
//
//===----------------------------------------------------------------------===//

#include "cleave/runtime/comm/Communicator.h"
#include "cleave/runtime/comm/Float16.h"

#include "gtest/gtest.h"

#include <cmath>
#include <limits>
#include <vector>

using namespace cleave::comm;

namespace {

TEST(Float16, ExactValuesRoundTrip) {
  for (float v : {0.0f, 1.0f, -2.5f, 65504.0f, 0x1p-14f, 0x1p-24f})
    EXPECT_EQ(f16ToFloat(floatToF16(v)), v) << v;
  EXPECT_TRUE(std::signbit(f16ToFloat(floatToF16(-0.0f))));
  // The bit patterns of a few values (IEEE binary16).
  EXPECT_EQ(floatToF16(1.0f), 0x3c00);
  EXPECT_EQ(floatToF16(-2.0f), 0xc000);
  EXPECT_EQ(floatToF16(65504.0f), 0x7bff);
  EXPECT_EQ(floatToF16(0x1p-24f), 0x0001); // the smallest subnormal
}

TEST(Float16, RoundsToNearestTiesToEven) {
  // 1 + 2^-11 lies halfway between 1 and 1 + 2^-10: to the even 1.
  EXPECT_EQ(f16ToFloat(floatToF16(1.0f + 0x1p-11f)), 1.0f);
  // 1 + 3 * 2^-11: halfway between 1 + 2^-10 and 1 + 2^-9, to the latter.
  EXPECT_EQ(f16ToFloat(floatToF16(1.0f + 3 * 0x1p-11f)), 1.0f + 0x1p-9f);
  // The relative error of a normal rounding is at most 2^-11.
  for (float v = 0.001f; v < 60000.0f; v *= 1.37f)
    EXPECT_LE(std::fabs(f16ToFloat(floatToF16(v)) - v), v * 0x1p-11f) << v;
}

TEST(Float16, OverflowUnderflowAndNaN) {
  float inf = std::numeric_limits<float>::infinity();
  // Past 65504 + half an ulp (65520) is infinity: why fp16 gradients need
  // loss scaling's overflow check.
  EXPECT_EQ(f16ToFloat(floatToF16(65519.0f)), 65504.0f);
  EXPECT_EQ(f16ToFloat(floatToF16(65520.0f)), inf);
  EXPECT_EQ(f16ToFloat(floatToF16(-1e6f)), -inf);
  // Below half the smallest subnormal is zero: why it needs the scaling.
  EXPECT_EQ(f16ToFloat(floatToF16(0x1p-26f)), 0.0f);
  EXPECT_TRUE(std::isnan(
      f16ToFloat(floatToF16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(Float16, ArraysConvertAsTheScalarsDo) {
  // Every fp16 bit pattern widens as the scalar conversion widens it (the
  // array path runs F16C where the processor has it); NaNs stay NaN.
  std::vector<uint16_t> all(65536 + 5);
  for (size_t i = 0; i < all.size(); ++i)
    all[i] = static_cast<uint16_t>(i);
  std::vector<float> wide(all.size());
  f16ToFloats(all.data(), wide.data(), static_cast<int64_t>(all.size()));
  for (size_t i = 0; i < all.size(); ++i) {
    float scalar = f16ToFloat(all[i]);
    if (std::isnan(scalar))
      EXPECT_TRUE(std::isnan(wide[i])) << i;
    else
      EXPECT_EQ(wide[i], scalar) << i;
  }
  // And narrowing: ties, overflow, subnormals, an odd-length tail.
  std::vector<float> in;
  for (float v = 0x1p-27f; v < 1e6f; v *= 1.0137f) {
    in.push_back(v);
    in.push_back(-v);
  }
  for (float v : {1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 65519.0f, 65520.0f,
                  std::numeric_limits<float>::infinity()})
    in.push_back(v);
  std::vector<uint16_t> narrow(in.size());
  floatsToF16(in.data(), narrow.data(), static_cast<int64_t>(in.size()));
  for (size_t i = 0; i < in.size(); ++i)
    EXPECT_EQ(narrow[i], floatToF16(in[i])) << in[i];
}

TEST(Float16, CommunicatorHelpersDispatchOnTheType) {
  float v = 1.0f + 0x1p-9f; // exact in fp16, rounds to 1 in bf16
  EXPECT_EQ(halfToFloat(ElementType::F16, floatToHalf(ElementType::F16, v)),
            v);
  EXPECT_EQ(halfToFloat(ElementType::BF16, floatToHalf(ElementType::BF16, v)),
            1.0f);
  EXPECT_EQ(elementBytes(ElementType::F16), 2);
  EXPECT_TRUE(isHalf(ElementType::F16));
  EXPECT_FALSE(isHalf(ElementType::F32));
}

} // namespace
