//===- FusedOps.cpp - Fused groups as cuBLASLt epilogues ------------------===//
//
// A linear layer's bias (and its tanh-GELU or ReLU) is added by the GEMM's
// epilogue as the product is stored; the forward pass also stores the
// pre-activation as the epilogue's aux matrix when the backward reads it,
// and the backward applies GELU's derivative from that aux matrix to the
// input gradient's product (DGELU). A weight gradient over a batch is one
// GEMM contracting the batch as well. cuBLASLt's GELU is the tanh
// approximation, so exact (erf) GELU is left to the elementwise kernels.
//
//===----------------------------------------------------------------------===//

#include "Ops.h"

#include "Gemm.h"

#include "cleave/runtime/executor/Fusion.h"

#include <stdexcept>

namespace cleave::cuda {

using executor::FusedGemm;
using executor::FusedGroup;
using executor::Fusion;
using executor::OpContext;

namespace {

/// m, n, k of x . op(W) with W a matrix: every row of x against W.
struct LinearDims {
  int64_t m, n, k;
};

LinearDims linearDims(const FusedGemm &g) {
  if (g.rhs.shape.size() != 2 || g.transposeLhs || g.lhs.shape.empty())
    throw std::invalid_argument("a fused linear layer needs x . op(W) with W "
                                "a matrix");
  int64_t n = g.rhs.shape[g.transposeRhs ? 0 : 1];
  int64_t k = g.rhs.shape[g.transposeRhs ? 1 : 0];
  if (g.lhs.shape.back() != k || n == 0 || g.out.shape.back() != n ||
      g.lhs.numElements() / k != g.out.numElements() / n)
    throw std::invalid_argument("a fused linear layer's operands disagree");
  return {g.out.numElements() / n, n, k};
}

bool linearFused(const FusedGroup &group, std::vector<OpContext> &contexts) {
  FusedGemm g = fusedGemm(group, contexts);
  LinearDims d = linearDims(g);
  EpilogueArgs e;
  e.bias = g.bias.data;
  if (group.kind == Fusion::MatmulBias) {
    e.kind = Epilogue::Bias;
  } else if (g.activation == "gelu_tanh") {
    e.kind = g.preActivationOut ? Epilogue::BiasGeluAux : Epilogue::BiasGelu;
    e.aux = g.preActivationOut.data;
  } else if (g.activation == "relu" && !g.preActivationOut) {
    e.kind = Epilogue::BiasRelu;
  } else {
    return false;
  }
  return gemmEpilogue(false, g.transposeRhs, d.m, d.n, d.k, g.lhs.data,
                      g.rhs.data, g.out.data, e);
}

bool activationGradFused(const FusedGroup &group,
                         std::vector<OpContext> &contexts) {
  FusedGemm g = fusedGemm(group, contexts);
  if (g.activation != "gelu_tanh")
    return false;
  LinearDims d = linearDims(g);
  EpilogueArgs e;
  e.kind = Epilogue::DGelu;
  // cuBLASLt reads the aux matrix in this mode.
  e.aux = const_cast<float *>(g.preActivation.data);
  return gemmEpilogue(false, g.transposeRhs, d.m, d.n, d.k, g.lhs.data,
                      g.rhs.data, g.out.data, e);
}

bool batchReduceFused(const FusedGroup &group,
                      std::vector<OpContext> &contexts) {
  FusedGemm g = fusedGemm(group, contexts);
  int64_t k = g.out.shape[0], n = g.out.shape[1];
  int64_t rows = k == 0 ? 0 : g.lhs.numElements() / k;
  gemm(true, false, k, n, rows, g.lhs.data, g.rhs.data, 0.0f, g.out.data);
  return true;
}

} // namespace

bool fuses(const FusedGroup &group, const plan::Segment &segment) {
  const plan::Instruction &last =
      segment.instructions(group.first + group.count - 1);
  switch (group.kind) {
  case Fusion::MatmulBias:
  case Fusion::MatmulBatchReduce:
    return true;
  case Fusion::MatmulBiasActivation:
    if (last.op() == "graph.gelu")
      return executor::attrBool(last, "approximate_tanh");
    // ReLU's aux output is a bit mask, not the pre-activation a later
    // activation_grad reads.
    return last.op() == "graph.relu" &&
           group.drops(segment.instructions(group.first + 1).outputs(0));
  case Fusion::MatmulActivationGrad: {
    auto kind = last.attrs().find("kind");
    return kind != last.attrs().end() && kind->second.s() == "gelu_tanh";
  }
  case Fusion::None:
    break;
  }
  return false;
}

executor::FusedKernelFn fusedKernel(Fusion kind) {
  switch (kind) {
  case Fusion::MatmulBias:
  case Fusion::MatmulBiasActivation:
    return linearFused;
  case Fusion::MatmulActivationGrad:
    return activationGradFused;
  case Fusion::MatmulBatchReduce:
    return batchReduceFused;
  case Fusion::None:
    break;
  }
  return nullptr;
}

} // namespace cleave::cuda
