//===- BufferPlan.cpp - Static arena offsets by liveness ------------------===//

#include "cleave/Lowering/BufferPlan.h"

#include <algorithm>
#include <map>
#include <numeric>

namespace cleave::lowering {

namespace {

int64_t alignUp(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

/// First fit of one segment's transient tensors: the placed tensors whose
/// live intervals overlap a new one block their byte ranges.
int64_t placeSegment(const std::vector<BufferRequest> &requests,
                     const std::vector<size_t> &ids, int64_t alignment,
                     std::vector<int64_t> &offsets) {
  std::vector<size_t> order = ids;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return requests[a].bytes > requests[b].bytes;
  });
  std::vector<size_t> placed;
  int64_t peak = 0;
  for (size_t id : order) {
    const BufferRequest &r = requests[id];
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (size_t other : placed) {
      const BufferRequest &o = requests[other];
      if (o.first <= r.last && r.first <= o.last)
        busy.push_back({offsets[other], offsets[other] + alignUp(o.bytes, alignment)});
    }
    std::sort(busy.begin(), busy.end());
    int64_t offset = 0, size = alignUp(r.bytes, alignment);
    for (auto [begin, end] : busy) {
      if (offset + size <= begin)
        break;
      offset = std::max(offset, end);
    }
    offsets[id] = offset;
    peak = std::max(peak, offset + size);
    placed.push_back(id);
  }
  return peak;
}

} // namespace

BufferAssignment planBuffers(const std::vector<BufferRequest> &requests,
                             int64_t alignment) {
  BufferAssignment out;
  size_t n = requests.size();
  out.offsets.assign(n, 0);
  out.slotStrides.assign(n, 0);
  int64_t cursor = 0;
  for (size_t i = 0; i < n; ++i)
    if (!requests[i].transient && requests[i].slots <= 1 &&
        requests[i].aliasOf < 0 && requests[i].frameGroup < 0) {
      out.offsets[i] = cursor;
      cursor += alignUp(requests[i].bytes, alignment);
    }
  out.persistentBytes = cursor;
  for (size_t i = 0; i < n; ++i)
    if (!requests[i].transient && requests[i].slots > 1 &&
        requests[i].frameGroup < 0) {
      int64_t stride = alignUp(requests[i].bytes, alignment);
      out.offsets[i] = cursor;
      out.slotStrides[i] = stride;
      cursor += stride * requests[i].slots;
    }
  // Frames, per pool: each group's tensors one after another from the
  // frame's start; the frame is the largest group.
  std::map<int, std::map<int, int64_t>> groupBytes;
  std::map<int, int64_t> frameBytes, frames;
  for (size_t i = 0; i < n; ++i)
    if (!requests[i].transient && requests[i].frameGroup >= 0) {
      int pool = requests[i].framePool;
      int64_t &used = groupBytes[pool][requests[i].frameGroup];
      out.offsets[i] = used; // relative to the pool, for now
      used += alignUp(requests[i].bytes, alignment);
      frameBytes[pool] = std::max(frameBytes[pool], used);
      frames[pool] = std::max(frames[pool], requests[i].slots);
    }
  std::map<int, int64_t> poolBase;
  for (auto &[pool, bytes] : frameBytes) {
    poolBase[pool] = cursor;
    cursor += bytes * frames[pool];
  }
  for (size_t i = 0; i < n; ++i)
    if (!requests[i].transient && requests[i].frameGroup >= 0) {
      out.offsets[i] += poolBase[requests[i].framePool];
      out.slotStrides[i] = frameBytes[requests[i].framePool];
    }
  out.slottedBytes = cursor - out.persistentBytes;
  std::map<int, std::vector<size_t>> bySegment;
  for (size_t i = 0; i < n; ++i)
    if (requests[i].transient)
      bySegment[requests[i].segment].push_back(i);
  int64_t region = 0;
  std::vector<int64_t> local(n, 0);
  for (auto &[segment, ids] : bySegment)
    region = std::max(region, placeSegment(requests, ids, alignment, local));
  for (size_t i = 0; i < n; ++i)
    if (requests[i].transient)
      out.offsets[i] = cursor + local[i];
  out.transientBytes = region;
  out.totalBytes = cursor + region;
  for (size_t i = 0; i < n; ++i)
    if (requests[i].aliasOf >= 0)
      out.offsets[i] = out.offsets[requests[i].aliasOf];
  return out;
}

} // namespace cleave::lowering
