//===- MoeOps.cpp - Mixture-of-experts ops on the GPU ---------------------===//
//
// The host half of the MoE family (moe_gate, moe_dispatch, moe_combine,
// moe_gate_grad, moe_combine_grad: the ops the CPU executor registers):
// operands, attributes and shape checks as
// runtime/executor/src/ComputeKernels.cpp and GradKernels.cpp have them
// (and the CPU kernels check), then a launch on the compute stream. The
// expert indices stay in device memory, so their range is not checked
// here; see kernels/Moe.h for what an out-of-range index gives.
//
//===----------------------------------------------------------------------===//

#include "Context.h"
#include "OpChecks.h"
#include "Ops.h"
#include "kernels/Moe.h"

#include <stdexcept>
#include <string>

namespace cleave::cuda {
namespace {

using executor::OpContext;
using kernels::Shape;

/// Router logits [T, E] and top_k in [1, E].
void checkRouter(const char *op, const Shape &logits, int64_t topK) {
  if (logits.size() != 2)
    fail(op, "router logits must be [tokens, experts], got " +
                 kernels::shapeString(logits));
  if (topK < 1 || topK > logits[1])
    fail(op, "top_k = " + std::to_string(topK) + " must be in [1, " +
                 std::to_string(logits[1]) + "]");
}

/// Expert outputs [E, C, H] with E and C positive (the slots' experts and
/// capacity), and routing weights and indices that are both [T, k].
void checkCombine(const char *op, const Shape &input, const Shape &weights,
                  const Shape &indices) {
  if (input.size() != 3)
    fail(op, "expert outputs must be [E, C, H], got " +
                 kernels::shapeString(input));
  if (weights.size() != 2 || weights != indices)
    fail(op, "weights " + kernels::shapeString(weights) + " and indices " +
                 kernels::shapeString(indices) + " must both be [T, k]");
  if (input[0] < 1 || input[1] < 1)
    fail(op, "experts and capacity must be positive");
}

void moeGateKernel(OpContext &c) {
  c.expectArity(1, 2);
  const char *op = "moe_gate";
  kernels::ConstTensorRef logits = c.in(0);
  int64_t topK = c.attrInt("top_k");
  checkRouter(op, logits.shape, topK);
  kernels::TensorRef weights = c.out(0);
  kernels::MutableIndexRef indices = c.outIndex(1);
  Shape routed{logits.shape[0], topK};
  checkShape(op, "weights", weights, routed);
  checkShape(op, "indices", indices, routed);
  launchMoeGate(logits.data, weights.data, indices.data, logits.shape[0],
                logits.shape[1], topK, c.attrBool("renormalize"),
                context().compute);
}

void moeDispatchKernel(OpContext &c) {
  c.expectArity(2, 1);
  const char *op = "moe_dispatch";
  kernels::ConstTensorRef input = c.in(0);
  kernels::IndexRef indices = c.index(1);
  kernels::TensorRef out = c.out(0);
  if (input.rank() != 2 || indices.rank() != 2 ||
      indices.shape[0] != input.shape[0])
    fail(op, "expected tokens [T, H] and routing [T, k], got " +
                 kernels::shapeString(input.shape) + " and " +
                 kernels::shapeString(indices.shape));
  int64_t experts = c.attrInt("num_experts"), capacity = c.attrInt("capacity");
  if (experts < 1 || capacity < 1)
    fail(op, "experts and capacity must be positive");
  int64_t tokens = input.shape[0], hidden = input.shape[1];
  int64_t k = indices.shape[1];
  checkShape(op, "result", out, {experts, capacity, hidden});
  Scratch workspace(moeSlotsWorkspaceBytes(tokens * k, experts, capacity));
  launchMoeDispatch(input.data, indices.data, out.data, tokens, k, hidden,
                    experts, capacity, workspace.data(), context().compute);
}

// Operands: expert outputs, weights, indices.
void moeCombineKernel(OpContext &c) {
  c.expectArity(3, 1);
  const char *op = "moe_combine";
  kernels::ConstTensorRef input = c.in(0), weights = c.in(1);
  kernels::IndexRef indices = c.index(2);
  kernels::TensorRef out = c.out(0);
  checkCombine(op, input.shape, weights.shape, indices.shape);
  int64_t experts = input.shape[0], capacity = input.shape[1];
  int64_t hidden = input.shape[2];
  int64_t tokens = indices.shape[0], k = indices.shape[1];
  checkShape(op, "result", out, {tokens, hidden});
  Scratch workspace(moeSlotsWorkspaceBytes(tokens * k, experts, capacity));
  launchMoeCombine(input.data, weights.data, indices.data, out.data, tokens, k,
                   hidden, experts, capacity, workspace.data(),
                   context().compute);
}

// Operands: logits, grad. The kernel recomputes the chosen experts.
void moeGateGradKernel(OpContext &c) {
  c.expectArity(2, 1);
  const char *op = "moe_gate_grad";
  kernels::ConstTensorRef logits = c.in(0), dWeights = c.in(1);
  kernels::TensorRef dLogits = c.out(0);
  int64_t topK = c.attrInt("top_k");
  checkRouter(op, logits.shape, topK);
  int64_t tokens = logits.shape[0];
  checkShape(op, "dWeights", dWeights, {tokens, topK});
  checkShape(op, "dLogits", dLogits, logits.shape);
  Scratch workspace(moeGateGradWorkspaceBytes(tokens, topK));
  launchMoeGateGrad(logits.data, dWeights.data, dLogits.data, tokens,
                    logits.shape[1], topK, c.attrBool("renormalize"),
                    workspace.data(), context().compute);
}

// Operands: input, weights, indices, grad; results dInput, dWeights (each
// optional).
void moeCombineGradKernel(OpContext &c) {
  c.expectArity(4, 2);
  const char *op = "moe_combine_grad";
  kernels::ConstTensorRef input = c.in(0), weights = c.in(1), dOut = c.in(3);
  kernels::IndexRef indices = c.index(2);
  kernels::TensorRef dInput = c.outOpt(0), dWeights = c.outOpt(1);
  checkCombine(op, input.shape, weights.shape, indices.shape);
  int64_t experts = input.shape[0], capacity = input.shape[1];
  int64_t hidden = input.shape[2];
  int64_t tokens = indices.shape[0], k = indices.shape[1];
  checkShape(op, "dOut", dOut, {tokens, hidden});
  checkOptionalShape(op, "dInput", dInput, input.shape);
  checkOptionalShape(op, "dWeights", dWeights, weights.shape);
  Scratch workspace(moeSlotsWorkspaceBytes(tokens * k, experts, capacity));
  launchMoeCombineGrad(input.data, weights.data, indices.data, dOut.data,
                       dInput.data, dWeights.data, tokens, k, hidden, experts,
                       capacity, workspace.data(), context().compute);
}

} // namespace

void registerMoeOps(Registry &r) {
  r["graph.moe_gate"] = moeGateKernel;
  r["graph.moe_dispatch"] = moeDispatchKernel;
  r["graph.moe_combine"] = moeCombineKernel;
  r["graph.moe_gate_grad"] = moeGateGradKernel;
  r["graph.moe_combine_grad"] = moeCombineGradKernel;
}

} // namespace cleave::cuda
