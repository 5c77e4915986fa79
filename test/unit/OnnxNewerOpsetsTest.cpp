//===- OnnxNewerOpsetsTest.cpp - Opset 19-28 models, imported and evaluated -===//
//
// PyTorch's default exporter writes opset 20 (its Gelu), and ONNX 1.23
// defines up to 28; libonnx 1.12 stops at 17. These models are rewritten in their
// opset-17 form (OnnxNewerOpsets.cpp) and must compute what their opset
// defines; what has no such form is refused naming the node, op and opset.
//
//===----------------------------------------------------------------------===//

#include "OnnxEvalUtil.h"

#include <cmath>
#include <limits>

using namespace cleave;
using namespace cleave::testing;
namespace k = cleave::kernels;

namespace {

constexpr int32_t kFloat = onnx::TensorProto::FLOAT;

TEST(OnnxNewerOpsets, GeluOfOpset20IsItsDefinition) {
  for (const char *approximate : {"none", "tanh"}) {
    ModelBuilder m(20);
    m.input("x", kFloat, {6});
    onnx::NodeProto &gelu = m.node("Gelu", "gelu", {"x"}, {"y"});
    ModelBuilder::stringAttr(gelu, "approximate", approximate);
    m.output("y", 1);
    k::Tensor x({6}, std::vector<float>{-3.0f, -1.0f, -0.25f, 0.0f, 0.5f,
                                        2.5f});
    std::vector<k::Tensor> out = runWithX(m, x);
    ASSERT_EQ(out.size(), 1u) << approximate;
    for (int64_t i = 0; i < 6; ++i) {
      double v = x[i];
      double want =
          std::string(approximate) == "none"
              ? 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)))
              : 0.5 * v *
                    (1 + std::tanh(std::sqrt(2 / M_PI) *
                                   (v + 0.044715 * v * v * v)));
      EXPECT_NEAR(out[0][i], want, 1e-5) << approximate << " " << i;
    }
  }
}

TEST(OnnxNewerOpsets, GeluIsFusedIntoOneGraphOp) {
  // The exact GELU's composition is what the importer has always fused:
  // the opset-20 op lands as one graph.gelu, not five element-wise ops.
  ModelBuilder m(20);
  m.input("x", kFloat, {2, 4});
  m.node("Gelu", "gelu", {"x"}, {"y"});
  m.output("y", 2);
  mlir::MLIRContext ctx;
  Import import = m.import(ctx);
  ASSERT_TRUE(import.module) << import.allErrors();
  int gelus = 0, erfs = 0;
  import.forward().walk([&](mlir::Operation *op) {
    gelus += op->getName().getStringRef() == "graph.gelu";
    erfs += op->getName().getStringRef() == "graph.erf";
  });
  EXPECT_EQ(erfs, 0);
  EXPECT_EQ(gelus, 1);
}

TEST(OnnxNewerOpsets, GroupNormalizationOfOpset21ScalesEachChannel) {
  // [1, 4, 3] in 2 groups of 2 channels: each group's 6 values normalised
  // together, then each channel's own scale and bias (opset 21).
  ModelBuilder m(21);
  m.input("x", kFloat, {1, 4, 3});
  m.floatValues("scale", {4}, {1.0f, 2.0f, -1.0f, 0.5f});
  m.floatValues("bias", {4}, {0.0f, 0.5f, 1.0f, -2.0f});
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
  const float scale[] = {1.0f, 2.0f, -1.0f, 0.5f};
  const float bias[] = {0.0f, 0.5f, 1.0f, -2.0f};
  for (int64_t g = 0; g < 2; ++g)
    for (int64_t e = 0; e < 6; ++e) {
      int64_t c = (g * 6 + e) / 3;
      EXPECT_NEAR(out[0][g * 6 + e],
                  scale[c] * normalisedInGroup(x, g * 6, 6, e) + bias[c], 1e-4)
          << g << " " << e;
    }
}

TEST(OnnxNewerOpsets, RmsNormalizationSwishAndSwiGluAreTheirDefinitions) {
  // RMSNormalization (23) over the last axis, Swish (24) with alpha 1.5 and
  // SwiGLU (28), at opset 28.
  ModelBuilder m(28);
  m.input("x", kFloat, {2, 4});
  m.floatValues("scale", {4}, {1.0f, 2.0f, 0.5f, -1.0f});
  onnx::NodeProto &rms = m.node("RMSNormalization", "rms", {"x", "scale"},
                                {"r"});
  ModelBuilder::floatAttr(rms, "epsilon", 1e-3f);
  onnx::NodeProto &swish = m.node("Swish", "swish", {"x"}, {"s"});
  ModelBuilder::floatAttr(swish, "alpha", 1.5f);
  m.node("SwiGLU", "swiglu", {"x", "r"}, {"g"});
  m.output("r", 2);
  m.output("s", 2);
  m.output("g", 2);
  k::Tensor x({2, 4}, std::vector<float>{-2, -0.5f, 0.25f, 3, 1, 1, -1, 0});
  std::vector<k::Tensor> out = runWithX(m, x);
  ASSERT_EQ(out.size(), 3u);
  const float scale[] = {1.0f, 2.0f, 0.5f, -1.0f};
  auto sigmoid = [](double v) { return 1 / (1 + std::exp(-v)); };
  for (int64_t row = 0; row < 2; ++row) {
    double meanSquare = 0;
    for (int64_t c = 0; c < 4; ++c)
      meanSquare += x[row * 4 + c] * x[row * 4 + c] / 4.0;
    for (int64_t c = 0; c < 4; ++c) {
      int64_t i = row * 4 + c;
      double r = x[i] / std::sqrt(meanSquare + 1e-3) * scale[c];
      EXPECT_NEAR(out[0][i], r, 1e-5) << i;
      EXPECT_NEAR(out[1][i], x[i] * sigmoid(1.5 * x[i]), 1e-6) << i;
      EXPECT_NEAR(out[2][i], x[i] * sigmoid(x[i]) * r, 1e-5) << i;
    }
  }
}

TEST(OnnxNewerOpsets, TypeOnlyChangesImportAsTheyAre) {
  // Opset 19's Cast with `saturate`, opset 22's Relu and opset 20's
  // ReduceMax with its axes input: the opset-17 forms compute the same.
  ModelBuilder m(22);
  m.input("x", kFloat, {2, 3});
  m.ints("axes", {1});
  onnx::NodeProto &cast = m.node("Cast", "cast", {"x"}, {"c"});
  ModelBuilder::intAttr(cast, "to", kFloat);
  ModelBuilder::intAttr(cast, "saturate", 1);
  m.node("Relu", "relu", {"c"}, {"r"});
  onnx::NodeProto &max = m.node("ReduceMax", "max", {"r", "axes"}, {"y"});
  ModelBuilder::intAttr(max, "keepdims", 0);
  m.output("y", 1);
  k::Tensor x({2, 3}, std::vector<float>{-1, 4, 2, -5, -6, 3});
  std::vector<k::Tensor> out = runWithX(m, x);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0][0], 4.0f);
  EXPECT_EQ(out[0][1], 3.0f);
}

/// x^two, PReLU with `slope` [1], times `w` [3]: `two` a rank-0
/// initializer as the dynamo exporter writes an expression's constants.
ModelBuilder powPreluModel() {
  ModelBuilder m(18);
  m.input("x", kFloat, {2, 3});
  m.floats("two", {}, 2.0f);
  m.floats("slope", {1}, 0.25f);
  m.floats("w", {3}, 0.5f);
  m.node("Pow", "pow", {"x", "two"}, {"sq"});
  m.node("PRelu", "prelu", {"sq", "slope"}, {"p"});
  m.node("Mul", "mul", {"p", "w"}, {"y"});
  m.output("y", 2);
  return m;
}

TEST(OnnxNewerOpsets, DynamoScalarConstantsAreNotTrained) {
  // The dynamo exporter writes an expression's constants as rank-0
  // initializers (T5's RMSNorm exponent, a mask's fill value): constants,
  // not parameters. A learned number is a one-element tensor (PReLU's
  // slope, [1]) and trains.
  ModelBuilder m = powPreluModel();
  mlir::MLIRContext ctx;
  Import import = m.import(ctx);
  ASSERT_TRUE(import.module) << import.allErrors();
  EXPECT_EQ(import.paramElements(/*trainable=*/true), 4);
  EXPECT_EQ(import.paramElements(/*trainable=*/false), 0);
  k::Tensor x({2, 3}, std::vector<float>{-1, 2, 0.5f, 3, -2, 1});
  std::vector<k::Tensor> out = runWithX(m, x);
  ASSERT_EQ(out.size(), 1u);
  for (int64_t i = 0; i < 6; ++i)
    EXPECT_NEAR(out[0][i], x[i] * x[i] * 0.5f, 1e-6) << i;
}

TEST(OnnxNewerOpsets, CastOfInfinityFoldsAsOnnxRuntimeDoes) {
  // T5's relative-position buckets (TorchScript export) cast log(0) = -inf
  // to int64, and a later Where discards the value: folded to what ONNX
  // Runtime computes (x86-64's integer indefinite, INT64_MIN), not
  // refused.
  ModelBuilder m(17);
  m.input("x", kFloat, {3});
  onnx::NodeProto &c = m.node("Constant", "c", {}, {"c"});
  onnx::TensorProto *t = ModelBuilder::tensorAttr(c, "value");
  t->set_data_type(kFloat);
  t->add_dims(3);
  for (float v : {-INFINITY, 2.75f, NAN})
    t->add_float_data(v);
  onnx::NodeProto &toInt = m.node("Cast", "to_int", {"c"}, {"i"});
  ModelBuilder::intAttr(toInt, "to", onnx::TensorProto::INT64);
  onnx::NodeProto &toFloat = m.node("Cast", "to_float", {"i"}, {"f"});
  ModelBuilder::intAttr(toFloat, "to", kFloat);
  m.node("Add", "add", {"x", "f"}, {"y"});
  m.output("y", 1);
  k::Tensor x({3}, std::vector<float>{1, 1, 1});
  std::vector<k::Tensor> out = runWithX(m, x);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0][0], float(std::numeric_limits<int64_t>::min()));
  EXPECT_EQ(out[0][1], 3.0f);
  EXPECT_EQ(out[0][2], float(std::numeric_limits<int64_t>::min()));
}

TEST(OnnxNewerOpsets, TrainableAndFrozenPatternsOverrideTheRule) {
  // The same model as above: --frozen 's*' freezes the slope, --trainable
  // 'two' makes the rank-0 exponent a parameter (a learned temperature
  // exported as a scalar), and --trainable wins over --frozen.
  ModelBuilder m = powPreluModel();
  ImportOptions options;
  options.frozen = {"s*", "w"};
  options.trainable = {"two", "w"};
  mlir::MLIRContext ctx;
  Import import = m.import(ctx, options);
  ASSERT_TRUE(import.module) << import.allErrors();
  // Trainable: two (1) and w (3); frozen: slope (1).
  EXPECT_EQ(import.paramElements(/*trainable=*/true), 4);
  EXPECT_EQ(import.paramElements(/*trainable=*/false), 1);
}

TEST(OnnxNewerOpsets, ReductionAxesThroughAReshapeOfAConstant) {
  // torch.onnx.export(..., optimize=False) writes a reduction's axes as a
  // Constant reshaped: still known at import.
  ModelBuilder m(20);
  m.input("x", kFloat, {2, 3});
  onnx::NodeProto &c = m.node("Constant", "c", {}, {"axes0"});
  ModelBuilder::intsAttr(c, "value_ints", {1});
  m.ints("shape", {1});
  m.node("Reshape", "reshape", {"axes0", "shape"}, {"axes"});
  onnx::NodeProto &mean = m.node("ReduceMean", "mean", {"x", "axes"}, {"y"});
  ModelBuilder::intAttr(mean, "keepdims", 0);
  m.output("y", 1);
  k::Tensor x({2, 3}, std::vector<float>{1, 2, 3, 4, 5, 9});
  std::vector<k::Tensor> out = runWithX(m, x);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0][0], 2.0f);
  EXPECT_EQ(out[0][1], 6.0f);
}

/// ONNX Attention's definition on [B, H, S, D] buffers: softmax(scale q
/// k^T, masked) v, key/value head h / (H / kv_heads) for query head h.
std::vector<double> referenceAttention(const std::vector<float> &q,
                                       const std::vector<float> &k,
                                       const std::vector<float> &v,
                                       int64_t heads, int64_t kvHeads,
                                       int64_t s, int64_t d, bool causal,
                                       const std::vector<int> &mask) {
  std::vector<double> y(heads * s * d, 0.0);
  double scale = 1 / std::sqrt(double(d));
  for (int64_t h = 0; h < heads; ++h) {
    int64_t g = h / (heads / kvHeads);
    for (int64_t i = 0; i < s; ++i) {
      std::vector<double> p(s, -INFINITY);
      double top = -INFINITY, sum = 0;
      for (int64_t j = 0; j < s; ++j) {
        if ((causal && j > i) || (!mask.empty() && !mask[i * s + j]))
          continue;
        double dot = 0;
        for (int64_t e = 0; e < d; ++e)
          dot += q[(h * s + i) * d + e] * k[(g * s + j) * d + e];
        p[j] = scale * dot;
        top = std::max(top, p[j]);
      }
      for (double &x : p)
        sum += x == -INFINITY ? 0 : std::exp(x - top);
      for (int64_t j = 0; j < s; ++j)
        if (p[j] != -INFINITY)
          for (int64_t e = 0; e < d; ++e)
            y[(h * s + i) * d + e] +=
                std::exp(p[j] - top) / sum * v[(g * s + j) * d + e];
    }
  }
  return y;
}

std::vector<float> ramp(int64_t n, float step, float offset) {
  std::vector<float> out(n);
  for (int64_t i = 0; i < n; ++i)
    out[i] = std::sin(step * float(i) + offset);
  return out;
}

TEST(OnnxNewerOpsets, AttentionOfOpset23IsItsDefinition) {
  // Causal self-attention, 2 heads: q = k = v = x.
  {
    ModelBuilder m(23);
    m.input("x", kFloat, {1, 2, 3, 4});
    onnx::NodeProto &a = m.node("Attention", "attn", {"x", "x", "x"}, {"y"});
    ModelBuilder::intAttr(a, "is_causal", 1);
    m.output("y", 4);
    std::vector<float> xs = ramp(24, 0.7f, 0.1f);
    k::Tensor x({1, 2, 3, 4}, xs);
    std::vector<k::Tensor> out = runWithX(m, x);
    ASSERT_EQ(out.size(), 1u);
    std::vector<double> want =
        referenceAttention(xs, xs, xs, 2, 2, 3, 4, /*causal=*/true, {});
    for (int64_t i = 0; i < 24; ++i)
      EXPECT_NEAR(out[0][i], want[i], 1e-5) << i;
  }
  // Grouped-query attention (4 query heads on 2 key/value heads) with a
  // boolean mask, as PyTorch exports LLaMA at opset 23.
  {
    ModelBuilder m(23);
    m.input("x", kFloat, {1, 4, 3, 4});
    std::vector<float> ks = ramp(24, 0.3f, 0.5f), vs = ramp(24, 1.1f, 0.2f);
    m.floatValues("k", {1, 2, 3, 4}, ks);
    m.floatValues("v", {1, 2, 3, 4}, vs);
    std::vector<int> mask = {1, 0, 0, 1, 1, 0, 0, 1, 1};
    m.typedInts("mask", onnx::TensorProto::BOOL, {3, 3},
                {1, 0, 0, 1, 1, 0, 0, 1, 1});
    m.node("Attention", "attn", {"x", "k", "v", "mask"}, {"y"});
    m.output("y", 4);
    std::vector<float> xs = ramp(48, 0.45f, 0.0f);
    std::vector<k::Tensor> out = runWithX(m, k::Tensor({1, 4, 3, 4}, xs));
    ASSERT_EQ(out.size(), 1u);
    std::vector<double> want =
        referenceAttention(xs, ks, vs, 4, 2, 3, 4, /*causal=*/false, mask);
    for (int64_t i = 0; i < 48; ++i)
      EXPECT_NEAR(out[0][i], want[i], 1e-5) << i;
  }
}

TEST(OnnxNewerOpsets, RotaryEmbeddingOfOpset23IsItsDefinition) {
  // X [B=1, H=2, S=3, D=4], caches [1, 3, 2]: pairs (0, 2), (1, 3) rotate,
  // or (0, 1), (2, 3) when interleaved.
  std::vector<float> xs = ramp(24, 0.6f, 0.3f), cs = ramp(6, 0.9f, 1.0f),
                     sn = ramp(6, 0.4f, 2.0f);
  for (int interleaved : {0, 1}) {
    ModelBuilder m(23);
    m.input("x", kFloat, {1, 2, 3, 4});
    m.floatValues("cos", {1, 3, 2}, cs);
    m.floatValues("sin", {1, 3, 2}, sn);
    onnx::NodeProto &r =
        m.node("RotaryEmbedding", "rope", {"x", "cos", "sin"}, {"y"});
    ModelBuilder::intAttr(r, "interleaved", interleaved);
    m.output("y", 4);
    std::vector<k::Tensor> out = runWithX(m, k::Tensor({1, 2, 3, 4}, xs));
    ASSERT_EQ(out.size(), 1u) << interleaved;
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t s = 0; s < 3; ++s)
        for (int64_t i = 0; i < 2; ++i) {
          int64_t base = (h * 3 + s) * 4;
          int64_t a = interleaved ? base + 2 * i : base + i;
          int64_t b = interleaved ? base + 2 * i + 1 : base + i + 2;
          double c = cs[s * 2 + i], n = sn[s * 2 + i];
          EXPECT_NEAR(out[0][a], c * xs[a] - n * xs[b], 1e-6)
              << interleaved << " " << a;
          EXPECT_NEAR(out[0][b], n * xs[a] + c * xs[b], 1e-6)
              << interleaved << " " << b;
        }
  }
}

TEST(OnnxNewerOpsets, AttentionWithACacheIsRefusedByName) {
  ModelBuilder m(23);
  for (const char *name : {"q", "k", "v", "past_k", "past_v"})
    m.input(name, kFloat, {1, 2, 4, 8});
  m.node("Attention", "attn", {"q", "k", "v", "", "past_k", "past_v"},
         {"y"});
  m.output("y", 4);
  expectImportError(m,
                    "node 'attn' (Attention): past_key (a key/value cache) "
                    "is not supported",
                    "an Attention with a cache");
}

TEST(OnnxNewerOpsets, WhatHasNoOpset17FormIsRefusedWithOpAndOpset) {
  ModelBuilder scatter(24);
  for (const char *name : {"cache", "update"})
    scatter.input(name, kFloat, {1, 2, 4, 8});
  scatter.node("TensorScatter", "scatter", {"cache", "update"}, {"y"});
  scatter.output("y", 4);
  expectImportError(scatter,
                    "node 'scatter' (TensorScatter, opset 24): this operator "
                    "has no opset-17 form cleave imports; export the model at "
                    "opset 22",
                    "an opset-24 TensorScatter");

  ModelBuilder wrap(19);
  wrap.input("x", kFloat, {2, 4});
  wrap.ints("pads", {0, 1, 0, 1});
  onnx::NodeProto &pad = wrap.node("Pad", "pad", {"x", "pads"}, {"y"});
  ModelBuilder::stringAttr(pad, "mode", "wrap");
  wrap.output("y", 2);
  expectImportError(wrap,
                    "node 'pad' (Pad, opset 19): mode 'wrap' has no "
                    "opset-17 form",
                    "a wrapping pad");

  ModelBuilder newer(29);
  newer.input("x", kFloat, {2});
  newer.node("Relu", "relu", {"x"}, {"y"});
  newer.output("y", 1);
  expectImportError(newer,
                    "opset 29 is not supported (opsets 1 to 28 are; opset 28 "
                    "is the newest this cleave knows",
                    "an opset newer than cleave knows");
}

} // namespace
