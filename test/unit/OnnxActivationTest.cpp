//===- OnnxActivationTest.cpp - ONNX activations against their formulas ---===//
//
// Each activation imported from a small ONNX model and run by the graph
// evaluator, against the operator's definition in the ONNX spec computed
// in double, over values from -30 to 30 (Softplus and Mish must not
// overflow where e^x would).
//
//===----------------------------------------------------------------------===//

#include "OnnxTestUtil.h"

#include "cleave/Evaluator/GraphEvaluator.h"

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

TEST(OnnxActivations, MatchTheirDefinitions) {
  std::vector<float> xs = samples();
  int64_t n = static_cast<int64_t>(xs.size());
  ModelBuilder m;
  m.input("x", kFloat, {1, n});
  m.scalar("lo", -2.0f);
  m.scalar("hi", 3.0f);
  m.floats("slope", {1}, 0.25f);
  struct Case {
    const char *output;
    std::function<double(double)> reference;
  };
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
  // Mish as exporters before opset 18 write it.
  m.node("Softplus", "mish_softplus", {"x"}, {"mish_sp"});
  m.node("Tanh", "mish_tanh", {"mish_sp"}, {"mish_t"});
  m.node("Mul", "mish", {"x", "mish_t"}, {"mish"});
  cases.push_back({"mish", [](double x) { return x * std::tanh(softplus(x)); }});
  for (const Case &c : cases)
    m.output(c.output, 2);

  MLIRContext ctx;
  Import import = m.import(ctx);
  ASSERT_TRUE(import.module) << import.allErrors();
  // PReLU's slope is learned.
  EXPECT_EQ(import.paramElements(/*trainable=*/true), 1);
  GraphEvaluator eval;
  eval.bindings["x"] = k::Tensor({1, n}, xs);
  auto results = eval.run(import.forward());
  ASSERT_TRUE(succeeded(results));
  ASSERT_EQ(results->size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    const k::Tensor &y = std::get<k::Tensor>((*results)[i]);
    for (int64_t j = 0; j < n; ++j) {
      double expected = cases[i].reference(xs[j]);
      EXPECT_NEAR(y[j], expected, 1e-5 * std::max(1.0, std::fabs(expected)))
          << cases[i].output << "(" << xs[j] << ")";
    }
  }
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
