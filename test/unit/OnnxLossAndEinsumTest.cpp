//===- OnnxLossAndEinsumTest.cpp - ONNX losses and Einsum by definition ---===//
//
// NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss and Einsum imported from small
// ONNX models and run by the graph evaluator, against the ONNX spec's
// definitions computed in double: weights, ignore_index and the three
// reductions; and the inputs they refuse.
//
//===----------------------------------------------------------------------===//

#include "OnnxEvalUtil.h"

#include <cmath>

using namespace mlir;
using namespace cleave;
using namespace cleave::testing;
namespace k = cleave::kernels;

namespace {

constexpr int32_t kFloat = onnx::TensorProto::FLOAT;
constexpr int64_t kN = 3, kC = 4;
const std::vector<float> kScores = {0.3f, -1.2f, 2.0f,  0.5f, 1.1f, 0.0f,
                                    -0.4f, 0.9f, -2.0f, 0.7f, 0.1f, 1.5f};
const std::vector<int64_t> kTargets = {2, 1, 3};

std::vector<double> logSoftmax(int64_t n) {
  double m = -1e300, sum = 0;
  for (int64_t c = 0; c < kC; ++c)
    m = std::max(m, double(kScores[n * kC + c]));
  for (int64_t c = 0; c < kC; ++c)
    sum += std::exp(kScores[n * kC + c] - m);
  std::vector<double> out;
  for (int64_t c = 0; c < kC; ++c)
    out.push_back(kScores[n * kC + c] - m - std::log(sum));
  return out;
}

/// The model's outputs on the scores.
std::vector<k::Tensor> run(ModelBuilder &m) {
  return runWithX(m, k::Tensor({kN, kC}, kScores));
}

TEST(OnnxLosses, NegativeLogLikelihoodWeightsIgnoreAndReductions) {
  // The scores as log-probabilities (NLL reads them as given), class
  // weights 2, class 1 ignored: sample 1 (target 1) drops out.
  ModelBuilder m;
  m.input("x", kFloat, {kN, kC});
  m.ints("t", kTargets);
  m.floats("w", {kC}, 2.0f);
  for (const char *reduction : {"none", "sum", "mean"}) {
    auto &node = m.node("NegativeLogLikelihoodLoss", reduction,
                        {"x", "t", "w"}, {});
    node.add_output(reduction);
    ModelBuilder::stringAttr(node, "reduction", reduction);
    ModelBuilder::intAttr(node, "ignore_index", 1);
    m.output(reduction, std::string(reduction) == "none" ? 1 : 0);
  }
  std::vector<k::Tensor> y = run(m);
  ASSERT_EQ(y.size(), 3u);
  double sum = 0, weight = 0;
  for (int64_t n = 0; n < kN; ++n) {
    double w = kTargets[n] == 1 ? 0.0 : 2.0;
    double loss = -w * kScores[n * kC + kTargets[n]];
    EXPECT_NEAR(y[0][n], loss, 1e-6) << "none, sample " << n;
    sum += loss;
    weight += w;
  }
  EXPECT_NEAR(y[1][0], sum, 1e-5);
  EXPECT_NEAR(y[2][0], sum / weight, 1e-6);
}

TEST(OnnxLosses, SoftmaxCrossEntropyAndItsLogProbabilities) {
  ModelBuilder m;
  m.input("x", kFloat, {kN, kC});
  m.ints("t", kTargets);
  m.node("SoftmaxCrossEntropyLoss", "sce", {"x", "t"}, {"loss", "logp"});
  m.output("loss", 0);
  m.output("logp", 2);
  std::vector<k::Tensor> y = run(m);
  ASSERT_EQ(y.size(), 2u);
  double mean = 0;
  for (int64_t n = 0; n < kN; ++n) {
    std::vector<double> logp = logSoftmax(n);
    for (int64_t c = 0; c < kC; ++c)
      EXPECT_NEAR(y[1][n * kC + c], logp[c], 1e-6);
    mean -= logp[kTargets[n]] / kN;
  }
  EXPECT_NEAR(y[0][0], mean, 1e-6);
}

TEST(OnnxLosses, BadInputsAreErrors) {
  struct Bad {
    const char *what;
    const char *message;
  };
  for (Bad bad : {Bad{"float target", "the target must hold integer classes"},
                  Bad{"short target", "the target 'tensor<2xi64>' must be [3]"},
                  Bad{"weights", "the weights must be [4]"},
                  Bad{"reduction", "reduction 'max' is not none, sum or mean"},
                  Bad{"rank", "the input must be [N, C, d...]"}}) {
    std::string what = bad.what;
    ModelBuilder m;
    m.input("x", kFloat, what == "rank" ? std::vector<int64_t>{kC}
                                        : std::vector<int64_t>{kN, kC});
    if (what == "float target")
      m.floats("t", {kN}, 1.0f);
    else if (what == "short target")
      m.ints("t", {1, 2});
    else
      m.ints("t", what == "rank" ? std::vector<int64_t>{1} : kTargets);
    m.floats("w", {what == "weights" ? kC + 1 : kC}, 1.0f);
    auto &node =
        m.node("NegativeLogLikelihoodLoss", "nll", {"x", "t", "w"}, {"y"});
    if (what == "reduction")
      ModelBuilder::stringAttr(node, "reduction", "max");
    m.output("y", 0);
    expectImportError(m, std::string("node 'nll' (NegativeLogLikelihoodLoss): ") +
                             bad.message,
                      bad.what);
  }
}

} // namespace

namespace {

TEST(OnnxEinsum, ContractsAndRefusesWhatItCannot) {
  // "ij,kj->ik" (x against a constant matrix of 0.5s): each output is half
  // the row's sum.
  ModelBuilder m;
  m.input("x", kFloat, {kN, kC});
  m.floats("w", {2, kC}, 0.5f);
  auto &node = m.node("Einsum", "e", {"x", "w"}, {"y"});
  ModelBuilder::stringAttr(node, "equation", "ij,kj->ik");
  m.output("y", 2);
  std::vector<k::Tensor> y = run(m);
  ASSERT_EQ(y.size(), 1u);
  for (int64_t n = 0; n < kN; ++n) {
    double row = 0;
    for (int64_t c = 0; c < kC; ++c)
      row += kScores[n * kC + c];
    EXPECT_NEAR(y[0][n * 2], 0.5 * row, 1e-5);
    EXPECT_NEAR(y[0][n * 2 + 1], 0.5 * row, 1e-5);
  }
  struct Bad {
    const char *equation;
    const char *message;
  };
  for (Bad bad : {Bad{"...j...,kj->k", "operand 0's ellipsis does not fit "
                                         "its rank"},
                  Bad{"ii,kj->ik", "index 'i' repeats within an operand over "
                                   "sizes"},
                  Bad{"ij,kl->iz", "output index 'z' names no operand's"},
                  Bad{"ij,jk->ik", "index 'j' is 4 in operand 0 and 2 in "
                                   "operand 1"},
                  Bad{"ijk,kj->ik", "operand 0 has 3 indices"}}) {
    ModelBuilder b;
    b.input("x", kFloat, {kN, kC});
    b.floats("w", {2, kC}, 0.5f);
    auto &e = b.node("Einsum", "e", {"x", "w"}, {"y"});
    ModelBuilder::stringAttr(e, "equation", bad.equation);
    b.output("y", 2);
    expectImportError(b, bad.message, bad.equation);
  }
}

} // namespace
