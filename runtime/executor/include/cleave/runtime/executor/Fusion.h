//===- Fusion.h - Instructions a backend runs as one kernel -----*- C++ -*-===//
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
#include "cleave/runtime/plan/plan.pb.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace cleave::executor {

enum class Fusion : uint8_t {
  None,
  /// matmul(x, W) then add(·, b): y = x·W + b, b a vector over the last
  /// dimension (a linear layer; W not batched).
  MatmulBias,
  /// MatmulBias then gelu or relu: z = act(x·W + b), keeping the
  /// pre-activation y when a later instruction (the backward) reads it.
  MatmulBiasActivation,
  /// matmul(dz, W^T) then activation_grad(y, ·): dy = act'(y) ⊙ (dz·W^T).
  MatmulActivationGrad,
  /// matmul(a, d, transpose_lhs) over equal batches [B..., M, ·] then
  /// reduce_sum over every batch dimension: one GEMM contracting B...·M.
  MatmulBatchReduce,
};

const char *fusionName(Fusion kind);

/// A run of consecutive instructions of a segment matched by one pattern.
struct FusedGroup {
  Fusion kind = Fusion::None;
  /// Index of the first instruction in its segment, and how many.
  int first = 0;
  int count = 1;
  /// Results of the group's instructions that the fused kernel does not
  /// write: read only inside the group.
  std::vector<int32_t> dropped;
  /// Some dropped tensor is fused away in the plan (TensorDecl.fused_away):
  /// it has no memory, so the group cannot fall back to op by op.
  bool fusedAway = false;

  bool drops(int32_t id) const;
};

/// Whether a backend runs a matched group fused (it may refuse, say, an
/// activation its GEMM library has no epilogue for).
using FusionFilter =
    std::function<bool(const FusedGroup &, const plan::Segment &)>;

/// The groups of segment `segment` of `program` that `supported` accepts,
/// in order and disjoint; of two patterns matching at one instruction the
/// longer is offered first.
std::vector<FusedGroup> findFusions(const plan::Program &program, int segment,
                                    const FusionFilter &supported);

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
