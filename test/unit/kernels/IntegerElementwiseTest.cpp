//===- IntegerElementwiseTest.cpp - Integer arithmetic, compare, where ----===//
//
// Expected values are numpy's (and ONNX Runtime's): wrap-around in the
// type, division towards zero, Mod with the divisor's sign, fmod with the
// dividend's.
//
//===----------------------------------------------------------------------===//

#include "cleave/runtime/kernels/IntegerElementwise.h"

#include <gtest/gtest.h>

#include <limits>
#include <stdexcept>

using namespace cleave::kernels;

namespace {

template <typename T>
std::vector<T> run(IntegerOp op, BasicTensor<T> a, BasicTensor<T> b) {
  BasicTensor<T> out(broadcastShape(a.shape(), b.shape()));
  integerBinary<T>(op, a.ref(), b.ref(), out.ref());
  return out.values();
}

TEST(IntegerElementwise, WrapsAroundInTheType) {
  using U8 = BasicTensor<uint8_t>;
  EXPECT_EQ(run(IntegerOp::Add, U8({3}, {200, 255, 1}), U8({3}, {100, 1, 2})),
            (std::vector<uint8_t>{44, 0, 3}));
  EXPECT_EQ(run(IntegerOp::Sub, U8({2}, {1, 0}), U8({2}, {2, 1})),
            (std::vector<uint8_t>{255, 255}));
  using I8 = BasicTensor<int8_t>;
  EXPECT_EQ(run(IntegerOp::Mul, I8({2}, {100, -128}), I8({2}, {3, -1})),
            (std::vector<int8_t>{44, -128}));
  // uint16 * uint16 promotes to int in C++; the kernel must not overflow it.
  using U16 = BasicTensor<uint16_t>;
  EXPECT_EQ(run(IntegerOp::Mul, U16({1}, {65535}), U16({1}, {65535})),
            (std::vector<uint16_t>{1}));
}

TEST(IntegerElementwise, DivisionAndRemainders) {
  using I32 = BasicTensor<int32_t>;
  I32 a({4}, {7, -7, 7, -7}), b({4}, {3, 3, -3, -3});
  EXPECT_EQ(run(IntegerOp::Div, a, b), (std::vector<int32_t>{2, -2, -2, 2}));
  EXPECT_EQ(run(IntegerOp::Mod, a, b), (std::vector<int32_t>{1, 2, -2, -1}));
  EXPECT_EQ(run(IntegerOp::FMod, a, b), (std::vector<int32_t>{1, -1, 1, -1}));
  // The one overflowing quotient wraps as numpy's does.
  int32_t lowest = std::numeric_limits<int32_t>::min();
  EXPECT_EQ(run(IntegerOp::Div, I32({1}, {lowest}), I32({1}, {-1})),
            (std::vector<int32_t>{lowest}));
  EXPECT_EQ(run(IntegerOp::Mod, I32({1}, {lowest}), I32({1}, {-1})),
            (std::vector<int32_t>{0}));
  // Unsigned values divide as unsigned (250 is not -6 here).
  using U8 = BasicTensor<uint8_t>;
  EXPECT_EQ(run(IntegerOp::Div, U8({1}, {250}), U8({1}, {7})),
            (std::vector<uint8_t>{35}));
  EXPECT_EQ(run(IntegerOp::Mod, U8({1}, {250}), U8({1}, {7})),
            (std::vector<uint8_t>{5}));
}

TEST(IntegerElementwise, ZeroDivisorIsAnError) {
  using I64 = BasicTensor<int64_t>;
  for (IntegerOp op : {IntegerOp::Div, IntegerOp::Mod, IntegerOp::FMod}) {
    try {
      run(op, I64({2}, {1, 2}), I64({2}, {1, 0}));
      FAIL() << "no error";
    } catch (const std::invalid_argument &e) {
      EXPECT_NE(std::string(e.what()).find("by zero"), std::string::npos)
          << e.what();
    }
  }
}

TEST(IntegerElementwise, MaxMinAndCompareKnowSignedness) {
  using U8 = BasicTensor<uint8_t>;
  using I8 = BasicTensor<int8_t>;
  // The same bits: 200 as uint8, -56 as int8.
  EXPECT_EQ(run(IntegerOp::Max, U8({1}, {200}), U8({1}, {100})),
            (std::vector<uint8_t>{200}));
  EXPECT_EQ(run(IntegerOp::Max, I8({1}, {-56}), I8({1}, {100})),
            (std::vector<int8_t>{100}));
  MaskTensor gt({1});
  U8 a({1}, {200}), b({1}, {100});
  compareValues<uint8_t>(ComparePredicate::Gt, a.ref(), b.ref(), gt.ref());
  EXPECT_EQ(gt[0], 1);
  I8 c({1}, {-56}), d({1}, {100});
  compareValues<int8_t>(ComparePredicate::Gt, c.ref(), d.ref(), gt.ref());
  EXPECT_EQ(gt[0], 0);
}

TEST(IntegerElementwise, BroadcastsLikeNumpy) {
  using I64 = BasicTensor<int64_t>;
  // [2, 3] - [3] and a scalar.
  EXPECT_EQ(run(IntegerOp::Sub, I64({2, 3}, {1, 2, 3, 4, 5, 6}),
                I64({3}, {1, 1, 2})),
            (std::vector<int64_t>{0, 1, 1, 3, 4, 4}));
  EXPECT_EQ(run(IntegerOp::Min, I64({}, {3}), I64({2, 2}, {1, 5, 3, -4})),
            (std::vector<int64_t>{1, 3, 3, -4}));
  EXPECT_THROW(run(IntegerOp::Add, I64({2}, {1, 2}), I64({3}, {1, 2, 3})),
               std::invalid_argument);
}

TEST(IntegerElementwise, WhereSelectsAnyElementType) {
  MaskTensor cond({2, 2}, {1, 0, 0, 1});
  BasicTensor<uint16_t> a({2, 2}, {1, 2, 3, 4}), b({}, {9});
  BasicTensor<uint16_t> out({2, 2});
  whereValues<uint16_t>(cond.ref(), a.ref(), b.ref(), out.ref());
  EXPECT_EQ(out.values(), (std::vector<uint16_t>{1, 9, 9, 4}));
}

TEST(IntegerElementwise, ShiftsGiveZeroPastTheWidth) {
  using U8 = BasicTensor<uint8_t>;
  EXPECT_EQ(run(IntegerOp::ShiftLeft, U8({4}, {1, 255, 3, 1}),
                U8({4}, {7, 1, 0, 8})),
            (std::vector<uint8_t>{128, 254, 3, 0}));
  using U64 = BasicTensor<uint64_t>;
  EXPECT_EQ(run(IntegerOp::ShiftRight, U64({3}, {~uint64_t(0), 16, 16}),
                U64({3}, {63, 4, 64})),
            (std::vector<uint64_t>{1, 1, 0}));
}

TEST(IntegerElementwise, PowHasNoIntegerCounterpart) {
  EXPECT_FALSE(integerOpOf(BinaryOp::Pow));
  EXPECT_EQ(integerOpOf(BinaryOp::Div), IntegerOp::Div);
}

} // namespace
