//===- OnnxOpset18Test.cpp - Opset-18 models, imported and evaluated ------===//
//
// PyTorch's dynamo exporter writes opset 18; libonnx 1.12 stops at 17.
// These models are rewritten in their opset-17 form and must compute what
// opset 18 defines.
//
//===----------------------------------------------------------------------===//

#include "OnnxEvalUtil.h"

#include <cmath>

using namespace cleave;
using namespace cleave::testing;
namespace k = cleave::kernels;

namespace {

constexpr int32_t kFloat = onnx::TensorProto::FLOAT;

TEST(OnnxOpset18, GroupNormalizationNormalisesEachGroup) {
  // [1, 4, 3] in 2 groups of 2 channels: each group's 6 values normalised
  // together, then the group's scale and bias (per group in opset 18).
  ModelBuilder m(18);
  m.input("x", kFloat, {1, 4, 3});
  m.floats("scale", {2}, 2.0f);
  m.floats("bias", {2}, 0.5f);
  onnx::NodeProto &gn =
      m.node("GroupNormalization", "gn", {"x", "scale", "bias"}, {"y"});
  ModelBuilder::intAttr(gn, "num_groups", 2);
  m.output("y", 3);
  k::Tensor x({1, 4, 3});
  for (int64_t i = 0; i < 12; ++i)
    x[i] = float(i * i % 7);
  std::vector<k::Tensor> out = runWithX(m, x);
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].shape(), (k::Shape{1, 4, 3}));
  for (int64_t g = 0; g < 2; ++g)
    for (int64_t e = 0; e < 6; ++e)
      EXPECT_NEAR(out[0][g * 6 + e], 2.0 * normalisedInGroup(x, g * 6, 6, e) + 0.5,
                  1e-4)
          << g << " " << e;
}

TEST(OnnxOpset18, ReductionAxesInputsAndSplitOutputs) {
  // ReduceMean over axes given as an input (opset 18's form), and Split by
  // num_outputs.
  ModelBuilder m(18);
  m.input("x", kFloat, {2, 4});
  m.ints("axes", {1});
  onnx::NodeProto &mean = m.node("ReduceMean", "mean", {"x", "axes"}, {"m"});
  ModelBuilder::intAttr(mean, "keepdims", 0);
  onnx::NodeProto &split = m.node("Split", "split", {"x"}, {"a", "b"});
  ModelBuilder::intAttr(split, "axis", 1);
  ModelBuilder::intAttr(split, "num_outputs", 2);
  m.output("m", 1);
  m.output("b", 2);
  k::Tensor x({2, 4}, std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8});
  std::vector<k::Tensor> out = runWithX(m, x);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].shape(), (k::Shape{2}));
  EXPECT_EQ(out[0][0], 2.5f);
  EXPECT_EQ(out[0][1], 6.5f);
  EXPECT_EQ(out[1].shape(), (k::Shape{2, 2}));
  EXPECT_EQ(out[1][0], 3.0f);
  EXPECT_EQ(out[1][3], 8.0f);
}

TEST(OnnxOpset18, MishIsXTimesTanhOfSoftplus) {
  ModelBuilder m(18);
  m.input("x", kFloat, {4});
  m.node("Mish", "mish", {"x"}, {"y"});
  m.output("y", 1);
  k::Tensor x({4}, std::vector<float>{-3.0f, -0.5f, 0.0f, 2.0f});
  std::vector<k::Tensor> out = runWithX(m, x);
  ASSERT_EQ(out.size(), 1u);
  for (int64_t i = 0; i < 4; ++i)
    EXPECT_NEAR(out[0][i], x[i] * std::tanh(std::log1p(std::exp(x[i]))), 1e-6)
        << i;
}

TEST(OnnxOpset18, FormsWithoutAnOpset17EquivalentAreRefusedByName) {
  ModelBuilder runtimeAxes(18);
  runtimeAxes.input("x", kFloat, {2, 4});
  runtimeAxes.input("axes", onnx::TensorProto::INT64, {1});
  runtimeAxes.node("ReduceMax", "max", {"x", "axes"}, {"y"});
  runtimeAxes.output("y", 2);
  expectImportError(runtimeAxes,
                    "node 'max' (ReduceMax, opset 18): the axes input 'axes' "
                    "must be known at import time",
                    "run-time reduction axes");

  ModelBuilder antialias(18);
  antialias.input("x", kFloat, {1, 1, 4, 4});
  antialias.floats("scales", {4}, 0.5f);
  onnx::NodeProto &resize =
      antialias.node("Resize", "resize", {"x", "", "scales"}, {"y"});
  ModelBuilder::intAttr(resize, "antialias", 1);
  antialias.output("y", 4);
  expectImportError(antialias,
                    "node 'resize' (Resize, opset 18): antialias has no "
                    "opset-17 form",
                    "an antialiased resize");

  ModelBuilder bitwise(18);
  bitwise.input("x", onnx::TensorProto::INT32, {4});
  bitwise.node("BitwiseNot", "not", {"x"}, {"y"});
  bitwise.output("y", 1, onnx::TensorProto::INT32);
  expectImportError(bitwise,
                    "node 'not' (BitwiseNot, opset 18): this operator has no "
                    "opset-17 form cleave imports",
                    "a bitwise op");
}

} // namespace
