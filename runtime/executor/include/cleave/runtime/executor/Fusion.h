//===- Fusion.h - Running the groups a backend fuses -----------*- C++ -*-===//
//
// The plan's instruction streams are op by op: a linear layer is a
// graph.matmul followed by a graph.add of the bias (and a graph.gelu), and
// a weight gradient over a batch is a batched graph.matmul followed by a
// graph.reduce_sum over the batch. A backend can run such a run of
// consecutive instructions as one kernel: a GEMM whose epilogue adds the
// bias and applies the activation (cuBLASLt's epilogues), or one GEMM that
// contracts over the batch as well, so that the intermediate never goes
// through memory.
//
// Fusion is the backend's business, not the plan's: the compiler's buffer
// plan and the executor's semantics stay op by op. A group is fused only
// when each intermediate it drops is read by no other instruction of the
// program, so nothing observable changes; and the executor checks, per
// run, that the fused kernel's writes overlap none of its reads (the
// buffer plan may reuse a dead operand's bytes for a later result), or
// runs the group op by op.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_EXECUTOR_FUSION_H
#define CLEAVE_RUNTIME_EXECUTOR_FUSION_H

#include "cleave/runtime/executor/OpContext.h"
#include "cleave/runtime/fusion/FusionMatch.h"
#include "cleave/runtime/plan/plan.pb.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace cleave::executor {

// The matcher (which groups fuse) is the plan-level library both the
// lowering and the backends link (cleave/runtime/fusion/FusionMatch.h);
// running a group is the executor's.
using fusion::findFusions;
using fusion::FusedGroup;
using fusion::Fusion;
using fusion::FusionFilter;
using fusion::fusionName;

/// Runs a group: one OpContext per instruction, in order, with the views
/// of the running microbatch. Returns false, having written nothing the
/// group reads, when it cannot run this instance (a shape or alignment its
/// library refuses); the executor then runs the instructions one by one,
/// as it does when the kernel throws (the ops' own kernels then name the
/// instruction at fault).
using FusedKernelFn = bool (*)(const FusedGroup &group,
                               std::vector<OpContext> &contexts);

/// A matched group as one GEMM and its epilogue, read from the group's
/// contexts (both backends' fused kernels start here).
struct FusedGemm {
  kernels::ConstTensorRef lhs, rhs;
  bool transposeLhs = false, transposeRhs = false;
  /// MatmulBias*: the bias vector over the last dimension.
  kernels::ConstTensorRef bias;
  /// MatmulBiasActivation: "gelu", "gelu_tanh" or "relu";
  /// MatmulActivationGrad: activation_grad's kind.
  std::string activation;
  /// MatmulActivationGrad: the activation's input y.
  kernels::ConstTensorRef preActivation;
  /// MatmulBiasActivation: where y = x.W + b goes when a later
  /// instruction reads it; null when dropped.
  kernels::TensorRef preActivationOut;
  /// The group's last result; MatmulBatchReduce: viewed as [K, N].
  kernels::TensorRef out;
};

/// Throws std::invalid_argument when the contexts do not hold `group`.
FusedGemm fusedGemm(const FusedGroup &group, std::vector<OpContext> &contexts);

/// Whether the bytes the fused kernel writes (every output of the group
/// but the dropped ones) overlap each other or anything the group reads
/// from outside itself.
bool fusedWritesOverlapReads(const FusedGroup &group,
                             const std::vector<OpContext> &contexts);

} // namespace cleave::executor

#endif // CLEAVE_RUNTIME_EXECUTOR_FUSION_H
