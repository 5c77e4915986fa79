//===- BufferPlanTest.cpp - Arena offsets by liveness ---------------------===//

#include "cleave/Lowering/BufferPlan.h"

#include <gtest/gtest.h>

using namespace cleave::lowering;

namespace {

BufferRequest persistent(int64_t bytes) {
  BufferRequest r;
  r.bytes = bytes;
  return r;
}

BufferRequest transient(int64_t bytes, int segment, int64_t first,
                        int64_t last) {
  BufferRequest r;
  r.bytes = bytes;
  r.transient = true;
  r.segment = segment;
  r.first = first;
  r.last = last;
  return r;
}

BufferRequest framed(int64_t bytes, int group, int64_t frames) {
  BufferRequest r;
  r.bytes = bytes;
  r.slots = frames;
  r.frameGroup = group;
  return r;
}

TEST(BufferPlan, TransientsReuseBytesOnceDead) {
  // Two tensors live at once, a third after the first died: two buffers.
  BufferAssignment a = planBuffers(
      {persistent(64), transient(128, 0, 0, 1), transient(128, 0, 1, 2),
       transient(128, 0, 2, 3)});
  EXPECT_EQ(a.persistentBytes, 64);
  EXPECT_EQ(a.transientBytes, 256);
  EXPECT_EQ(a.offsets[1], a.offsets[3]);
  EXPECT_NE(a.offsets[1], a.offsets[2]);
}

TEST(BufferPlan, FramesOverlayTheChunksAndRepeat) {
  // Chunk 0 stashes 64 + 128 bytes, chunk 1 256: a frame of 256 bytes, 3
  // frames; each chunk's tensors start at the frame's start, one after
  // another, and move by a frame per slot.
  BufferAssignment a = planBuffers({persistent(64), framed(64, 0, 3),
                                    framed(128, 0, 3), framed(256, 1, 3)});
  EXPECT_EQ(a.offsets[1], 64);
  EXPECT_EQ(a.offsets[2], 128);
  EXPECT_EQ(a.offsets[3], 64);
  for (int i = 1; i <= 3; ++i)
    EXPECT_EQ(a.slotStrides[i], 256);
  EXPECT_EQ(a.totalBytes, 64 + 3 * 256);
}

} // namespace
