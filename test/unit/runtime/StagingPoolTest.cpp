//===- StagingPoolTest.cpp - Reuse of collectives' staging buffers --------===//

#include "cleave/runtime/comm/StagingPool.h"

#include <gtest/gtest.h>

namespace cleave::comm {
namespace {

TEST(StagingPoolTest, GivenBackBufferIsReused) {
  auto pool = StagingPool::create();
  char *first = nullptr;
  {
    StagingBuffer buffer = pool->take(64 << 20);
    first = buffer.data();
    EXPECT_EQ(buffer.size(), size_t(64) << 20);
    EXPECT_EQ(pool->freeBuffers(), 0u);
  }
  EXPECT_EQ(pool->freeBuffers(), 1u);
  // A slightly smaller request takes the same memory back.
  StagingBuffer again = pool->take(48 << 20);
  EXPECT_EQ(again.data(), first);
  EXPECT_EQ(again.size(), size_t(48) << 20);
  EXPECT_EQ(again.capacity(), size_t(64) << 20);
  EXPECT_EQ(pool->freeBuffers(), 0u);
}

TEST(StagingPoolTest, BuffersInUseAtOnceAreDistinct) {
  auto pool = StagingPool::create();
  StagingBuffer a = pool->take(1000), b = pool->take(1000);
  EXPECT_NE(a.data(), b.data());
}

TEST(StagingPoolTest, SmallRequestDoesNotTakeALargeBuffer) {
  auto pool = StagingPool::create();
  { StagingBuffer large = pool->take(64 << 20); }
  // 4 MiB would hold the 64 MiB buffer, which the next 64 MiB all-to-all
  // would then have to allocate afresh.
  StagingBuffer small = pool->take(4 << 20);
  EXPECT_EQ(small.capacity(), size_t(4) << 20);
  EXPECT_EQ(pool->freeBuffers(), 1u);
  // Below 1 MiB any kept buffer will do.
  { StagingBuffer tiny = pool->take(1000); EXPECT_GE(tiny.capacity(), 1000u); }
}

TEST(StagingPoolTest, KeepsOnlyTheLargestFreeBuffers) {
  auto pool = StagingPool::create(2);
  {
    StagingBuffer a = pool->take(1 << 10), b = pool->take(2 << 10),
                  c = pool->take(3 << 10);
  }
  EXPECT_EQ(pool->freeBuffers(), 2u);
  EXPECT_EQ(pool->freeBytes(), size_t(5) << 10);
}

TEST(StagingPoolTest, MovedBufferGoesBackOnce) {
  auto pool = StagingPool::create();
  {
    StagingBuffer a = pool->take(100);
    StagingBuffer b = std::move(a);
    StagingBuffer c = pool->take(200);
    c = std::move(b); // c's own buffer goes back now
    EXPECT_EQ(pool->freeBuffers(), 1u);
  }
  EXPECT_EQ(pool->freeBuffers(), 2u);
}

TEST(StagingPoolTest, BufferOutlivesItsHolderOfThePool) {
  StagingBuffer buffer;
  {
    auto pool = StagingPool::create();
    buffer = pool->take(100);
  }
  buffer.data()[99] = 1; // the pool lives while a buffer holds it
  SUCCEED();
}

} // namespace
} // namespace cleave::comm
