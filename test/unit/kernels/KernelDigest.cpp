//===- KernelDigest.cpp - Bits of every vector-cloned kernel's output -----===//
//
// Runs each kernel marked CLEAVE_VECTOR_CLONES (runtime/kernels/src/
// VectorClones.h) on fixed pseudo-random inputs and prints one line per
// case: its name and a hash of its output bits. The test
// kernels.VectorClonesMatchBaseline builds this program twice, against the
// kernel library (whose loader picks the widest clone this CPU runs) and
// against the same sources compiled for the baseline alone, and requires the
// two listings to be equal: the clones round exactly as the baseline does.
//
// Sizes are odd so that every vector loop also runs its scalar remainder.
//
//===----------------------------------------------------------------------===//

#include "cleave/runtime/kernels/Attention.h"
#include "cleave/runtime/kernels/Elementwise.h"
#include "cleave/runtime/kernels/Loss.h"
#include "cleave/runtime/kernels/Normalization.h"
#include "cleave/runtime/kernels/Optimizer.h"

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace k = cleave::kernels;

namespace {

/// Uniform floats in [lo, hi) from a counter-based generator.
std::vector<float> values(int64_t n, uint64_t seed, float lo, float hi) {
  std::vector<float> out(n);
  for (int64_t i = 0; i < n; ++i) {
    uint64_t z = seed * 0x9E3779B97F4A7C15ull + (i + 1) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 31)) * 0x94D049BB133111EBull;
    z ^= z >> 29;
    out[i] = lo + (hi - lo) * static_cast<float>((z >> 40) * 0x1p-24);
  }
  return out;
}

/// FNV-1a over the bytes of `data`.
uint64_t digest(const std::vector<float> &data) {
  uint64_t h = 1469598103934665603ull;
  const unsigned char *p = reinterpret_cast<const unsigned char *>(data.data());
  for (size_t i = 0; i < data.size() * sizeof(float); ++i)
    h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

void print(const std::string &name, const std::vector<float> &data) {
  std::printf("%-32s %016" PRIx64 "\n", name.c_str(), digest(data));
}

k::ConstTensorRef view(const std::vector<float> &v, k::Shape shape) {
  return {v.data(), std::move(shape)};
}
k::TensorRef view(std::vector<float> &v, k::Shape shape) {
  return {v.data(), std::move(shape)};
}

constexpr int64_t kRows = 37, kCols = 203, kN = kRows * kCols;

void unaryCases() {
  const char *names[] = {"neg",     "exp",  "log",  "sqrt",
                         "rsqrt",   "relu", "tanh", "erf",
                         "sigmoid", "silu", "gelu", "gelu_tanh"};
  k::UnaryOp ops[] = {
      k::UnaryOp::Neg,  k::UnaryOp::Exp,   k::UnaryOp::Log,
      k::UnaryOp::Sqrt, k::UnaryOp::Rsqrt, k::UnaryOp::Relu,
      k::UnaryOp::Tanh, k::UnaryOp::Erf,   k::UnaryOp::Sigmoid,
      k::UnaryOp::Silu, k::UnaryOp::Gelu,  k::UnaryOp::GeluTanh};
  std::vector<float> wide = values(kN, 1, -12.0f, 12.0f);
  std::vector<float> positive = values(kN, 2, 0.01f, 9.0f);
  std::vector<float> grad = values(kN, 3, -1.0f, 1.0f);
  for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); ++i) {
    bool needsPositive = ops[i] == k::UnaryOp::Log ||
                         ops[i] == k::UnaryOp::Sqrt ||
                         ops[i] == k::UnaryOp::Rsqrt;
    const std::vector<float> &in = needsPositive ? positive : wide;
    std::vector<float> out(kN), dIn(kN);
    k::unary(ops[i], view(in, {kN}), view(out, {kN}));
    print(std::string("unary.") + names[i], out);
    k::unaryBackward(ops[i], view(in, {kN}), view(grad, {kN}), view(dIn, {kN}));
    print(std::string("unary_backward.") + names[i], dIn);
  }
}

void binaryCases() {
  const char *names[] = {"add", "sub", "mul", "div", "pow", "max", "min"};
  k::BinaryOp ops[] = {k::BinaryOp::Add, k::BinaryOp::Sub, k::BinaryOp::Mul,
                       k::BinaryOp::Div, k::BinaryOp::Pow, k::BinaryOp::Max,
                       k::BinaryOp::Min};
  std::vector<float> lhs = values(kN, 4, 0.1f, 3.0f);
  std::vector<float> row = values(kCols, 5, 0.1f, 2.0f);
  std::vector<float> dOut = values(kN, 6, -1.0f, 1.0f);
  for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); ++i) {
    // A full tensor with a broadcast row: the common bias-like case.
    std::vector<float> out(kN), dLhs(kN), dRhs(kCols);
    k::binary(ops[i], view(lhs, {kRows, kCols}), view(row, {kCols}),
              view(out, {kRows, kCols}));
    print(std::string("binary.") + names[i], out);
    k::binaryBackward(ops[i], view(lhs, {kRows, kCols}), view(row, {kCols}),
                      view(dOut, {kRows, kCols}), view(dLhs, {kRows, kCols}),
                      view(dRhs, {kCols}));
    print(std::string("binary_backward.lhs.") + names[i], dLhs);
    print(std::string("binary_backward.rhs.") + names[i], dRhs);
  }
}

void normalizationCases() {
  std::vector<float> in = values(kN, 7, -3.0f, 3.0f);
  std::vector<float> scale = values(kCols, 8, 0.5f, 1.5f);
  std::vector<float> bias = values(kCols, 9, -0.5f, 0.5f);
  std::vector<float> dOut = values(kN, 10, -1.0f, 1.0f);
  std::vector<float> out(kN), dIn(kN), dScale(kCols), dBias(kCols);
  k::layerNorm(view(in, {kRows, kCols}), view(scale, {kCols}),
               view(bias, {kCols}), 1, 1e-5, view(out, {kRows, kCols}));
  print("layer_norm", out);
  k::layerNormBackward(view(in, {kRows, kCols}), view(scale, {kCols}), 1, 1e-5,
                       view(dOut, {kRows, kCols}), view(dIn, {kRows, kCols}),
                       view(dScale, {kCols}), view(dBias, {kCols}));
  print("layer_norm_backward.in", dIn);
  print("layer_norm_backward.scale", dScale);
  print("layer_norm_backward.bias", dBias);
  k::rmsNorm(view(in, {kRows, kCols}), view(scale, {kCols}), 1, 1e-6,
             view(out, {kRows, kCols}));
  print("rms_norm", out);
  k::rmsNormBackward(view(in, {kRows, kCols}), view(scale, {kCols}), 1, 1e-6,
                     view(dOut, {kRows, kCols}), view(dIn, {kRows, kCols}),
                     view(dScale, {kCols}));
  print("rms_norm_backward.in", dIn);
  print("rms_norm_backward.scale", dScale);
}

void softmaxCases() {
  std::vector<float> in = values(kN, 11, -8.0f, 8.0f);
  std::vector<float> dOut = values(kN, 12, -1.0f, 1.0f);
  std::vector<float> out(kN), dIn(kN);
  k::softmax(view(in, {kRows, kCols}), 1, false, view(out, {kRows, kCols}));
  print("softmax.last_axis", out);
  k::softmaxBackward(view(out, {kRows, kCols}), view(dOut, {kRows, kCols}), 1,
                     view(dIn, {kRows, kCols}));
  print("softmax_backward.last_axis", dIn);
  k::softmax(view(in, {kRows, kCols}), 0, false, view(out, {kRows, kCols}));
  print("softmax.strided_axis", out);
  k::softmaxBackward(view(out, {kRows, kCols}), view(dOut, {kRows, kCols}), 0,
                     view(dIn, {kRows, kCols}));
  print("softmax_backward.strided_axis", dIn);
  k::softmax(view(in, {1, kRows, kRows}), 2, true,
             view(out, {1, kRows, kRows}));
  out.resize(kRows * kRows);
  print("softmax.causal", out);
}

void lossCases() {
  std::vector<float> logits = values(kN, 13, -5.0f, 5.0f);
  std::vector<int64_t> labels(kRows);
  for (int64_t r = 0; r < kRows; ++r)
    labels[r] = r % 5 == 4 ? -100 : (r * 31) % kCols;
  std::vector<float> loss(1), one(1, 1.0f), dLogits(kN);
  k::IndexRef labelView{labels.data(), {kRows}};
  k::crossEntropy(view(logits, {kRows, kCols}), labelView, -100,
                  view(loss, {}));
  print("cross_entropy", loss);
  k::crossEntropyBackward(view(logits, {kRows, kCols}), labelView, -100,
                          view(one, {}), view(dLogits, {kRows, kCols}));
  print("cross_entropy_backward", dLogits);
}

void optimizerCases() {
  std::vector<float> grad = values(kN, 14, -1.0f, 1.0f);
  std::vector<float> param = values(kN, 15, -1.0f, 1.0f);
  std::vector<float> m(kN), v(kN);
  k::AdamWOptions adamw;
  for (int64_t step = 1; step <= 3; ++step)
    k::adamwStep(view(param, {kN}), view(grad, {kN}), view(m, {kN}),
                 view(v, {kN}), step, adamw);
  print("adamw.param", param);
  print("adamw.m", m);
  print("adamw.v", v);
  param = values(kN, 15, -1.0f, 1.0f);
  std::vector<float> buffer(kN);
  k::SgdOptions sgd{0.05f, 0.9f, 1e-4f};
  for (int step = 0; step < 3; ++step)
    k::sgdStep(view(param, {kN}), view(grad, {kN}), view(buffer, {kN}), sgd);
  print("sgd.param", param);
  print("sgd.momentum", buffer);
}

} // namespace

int main() {
  unaryCases();
  binaryCases();
  normalizationCases();
  softmaxCases();
  lossCases();
  optimizerCases();
  return 0;
}
