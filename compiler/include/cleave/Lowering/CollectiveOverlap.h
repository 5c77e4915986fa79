//===- CollectiveOverlap.h - ZeRO's collectives beside the compute -*- C++ -*-===//
//
// ZeRO-2 and 3 put collectives inside the forward and backward passes: a
// gather of each parameter before it is read (ZeRO-3) and a reduce-scatter
// of each gradient, accumulated into the replica's block (ZeRO-2 and 3).
// Emitted where the graph needs them they would stall the pass each time.
// This rewrites one segment's instructions so that they run beside its
// compute, as FSDP and DeepSpeed do:
//
// - a parameter's all-gather starts early (prefetch): when the gather
//   before it is waited for, the following ones start while their bytes
//   fit a window (at least the next one, FSDP's forward/backward
//   prefetch), and each is waited for just before its first reader;
// - a reduce-scatter whose result only an accumulation reads starts where
//   it stood and completes (wait, then the accumulation) once the bytes in
//   flight after it exceed the window, or at the end of the segment
//   (DeepSpeed's overlap_comm). Its wait names its input and output, so
//   neither buffer is reused while it runs.
//
// ZeRO-1 and 2 gather the updated parameter blocks after the optimizer
// step. Nothing of the step is left to hide that gather, so it is carried
// into the next step (Megatron-LM's overlap-param-gather): it starts after
// the update and is waited for just before the next forward pass first
// reads the parameter (carryParameterGathers).
//
// Plain C++ over plan instructions: the window bounds the memory that the
// buffers kept alive cost.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_LOWERING_COLLECTIVEOVERLAP_H
#define CLEAVE_LOWERING_COLLECTIVEOVERLAP_H

#include "cleave/cost_model/Memory.h"
#include "cleave/runtime/plan/plan.pb.h"

#include <cstdint>
#include <vector>

namespace cleave::lowering {

/// Bytes of collectives in flight beside compute (the cost model counts
/// what they keep alive: cost::zeroWindowBytes).
inline constexpr int64_t kOverlapWindowBytes =
    static_cast<int64_t>(cost::kCollectiveWindowBytes);

struct OverlapCounts {
  int prefetchedGathers = 0;
  int overlappedScatters = 0;
};

/// Rewrites `segment` (a forward, backward or weight-gradient segment of
/// `program`) as above. `nextHandle` is the program's next free async
/// handle; it is advanced past the ones used.
OverlapCounts overlapCollectives(std::vector<plan::Instruction> &segment,
                                 const plan::Program &program,
                                 int &nextHandle,
                                 int64_t windowBytes = kOverlapWindowBytes);

/// Makes the optimizer segment's gathers of updated ZeRO-1/2 blocks (a
/// persistent OPTIMIZER_STATE block into its PARAMETER) asynchronous and
/// `carried`, each waited for (`carried`, `first_microbatch`) before its
/// parameter's first reader in the step's schedule order. `segments` are
/// `program`'s, the optimizer last; its schedule is built. Returns how
/// many gathers were carried; a parameter no pass reads keeps its gather
/// synchronous.
int carryParameterGathers(std::vector<std::vector<plan::Instruction>> &segments,
                          const plan::Program &program, int &nextHandle);

/// Moves the waits and asynchronous collective starts the passes above put
/// between a graph.matmul and the instruction that reads its result (a
/// bias add whose bias a ZeRO gather brings: matmul, wait(bias), add; a
/// gradient's reduce-scatter started between a matmul and its activation
/// gradient) to before the matmul, so that a backend finds the two
/// consecutive and fuses them (FusionMatch.h: the GEMM's epilogue adds the
/// bias). Waiting for or starting a collective one instruction earlier
/// changes no value. Returns how many runs it joined.
int joinEpilogues(std::vector<plan::Instruction> &segment);

} // namespace cleave::lowering

#endif // CLEAVE_LOWERING_COLLECTIVEOVERLAP_H
