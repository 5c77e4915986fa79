//===- OnnxQuantizeTest.cpp - ONNX quantisation ops, evaluated ------------===//
//
// The Q/DQ converters run through the graph evaluator on values whose
// quantised forms are exact, so every expectation is an equality.
//
//===----------------------------------------------------------------------===//

#include "OnnxEvalUtil.h"

using namespace cleave;
using namespace cleave::testing;
namespace k = cleave::kernels;

namespace {

constexpr int32_t kFloat = onnx::TensorProto::FLOAT;
constexpr int32_t kU8 = onnx::TensorProto::UINT8;

TEST(OnnxQuantize, QLinearConvAddsItsInt32BiasAtTheProductScale) {
  // x (scale 0.5) -> QLinearConv by a 1x1 filter of 1.0 (2 at scale 0.5)
  // with bias 3 at scale 0.5 * 0.5 = 0.75, output scale 0.25 -> float:
  // y = x + 0.75 exactly. The conformance suite's QLinearConv has no bias.
  ModelBuilder m(13);
  m.input("x", kFloat, {1, 1, 3, 3});
  m.scalar("s", 0.5f);
  m.scalar("ys", 0.25f);
  m.typedInts("zp", kU8, {}, {0});
  m.typedInts("w", kU8, {1, 1, 1, 1}, {2});
  m.typedInts("b", onnx::TensorProto::INT32, {1}, {3});
  m.node("QuantizeLinear", "q", {"x", "s", "zp"}, {"xq"});
  m.node("QLinearConv", "conv",
         {"xq", "s", "zp", "w", "s", "zp", "ys", "zp", "b"}, {"yq"});
  m.node("DequantizeLinear", "dq", {"yq", "ys", "zp"}, {"y"});
  m.output("y", 4);
  k::Tensor x({1, 1, 3, 3});
  for (int64_t i = 0; i < x.numElements(); ++i)
    x[i] = 0.5f * float(i);
  std::vector<k::Tensor> out = runWithX(m, x);
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].shape(), (k::Shape{1, 1, 3, 3}));
  for (int64_t i = 0; i < x.numElements(); ++i)
    EXPECT_EQ(out[0][i], x[i] + 0.75f) << i;
}

TEST(OnnxQuantize, QuantizeRoundsHalvesToEvenAndSaturates) {
  // x / 1.0 + 0 on uint8: 2.5 -> 2, 3.5 -> 4, -1 -> 0, 300 -> 255.
  ModelBuilder m(13);
  m.input("x", kFloat, {4});
  m.scalar("s", 1.0f);
  m.typedInts("zp", kU8, {}, {0});
  m.node("QuantizeLinear", "q", {"x", "s", "zp"}, {"xq"});
  m.node("DequantizeLinear", "dq", {"xq", "s", "zp"}, {"y"});
  m.output("y", 1);
  k::Tensor x({4});
  x[0] = 2.5f;
  x[1] = 3.5f;
  x[2] = -1.0f;
  x[3] = 300.0f;
  std::vector<k::Tensor> out = runWithX(m, x);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0][0], 2.0f);
  EXPECT_EQ(out[0][1], 4.0f);
  EXPECT_EQ(out[0][2], 0.0f);
  EXPECT_EQ(out[0][3], 255.0f);
}

} // namespace
