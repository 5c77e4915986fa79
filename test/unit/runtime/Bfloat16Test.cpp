//===- Bfloat16Test.cpp - bf16 rounding on the host -----------------------===//
//
// The conversions bf16 plans store with (widening kernels' operands,
// narrowing their results, the MPI reductions): round to nearest, ties to
// even, as CUDA's __float2bfloat16_rn and PyTorch round.
//
//===----------------------------------------------------------------------===//

#include "cleave/runtime/comm/Bfloat16.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <limits>

using namespace cleave::comm;

namespace {

float fromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

TEST(Bfloat16, ExactValuesRoundTrip) {
  for (float v : {0.0f, -0.0f, 1.0f, -2.5f, 65280.0f, 0.0078125f})
    EXPECT_EQ(bf16ToFloat(floatToBf16(v)), v) << v;
  EXPECT_TRUE(std::signbit(bf16ToFloat(floatToBf16(-0.0f))));
}

TEST(Bfloat16, RoundsToNearestTiesToEven) {
  // 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: to the even 1.
  EXPECT_EQ(bf16ToFloat(floatToBf16(1.0f + 0x1p-8f)), 1.0f);
  // 1 + 3 * 2^-8 lies halfway between 1 + 2^-7 and 1 + 2^-6: to the even
  // 1 + 2^-6.
  EXPECT_EQ(bf16ToFloat(floatToBf16(1.0f + 3 * 0x1p-8f)), 1.0f + 0x1p-6f);
  // Just above halfway rounds up, just below down.
  EXPECT_EQ(bf16ToFloat(floatToBf16(fromBits(0x3f808001))), 1.0f + 0x1p-7f);
  EXPECT_EQ(bf16ToFloat(floatToBf16(fromBits(0x3f807fff))), 1.0f);
  // The relative error of a rounding is at most 2^-8 (8 significant bits).
  for (float v = 0.1f; v < 100.0f; v *= 1.37f)
    EXPECT_LE(std::fabs(bf16ToFloat(floatToBf16(v)) - v), v * 0x1p-8f) << v;
}

TEST(Bfloat16, InfinitiesAndNaN) {
  float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(bf16ToFloat(floatToBf16(inf)), inf);
  EXPECT_EQ(bf16ToFloat(floatToBf16(-inf)), -inf);
  // The largest float is beyond bf16's largest finite value: it rounds to
  // infinity, as IEEE rounding does.
  EXPECT_EQ(bf16ToFloat(floatToBf16(std::numeric_limits<float>::max())), inf);
  // A NaN whose payload sits in the low bits must not round to infinity.
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBf16(fromBits(0x7f800001)))));
  EXPECT_TRUE(std::isnan(
      bf16ToFloat(floatToBf16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(Bfloat16, ArraysConvertElementwise) {
  float in[3] = {1.0f, 1.0f + 0x1p-8f, -3.0f}, back[3];
  uint16_t half[3];
  floatsToBf16(in, half, 3);
  bf16ToFloats(half, back, 3);
  EXPECT_EQ(back[0], 1.0f);
  EXPECT_EQ(back[1], 1.0f);
  EXPECT_EQ(back[2], -3.0f);
}

} // namespace
