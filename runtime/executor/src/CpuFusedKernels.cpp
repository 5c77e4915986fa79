//===- CpuFusedKernels.cpp - Fused groups on the CPU backend --------------===//
//
// OpenBLAS has no epilogues, but a GEMM with beta = 1 accumulates onto the
// bias broadcast into its result, the activation (or its gradient) then
// runs in place over the result, and a weight gradient over a batch is one
// GEMM contracting the batch too instead of a GEMM per sequence and a sum
// of the products. The dropped intermediates are never written.
//
//===----------------------------------------------------------------------===//

#include "Registry.h"

#include "cleave/runtime/executor/Fusion.h"
#include "cleave/runtime/kernels/Elementwise.h"
#include "cleave/runtime/kernels/Matmul.h"

namespace cleave::executor {

namespace k = cleave::kernels;

namespace {

bool linearKernel(const FusedGroup &group, std::vector<OpContext> &contexts) {
  FusedGemm g = fusedGemm(group, contexts);
  k::TensorRef target =
      g.preActivationOut ? g.preActivationOut : g.out;
  k::linear(g.lhs, g.rhs, g.transposeRhs, g.bias, target);
  if (group.kind == Fusion::MatmulBiasActivation)
    k::unary(activationKind(g.activation), target, g.out);
  return true;
}

bool activationGradKernel(const FusedGroup &group,
                          std::vector<OpContext> &contexts) {
  FusedGemm g = fusedGemm(group, contexts);
  k::matmul(g.lhs, g.rhs, g.transposeLhs, g.transposeRhs, g.out);
  k::unaryBackward(activationKind(g.activation), g.preActivation, g.out,
                   g.out);
  return true;
}

bool batchReduceKernel(const FusedGroup &group,
                       std::vector<OpContext> &contexts) {
  FusedGemm g = fusedGemm(group, contexts);
  k::matmulBatchContract(g.lhs, g.rhs, g.out);
  return true;
}

} // namespace

FusedKernelFn cpuFusedKernel(Fusion kind) {
  switch (kind) {
  case Fusion::MatmulBias:
  case Fusion::MatmulBiasActivation:
    return linearKernel;
  case Fusion::MatmulActivationGrad:
    return activationGradKernel;
  case Fusion::MatmulBatchReduce:
    return batchReduceKernel;
  case Fusion::None:
    break;
  }
  return nullptr;
}

} // namespace cleave::executor
