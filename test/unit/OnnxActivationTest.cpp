//===- OnnxActivationTest.cpp - ONNX activations against their formulas ---===//
//
// Each activation imported from a small ONNX model and run by the graph
// evaluator, against the operator's definition in the ONNX spec computed
// in double, over values from -30 to 30 (Softplus and Mish must not
// overflow where e^x would).
//
//===----------------------------------------------------------------------===//

#include "OnnxEvalUtil.h"

#include <cmath>
#include <functional>

using namespace mlir;
using namespace cleave;
using namespace cleave::testing;
namespace k = cleave::kernels;

namespace {

constexpr int32_t kFloat = onnx::TensorProto::FLOAT;

std::vector<float> samples() {
  std::vector<float> xs;
  for (float x : {-30.0f, -4.0f, -3.0f, -2.5f, -1.0f, -0.3f, 0.0f, 0.2f, 1.0f,
                  2.9f, 3.0f, 5.0f, 30.0f})
    xs.push_back(x);
  return xs;
}

double softplus(double x) { return std::log1p(std::exp(-std::fabs(x))) + std::max(x, 0.0); }

/// An output of the model and the definition it must match.
struct Reference {
  const char *output;
  std::function<double(double)> reference;
};

/// Imports `m` (input x of shape [1, n]), runs it on `xs` with the graph
/// evaluator and compares each output with its reference in double.
void expectMatchesReferences(ModelBuilder &m, const std::vector<float> &xs,
                             const std::vector<Reference> &cases,
                             double rtol) {
  int64_t n = static_cast<int64_t>(xs.size());
  MLIRContext ctx;
  Import import = m.import(ctx);
  ASSERT_TRUE(import.module) << import.allErrors();
  GraphEvaluator eval;
  eval.bindings["x"] = k::Tensor({1, n}, xs);
  auto results = eval.run(import.forward());
  ASSERT_TRUE(succeeded(results));
  ASSERT_EQ(results->size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    const k::Tensor &y = std::get<k::Tensor>((*results)[i]);
    for (int64_t j = 0; j < n; ++j) {
      double expected = cases[i].reference(xs[j]);
      EXPECT_NEAR(y[j], expected, rtol * std::max(1.0, std::fabs(expected)))
          << cases[i].output << "(" << xs[j] << ")";
    }
  }
}

TEST(OnnxActivations, MatchTheirDefinitions) {
  std::vector<float> xs = samples();
  int64_t n = static_cast<int64_t>(xs.size());
  ModelBuilder m;
  m.input("x", kFloat, {1, n});
  m.scalar("lo", -2.0f);
  m.scalar("hi", 3.0f);
  m.floats("slope", {1}, 0.25f);
  using Case = Reference;
  std::vector<Case> cases;
  m.node("Clip", "clip", {"x", "lo", "hi"}, {"clip"});
  cases.push_back({"clip", [](double x) { return std::clamp(x, -2.0, 3.0); }});
  m.node("Clip", "clip_min", {"x", "lo"}, {"clip_min"});
  cases.push_back({"clip_min", [](double x) { return std::max(x, -2.0); }});
  auto &hs = m.node("HardSigmoid", "hard_sigmoid", {"x"}, {"hard_sigmoid"});
  ModelBuilder::floatAttr(hs, "alpha", 0.3f);
  cases.push_back({"hard_sigmoid", [](double x) {
                     return std::clamp(double(0.3f) * x + 0.5, 0.0, 1.0);
                   }});
  m.node("HardSwish", "hard_swish", {"x"}, {"hard_swish"});
  cases.push_back({"hard_swish", [](double x) {
                     return x * std::clamp(x / 6 + 0.5, 0.0, 1.0);
                   }});
  auto &lr = m.node("LeakyRelu", "leaky_relu", {"x"}, {"leaky_relu"});
  ModelBuilder::floatAttr(lr, "alpha", 1.5f);
  cases.push_back({"leaky_relu", [](double x) { return x >= 0 ? x : 1.5 * x; }});
  m.node("PRelu", "prelu", {"x", "slope"}, {"prelu"});
  cases.push_back({"prelu", [](double x) { return x >= 0 ? x : 0.25 * x; }});
  auto &elu = m.node("Elu", "elu", {"x"}, {"elu"});
  ModelBuilder::floatAttr(elu, "alpha", 0.7f);
  cases.push_back({"elu", [](double x) {
                     return x > 0 ? x : double(0.7f) * (std::exp(x) - 1);
                   }});
  m.node("Softplus", "softplus", {"x"}, {"softplus"});
  cases.push_back({"softplus", softplus});
  auto &celu = m.node("Celu", "celu", {"x"}, {"celu"});
  ModelBuilder::floatAttr(celu, "alpha", 2.0f);
  cases.push_back({"celu", [](double x) {
                     return std::max(0.0, x) +
                            std::min(0.0, 2.0 * (std::exp(x / 2.0) - 1));
                   }});
  m.node("Selu", "selu", {"x"}, {"selu"});
  cases.push_back({"selu", [](double x) {
                     double alpha = 1.67326319217681884765625,
                            gamma = 1.05070102214813232421875;
                     return gamma * (x > 0 ? x : alpha * (std::exp(x) - 1));
                   }});
  m.node("Softsign", "softsign", {"x"}, {"softsign"});
  cases.push_back(
      {"softsign", [](double x) { return x / (1 + std::fabs(x)); }});
  m.node("Sign", "sign", {"x"}, {"sign"});
  cases.push_back({"sign", [](double x) { return (x > 0) - (x < 0); }});
  // Mish as exporters before opset 18 write it.
  m.node("Softplus", "mish_softplus", {"x"}, {"mish_sp"});
  m.node("Tanh", "mish_tanh", {"mish_sp"}, {"mish_t"});
  m.node("Mul", "mish", {"x", "mish_t"}, {"mish"});
  cases.push_back({"mish", [](double x) { return x * std::tanh(softplus(x)); }});
  for (const Case &c : cases)
    m.output(c.output, 2);
  {
    MLIRContext ctx;
    // PReLU's slope is learned.
    EXPECT_EQ(m.import(ctx).paramElements(/*trainable=*/true), 1);
  }
  expectMatchesReferences(m, xs, cases, 1e-5);
}

TEST(OnnxMath, TrigonometryRoundingAndModMatchTheirDefinitions) {
  std::vector<float> xs = {-2.5f, -1.5f, -0.9f, -0.5f, -0.3f, 0.0f,
                           0.4f,  0.5f,  0.9f,  1.5f,  1.6f,  2.5f};
  int64_t n = static_cast<int64_t>(xs.size());
  ModelBuilder m;
  m.input("x", kFloat, {1, n});
  m.floats("y", {1}, 0.7f);
  m.floats("unit", {1}, 0.39f);
  using Case = Reference;
  std::vector<Case> cases;
  auto unary = [&](const char *op, std::function<double(double)> f) {
    m.node(op, op, {"x"}, {op});
    cases.push_back({op, f});
  };
  unary("Sin", [](double x) { return std::sin(x); });
  unary("Cos", [](double x) { return std::cos(x); });
  unary("Tan", [](double x) { return std::tan(x); });
  unary("Atan", [](double x) { return std::atan(x); });
  unary("Floor", [](double x) { return std::floor(x); });
  unary("Ceil", [](double x) { return std::ceil(x); });
  unary("Round", [](double x) { return std::nearbyint(x); });
  // Asin and Acos on x scaled into [-1, 1].
  m.node("Mul", "scaled", {"x", "unit"}, {"xs"});
  m.node("Asin", "asin", {"xs"}, {"Asin"});
  cases.push_back({"Asin", [](double x) { return std::asin(double(float(x * 0.39f))); }});
  m.node("Acos", "acos", {"xs"}, {"Acos"});
  cases.push_back({"Acos", [](double x) { return std::acos(double(float(x * 0.39f))); }});
  m.node("Mod", "mod", {"x", "y"}, {"Mod"});
  cases.push_back({"Mod", [](double x) {
                     double r = std::fmod(x, 0.7);
                     return r != 0 && r < 0 ? r + 0.7 : r;
                   }});
  auto &fmod = m.node("Mod", "fmod", {"x", "y"}, {"FMod"});
  ModelBuilder::intAttr(fmod, "fmod", 1);
  cases.push_back({"FMod", [](double x) { return std::fmod(x, 0.7); }});
  for (const Case &c : cases)
    m.output(c.output, 2);
  expectMatchesReferences(m, xs, cases, 2e-6);
}

TEST(OnnxActivations, CeluNeedsAPositiveAlpha) {
  ModelBuilder m;
  m.input("x", kFloat, {4});
  auto &celu = m.node("Celu", "celu", {"x"}, {"y"});
  ModelBuilder::floatAttr(celu, "alpha", 0.0f);
  m.output("y", 1);
  expectImportError(m, "alpha must be positive, got 0", "Celu alpha = 0");
}

TEST(OnnxActivations, GlobalMaxPoolOverTheSpatialAxes) {
  ModelBuilder m;
  m.input("x", kFloat, {2, 3, 4, 5});
  m.node("GlobalMaxPool", "pool", {"x"}, {"y"});
  m.output("y", 4);
  k::Tensor x({2, 3, 4, 5});
  for (int64_t i = 0; i < x.numElements(); ++i)
    x[i] = float((i * 37) % 101);
  std::vector<k::Tensor> out = runWithX(m, x);
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].shape(), (k::Shape{2, 3, 1, 1}));
  for (int64_t c = 0; c < 6; ++c) {
    float best = -1;
    for (int64_t e = 0; e < 20; ++e)
      best = std::max(best, x[c * 20 + e]);
    EXPECT_EQ(out[0][c], best) << c;
  }
  ModelBuilder flat;
  flat.input("x", kFloat, {2, 3});
  flat.node("GlobalMaxPool", "pool", {"x"}, {"y"});
  flat.output("y", 2);
  expectImportError(flat, "expects [N, C, spatial...]", "a 2-D input");
}

TEST(OnnxActivations, MaxUnpoolPutsOverlappingMaximaBackOnce) {
  // 2x2 windows at stride 1 over 3x3: the centre (9) is every window's
  // maximum, so its index comes 4 times; the scatter's sum is divided by
  // that count, not left at 36.
  ModelBuilder m;
  m.input("x", kFloat, {1, 1, 3, 3});
  onnx::NodeProto &pool = m.node("MaxPool", "pool", {"x"}, {"p", "i"});
  ModelBuilder::intsAttr(pool, "kernel_shape", {2, 2});
  onnx::NodeProto &unpool = m.node("MaxUnpool", "unpool", {"p", "i"}, {"y"});
  ModelBuilder::intsAttr(unpool, "kernel_shape", {2, 2});
  m.output("y", 4);
  k::Tensor x({1, 1, 3, 3});
  for (int64_t i = 0; i < 9; ++i)
    x[i] = i == 4 ? 9.0f : float(i % 4);
  std::vector<k::Tensor> out = runWithX(m, x);
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].shape(), (k::Shape{1, 1, 3, 3}));
  for (int64_t i = 0; i < 9; ++i)
    EXPECT_EQ(out[0][i], i == 4 ? 9.0f : 0.0f) << i;
}

TEST(OnnxActivations, OldOpsetsAreConvertedAndNewerOnesRefused) {
  // Opset 6's Elu (its node tests are opset 6) goes through libonnx's
  // version converter to 17; opset 29 is past what cleave knows and
  // refused by name (18 to 28 are rewritten in their opset-17 form:
  // OnnxOpset18Test, OnnxNewerOpsetsTest).
  ModelBuilder old(6);
  old.input("x", kFloat, {1, 3});
  old.node("Elu", "elu", {"x"}, {"y"});
  old.output("y", 2);
  k::Tensor x({1, 3}, std::vector<float>{-1.0f, 0.0f, 2.0f});
  std::vector<k::Tensor> out = runWithX(old, x);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_NEAR(out[0][0], std::exp(-1.0) - 1, 1e-6);
  EXPECT_EQ(out[0][2], 2.0f);
  ModelBuilder newer(29);
  newer.input("x", kFloat, {1, 3});
  newer.node("Elu", "elu", {"x"}, {"y"});
  newer.output("y", 2);
  expectImportError(newer,
                    "opset 29 is not supported (opsets 1 to 28 are; opset 28 "
                    "is the newest this cleave knows: export at opset 28 or "
                    "below)",
                    "opset 29");
}

TEST(OnnxActivations, IntegerInputsAreRefused) {
  ModelBuilder m;
  m.input("x", onnx::TensorProto::INT64, {4});
  m.node("Softplus", "softplus", {"x"}, {"y"});
  m.output("y", 1, onnx::TensorProto::INT64);
  MLIRContext ctx;
  Import import = m.import(ctx);
  EXPECT_FALSE(import.module);
  EXPECT_NE(import.allErrors().find("must be floating point"),
            std::string::npos)
      << import.allErrors();
}

} // namespace

namespace {

/// Imports `m`, runs it on x = 0, 1, 2, ... of `shape`, returns the
/// outputs.
std::vector<k::Tensor> runOnIota(ModelBuilder &m, const k::Shape &shape) {
  k::Tensor x(shape);
  for (int64_t i = 0; i < x.numElements(); ++i)
    x[i] = float(i);
  return runWithX(m, x);
}

TEST(OnnxLayoutOps, PadTileDepthToSpace) {
  ModelBuilder m;
  m.input("x", kFloat, {1, 8, 2, 3});
  m.ints("pads", {0, 0, 1, 0, 0, 0, 0, 2});
  m.scalar("pad_value", -1.0f);
  m.ints("repeats", {1, 1, 2, 3});
  m.node("Pad", "pad", {"x", "pads", "pad_value"}, {"pad"});
  m.node("Tile", "tile", {"x", "repeats"}, {"tile"});
  auto &dcr = m.node("DepthToSpace", "d2s", {"x"}, {"dcr"});
  ModelBuilder::intAttr(dcr, "blocksize", 2);
  auto &crd = m.node("DepthToSpace", "d2s_crd", {"x"}, {"crd"});
  ModelBuilder::intAttr(crd, "blocksize", 2);
  ModelBuilder::stringAttr(crd, "mode", "CRD");
  for (const char *o : {"pad", "tile", "dcr", "crd"})
    m.output(o, 4);
  std::vector<k::Tensor> out = runOnIota(m, {1, 8, 2, 3});
  ASSERT_EQ(out.size(), 4u);
  auto x = [](int64_t c, int64_t h, int64_t w) { return float((c * 2 + h) * 3 + w); };
  // Pad: one row before on H, two columns after on W, filled with -1.
  ASSERT_EQ(out[0].shape(), (k::Shape{1, 8, 3, 5}));
  for (int64_t c = 0; c < 8; ++c)
    for (int64_t h = 0; h < 3; ++h)
      for (int64_t w = 0; w < 5; ++w)
        EXPECT_EQ(out[0][(c * 3 + h) * 5 + w],
                  h == 0 || w >= 3 ? -1.0f : x(c, h - 1, w));
  // Tile: y[c, h, w] = x[c, h % 2, w % 3].
  ASSERT_EQ(out[1].shape(), (k::Shape{1, 8, 4, 9}));
  for (int64_t c = 0; c < 8; ++c)
    for (int64_t h = 0; h < 4; ++h)
      for (int64_t w = 0; w < 9; ++w)
        EXPECT_EQ(out[1][(c * 4 + h) * 9 + w], x(c, h % 2, w % 3));
  // DepthToSpace (ONNX's reference): DCR takes channel (bh * 2 + bw) * 2
  // + c, CRD takes c * 4 + bh * 2 + bw, for output (c, 2h + bh, 2w + bw).
  ASSERT_EQ(out[2].shape(), (k::Shape{1, 2, 4, 6}));
  ASSERT_EQ(out[3].shape(), (k::Shape{1, 2, 4, 6}));
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t h = 0; h < 4; ++h)
      for (int64_t w = 0; w < 6; ++w) {
        int64_t bh = h % 2, bw = w % 2;
        EXPECT_EQ(out[2][(c * 4 + h) * 6 + w],
                  x((bh * 2 + bw) * 2 + c, h / 2, w / 2));
        EXPECT_EQ(out[3][(c * 4 + h) * 6 + w],
                  x(c * 4 + bh * 2 + bw, h / 2, w / 2));
      }
}

TEST(OnnxLayoutOps, InstanceNormalizationReductionsAndModInShapes) {
  ModelBuilder m;
  m.input("x", kFloat, {2, 3, 4});
  m.floats("gamma", {3}, 2.0f);
  m.floats("beta", {3}, 0.5f);
  auto &in = m.node("InstanceNormalization", "norm", {"x", "gamma", "beta"},
                    {"norm"});
  ModelBuilder::floatAttr(in, "epsilon", 1e-5f);
  // Mod in shape arithmetic, integers taking the divisor's sign: the
  // reshape target [2, ((-8) mod 5) * 6] = [2, 12].
  m.ints("seven", {-8});
  m.ints("five", {5});
  m.ints("six", {6});
  m.ints("two", {2});
  m.node("Mod", "mod", {"seven", "five"}, {"m"});
  m.node("Mul", "mul", {"m", "six"}, {"cols"});
  ModelBuilder::intAttr(m.node("Concat", "cat", {"two", "cols"}, {"target"}),
                        "axis", 0);
  m.node("Reshape", "flat", {"x", "target"}, {"flat"});
  auto &l2 = m.node("ReduceL2", "l2", {"x"}, {"l2"});
  ModelBuilder::intsAttr(l2, "axes", {-1});
  ModelBuilder::intAttr(l2, "keepdims", 0);
  auto &ss = m.node("ReduceSumSquare", "ss", {"x"}, {"ss"});
  ModelBuilder::intsAttr(ss, "axes", {-1});
  ModelBuilder::intAttr(ss, "keepdims", 0);
  m.output("norm", 3);
  m.output("flat", 2);
  m.output("l2", 2);
  m.output("ss", 2);
  std::vector<k::Tensor> out = runOnIota(m, {2, 3, 4});
  ASSERT_EQ(out.size(), 4u);
  // Each (n, c) row is 4 consecutive values: mean +1.5, variance 1.25.
  for (int64_t i = 0; i < 24; ++i) {
    double v = (i % 4 - 1.5) / std::sqrt(1.25 + 1e-5);
    EXPECT_NEAR(out[0][i], 2.0 * v + 0.5, 1e-5) << i;
  }
  EXPECT_EQ(out[1].shape(), (k::Shape{2, 12}));
  // ReduceL2 and ReduceSumSquare over the last axis of x = 0..23.
  for (int64_t r = 0; r < 6; ++r) {
    double sum = 0;
    for (int64_t j = 0; j < 4; ++j)
      sum += double(r * 4 + j) * (r * 4 + j);
    EXPECT_NEAR(out[2][r], std::sqrt(sum), 1e-4 * std::sqrt(sum)) << r;
    EXPECT_NEAR(out[3][r], sum, 1e-5 * sum) << r;
  }
  // Gamma and beta are trained.
  MLIRContext ctx;
  EXPECT_EQ(m.import(ctx).paramElements(/*trainable=*/true), 6);
}

TEST(OnnxLayoutOps, TriluOfRunTimeAndImportTimeValues) {
  // Of x (run time): upper from diagonal 1, lower from diagonal -1. Of a
  // constant (an exporter's causal mask), computed at import.
  ModelBuilder m;
  onnx::NodeProto &c = m.node("Constant", "mask_source", {}, {"ones"});
  onnx::AttributeProto *value = c.add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(onnx::TensorProto::INT64);
  for (int64_t d : {2, 2})
    value->mutable_t()->add_dims(d);
  for (int64_t v : {5, 6, 7, 8})
    value->mutable_t()->add_int64_data(v);
  ModelBuilder::intAttr(m.node("Trilu", "mask", {"ones"}, {"mask"}), "upper",
                        0);
  ModelBuilder::intAttr(m.node("Cast", "mask_f", {"mask"}, {"maskf"}), "to",
                        onnx::TensorProto::FLOAT);
  m.input("x", kFloat, {2, 3, 4});
  m.ints("one", {1});
  m.ints("minus_one", {-1});
  m.node("Trilu", "upper", {"x", "one"}, {"upper"});
  ModelBuilder::intAttr(m.node("Trilu", "lower", {"x", "minus_one"}, {"lower"}),
                        "upper", 0);
  m.output("upper", 3);
  m.output("lower", 3);
  m.output("maskf", 2);
  std::vector<k::Tensor> out = runOnIota(m, {2, 3, 4});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[2].values(), (std::vector<float>{5, 0, 7, 8}));
  for (int64_t e = 0; e < 24; ++e) {
    int64_t i = (e / 4) % 3, j = e % 4;
    EXPECT_EQ(out[0][e], j - i >= 1 ? float(e) : 0.0f) << e;
    EXPECT_EQ(out[1][e], j - i <= -1 ? float(e) : 0.0f) << e;
  }
}

TEST(OnnxLayoutOps, BadInputsAreErrors) {
  struct Bad {
    const char *op;
    const char *message;
  };
  for (Bad bad : {Bad{"Pad", "mode 'wrap' is not supported"},
                  Bad{"PadReflect", "reflect pads of 2 and 2 need more than "
                                    "2 elements along axis 2"},
                  Bad{"DepthToSpace", "blocksize^2 divides"},
                  Bad{"Mod", "operand element types differ: 'i64' vs 'f32'"}}) {
    ModelBuilder m;
    m.input("x", kFloat, {1, 3, 2, 2});
    m.ints("pads", {0, 0, 1, 1, 0, 0, 1, 1});
    m.ints("wide", {0, 0, 2, 0, 0, 0, 2, 0});
    m.floats("d", {1}, 2.0f);
    onnx::NodeProto *node = nullptr;
    if (std::string(bad.op) == "Pad") {
      node = &m.node("Pad", "p", {"x", "pads"}, {"y"});
      ModelBuilder::stringAttr(*node, "mode", "wrap");
    } else if (std::string(bad.op) == "PadReflect") {
      node = &m.node("Pad", "p", {"x", "wide"}, {"y"});
      ModelBuilder::stringAttr(*node, "mode", "reflect");
    } else if (std::string(bad.op) == "DepthToSpace") {
      node = &m.node("DepthToSpace", "p", {"x"}, {"y"});
      ModelBuilder::intAttr(*node, "blocksize", 2);
    } else {
      // An integer dividend and a float divisor, both known at run time
      // only (ONNX requires one type; integers take graph.mod).
      m.input("xi", onnx::TensorProto::INT64, {4});
      m.input("df", kFloat, {4});
      node = &m.node("Mod", "p", {"xi", "df"}, {"y"});
    }
    m.output("y", std::string(bad.op) == "Mod" ? 1 : 4);
    expectImportError(m, bad.message, bad.op);
  }
}

} // namespace

namespace {

TEST(OnnxConvolutionOps, OneDimensionalConvAndPoolAsTwoDimensional) {
  // Conv1d (a filter of 0.5s, kernel 3, stride 2, pads 1) then a 1-D max
  // pool (kernel 2), on x = 0 .. 9 over one channel.
  ModelBuilder m;
  m.input("x", kFloat, {1, 1, 10});
  m.floats("w", {2, 1, 3}, 0.5f);
  auto &conv = m.node("Conv", "c", {"x", "w"}, {"c"});
  ModelBuilder::intsAttr(conv, "strides", {2});
  ModelBuilder::intsAttr(conv, "pads", {1, 1});
  auto &pool = m.node("MaxPool", "p", {"c"}, {"y"});
  ModelBuilder::intsAttr(pool, "kernel_shape", {2});
  m.output("c", 3);
  m.output("y", 3);
  std::vector<k::Tensor> out = runOnIota(m, {1, 1, 10});
  ASSERT_EQ(out.size(), 2u);
  ASSERT_EQ(out[0].shape(), (k::Shape{1, 2, 5}));
  for (int64_t o = 0; o < 5; ++o) {
    double sum = 0;
    for (int64_t t = 0; t < 3; ++t) {
      int64_t i = 2 * o - 1 + t;
      if (i >= 0 && i < 10)
        sum += 0.5 * i;
    }
    EXPECT_NEAR(out[0][o], sum, 1e-5) << o;
    EXPECT_NEAR(out[0][5 + o], sum, 1e-5) << o;
  }
  ASSERT_EQ(out[1].shape(), (k::Shape{1, 2, 4}));
  for (int64_t o = 0; o < 4; ++o)
    EXPECT_NEAR(out[1][o], std::max(out[0][o], out[0][o + 1]), 1e-6);

  for (auto [input, filter, message] :
       {std::tuple<k::Shape, k::Shape, const char *>{
            {1, 1, 4, 4, 4, 4}, {1, 1, 3, 3, 3, 3}, "3-D (NCDHW) inputs are "
                                                    "supported, got"},
        {{1, 1, 10}, {1, 1, 3, 3}, "the filter must have rank 3"}}) {
    ModelBuilder b;
    b.input("x", kFloat, input);
    b.floats("w", filter, 0.5f);
    b.node("Conv", "c", {"x", "w"}, {"y"});
    b.output("y", int(input.size()));
    expectImportError(b, message, message);
  }
}

} // namespace

namespace {

/// A model of one TopK node over an input x of `shape`.
ModelBuilder topKModel(const std::vector<int64_t> &shape, int64_t k,
                       int sorted = 1) {
  ModelBuilder m;
  m.input("x", kFloat, shape);
  m.ints("k", {k});
  auto &node = m.node("TopK", "t", {"x", "k"}, {"v", "i"});
  ModelBuilder::intAttr(node, "sorted", sorted);
  m.output("v", 2);
  m.output("i", 2, onnx::TensorProto::INT64);
  return m;
}

TEST(OnnxIndexOps, TopKValuesIndicesAndRefusals) {
  // The two largest of each row of [3, 4], and their indices.
  ModelBuilder m = topKModel({3, 4}, 2);
  MLIRContext ctx;
  Import import = m.import(ctx);
  ASSERT_TRUE(import.module) << import.allErrors();
  k::Tensor x({3, 4});
  for (int64_t e = 0; e < 12; ++e)
    x[e] = float(e % 4 == 1 ? 20 + e : e); // column 1 is each row's largest
  GraphEvaluator eval;
  eval.bindings["x"] = x;
  auto results = eval.run(import.forward());
  ASSERT_TRUE(succeeded(results));
  const auto &v = std::get<k::Tensor>((*results)[0]);
  const auto &i = std::get<k::IndexTensor>((*results)[1]);
  for (int64_t r = 0; r < 3; ++r) {
    EXPECT_EQ(v[r * 2], 20 + r * 4 + 1);
    EXPECT_EQ(v[r * 2 + 1], r * 4 + 3);
    EXPECT_EQ(i[r * 2], 1);
    EXPECT_EQ(i[r * 2 + 1], 3);
  }

  ModelBuilder tooMany = topKModel({3, 4}, 5), none = topKModel({3, 4}, 0),
               unsorted = topKModel({3, 4}, 2, 0),
               wide = topKModel({1, 100}, 65);
  expectImportError(tooMany, "k must be one value in [1, 4]", "k = 5");
  expectImportError(none, "k must be one value in [1, 4]", "k = 0");
  expectImportError(unsorted, "sorted = 0 is not supported", "sorted = 0");
  expectImportError(wide,
                    "k = 65: TopK is composed of k passes over the input, at "
                    "most 64",
                    "k = 65");
}

} // namespace
