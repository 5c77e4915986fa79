//===- StagingPool.cpp - Reused staging buffers for collectives -----------===//

#include "cleave/runtime/comm/StagingPool.h"

#include <algorithm>

namespace cleave::comm {

namespace {
/// Below this a buffer is cheap to hold for any request.
constexpr size_t kSmallBytes = size_t(1) << 20;
} // namespace

StagingBuffer &StagingBuffer::operator=(StagingBuffer &&other) noexcept {
  if (this != &other) {
    StagingBuffer old(std::move(*this));
    pool_ = std::move(other.pool_);
    storage_ = std::move(other.storage_);
    size_ = other.size_;
    capacity_ = other.capacity_;
    other.size_ = other.capacity_ = 0;
  }
  return *this;
}

StagingBuffer::~StagingBuffer() {
  if (pool_ && storage_)
    pool_->giveBack(std::move(storage_), capacity_);
}

std::shared_ptr<StagingPool> StagingPool::create(size_t maxFree) {
  return std::shared_ptr<StagingPool>(new StagingPool(maxFree));
}

StagingBuffer StagingPool::take(size_t bytes) {
  StagingBuffer buffer;
  buffer.pool_ = shared_from_this();
  buffer.size_ = bytes;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto best = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it)
      // Not a buffer far larger than asked for: a small collective would
      // hold it while a large one allocates afresh.
      if (it->capacity >= bytes &&
          (it->capacity <= 2 * bytes || it->capacity <= kSmallBytes) &&
          (best == free_.end() || it->capacity < best->capacity))
        best = it;
    if (best != free_.end()) {
      buffer.storage_ = std::move(best->storage);
      buffer.capacity_ = best->capacity;
      free_.erase(best);
      return buffer;
    }
  }
  // new char[] leaves the bytes uninitialised: they are all written (packed
  // or received) before they are read.
  buffer.storage_.reset(new char[std::max<size_t>(bytes, 1)]);
  buffer.capacity_ = bytes;
  return buffer;
}

void StagingPool::giveBack(std::unique_ptr<char[]> storage, size_t capacity) {
  std::lock_guard<std::mutex> lock(mutex_);
  free_.push_back({std::move(storage), capacity});
  if (free_.size() > maxFree_) {
    auto smallest = std::min_element(
        free_.begin(), free_.end(),
        [](const Kept &a, const Kept &b) { return a.capacity < b.capacity; });
    free_.erase(smallest);
  }
}

size_t StagingPool::freeBuffers() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return free_.size();
}

size_t StagingPool::freeBytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t total = 0;
  for (const Kept &kept : free_)
    total += kept.capacity;
  return total;
}

} // namespace cleave::comm
