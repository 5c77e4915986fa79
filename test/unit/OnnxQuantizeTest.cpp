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

namespace {

TEST(OnnxQuantize, MatMulIntegerIsExactPastFloatPrecision) {
  // 4001 products of 255 * 253: 258,124,515, odd and past 2^24, where an
  // f32 sum cannot hold it; the split into 16 hi + lo keeps it exact.
  constexpr int64_t n = 4001;
  ModelBuilder m(13);
  m.input("a", kU8, {1, n});
  m.input("b", kU8, {n, 1});
  m.node("MatMulInteger", "mm", {"a", "b"}, {"y"});
  m.output("y", 2, onnx::TensorProto::INT32);
  mlir::MLIRContext ctx;
  Import import = m.import(ctx);
  ASSERT_TRUE(import.module) << import.allErrors();
  GraphEvaluator eval;
  k::IndexTensor a({1, n}), b({n, 1});
  for (int64_t i = 0; i < n; ++i) {
    a[i] = 255;
    b[i] = 253;
  }
  eval.bindings["a"] = a;
  eval.bindings["b"] = b;
  auto results = eval.run(import.forward());
  ASSERT_TRUE(mlir::succeeded(results));
  const auto &y = std::get<k::IndexTensor>((*results)[0]);
  EXPECT_EQ(y[0], int64_t(258124515));

  // Past the exact bound: refused, not rounded.
  ModelBuilder big(13);
  big.typedInts("a", kU8, {1, 5000}, std::vector<int64_t>(5000, 1));
  big.typedInts("b", kU8, {5000, 1}, std::vector<int64_t>(5000, 1));
  big.node("MatMulInteger", "mm", {"a", "b"}, {"y"});
  big.output("y", 2, onnx::TensorProto::INT32);
  expectImportError(big, "a reduction over 5000 products is more than the "
                         "4112 whose int32 sum this importer computes exactly",
                    "a reduction past the exact bound");

  ModelBuilder floats(13);
  floats.input("a", kFloat, {2, 3});
  floats.typedInts("b", kU8, {3, 2}, {1, 2, 3, 4, 5, 6});
  floats.node("MatMulInteger", "mm", {"a", "b"}, {"y"});
  floats.output("y", 2, onnx::TensorProto::INT32);
  expectImportError(floats, "A must be uint8 or int8, got 'tensor<2x3xf32>'",
                    "a float operand");
}

} // namespace
