//===- BufferPlan.h - Static arena offsets by liveness ----------*- C++ -*-===//
//
// Plain C++ (no MLIR): the memory planner of a program. Persistent and
// per-microbatch (slotted) tensors get their own ranges; transient tensors
// of all segments share one region, because segments run one at a time,
// and within a segment a tensor's bytes are reused once its last reader has
// run (first fit over the live intervals, largest first).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_LOWERING_BUFFERPLAN_H
#define CLEAVE_LOWERING_BUFFERPLAN_H

#include <cstdint>
#include <vector>

namespace cleave::lowering {

struct BufferRequest {
  int64_t bytes = 0;
  /// Copies (microbatch slots); 1 for persistent tensors.
  int64_t slots = 1;
  /// Transient tensors: the segment and the instruction interval
  /// [first, last] during which the bytes are live.
  bool transient = false;
  int segment = 0;
  int64_t first = 0, last = 0;
  /// A view of other tensors' bytes (a gradient bucket): placed at the
  /// offset of request `aliasOf`, taking no bytes of its own.
  int64_t aliasOf = -1;
  /// Stash frames (interleaved schedules): slotted tensors with a frame
  /// group >= 0 are laid out within one frame, the groups over each other
  /// (a frame holds one chunk's stash of one microbatch at a time), and the
  /// frames one after another: `slots` frames, the slot stride a frame.
  int frameGroup = -1;
  /// Frames come in pools, each its own region (zero-bubble schedules keep
  /// what the W reads in pool 1, held longer).
  int framePool = 0;
};

struct BufferAssignment {
  std::vector<int64_t> offsets;
  std::vector<int64_t> slotStrides;
  int64_t persistentBytes = 0, slottedBytes = 0, transientBytes = 0;
  int64_t totalBytes = 0;
};

/// Offsets aligned to `alignment` bytes.
BufferAssignment planBuffers(const std::vector<BufferRequest> &requests,
                             int64_t alignment = 64);

} // namespace cleave::lowering

#endif // CLEAVE_LOWERING_BUFFERPLAN_H
