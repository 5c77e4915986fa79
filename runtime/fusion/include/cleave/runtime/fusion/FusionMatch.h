//===- FusionMatch.h - Runs of instructions a backend fuses -----*- C++ -*-===//
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

#ifndef CLEAVE_RUNTIME_FUSION_FUSIONMATCH_H
#define CLEAVE_RUNTIME_FUSION_FUSIONMATCH_H

#include "cleave/runtime/plan/plan.pb.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace cleave::fusion {

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

} // namespace cleave::fusion

#endif // CLEAVE_RUNTIME_FUSION_FUSIONMATCH_H
