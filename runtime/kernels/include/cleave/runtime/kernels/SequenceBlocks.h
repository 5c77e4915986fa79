//===- SequenceBlocks.h - Where a device's rows sit in the sequence -*- C++ -*-===//
//
// Context parallelism gives each device a block of the sequence. The causal
// mask and the rotary embedding need each local row's place in the whole
// sequence: row i + offset for a contiguous block, and for a zig-zag block
// (chunks g and 2n - 1 - g of the sequence cut in 2n, so that every device
// has as many unmasked scores as any other) one offset for the first half
// of the rows and another for the second.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_KERNELS_SEQUENCEBLOCKS_H
#define CLEAVE_RUNTIME_KERNELS_SEQUENCEBLOCKS_H

#include <cstdint>

// The CUDA kernels read the same places on the device.
#if defined(__CUDACC__)
#define CLEAVE_HOST_DEVICE __host__ __device__
#else
#define CLEAVE_HOST_DEVICE
#endif

namespace cleave::kernels {

/// Row i's place: i + offset for i < split, i + offsetAfter from there on.
/// offsetAfter >= offset, so places grow with i (a later row of a block
/// sees at least the keys an earlier one does).
struct RowOffsets {
  int64_t offset = 0;
  int64_t split = INT64_MAX;
  int64_t offsetAfter = 0;

  RowOffsets() = default;
  /// Contiguous: every row at i + offset.
  CLEAVE_HOST_DEVICE RowOffsets(int64_t offset)
      : offset(offset), offsetAfter(offset) {}

  CLEAVE_HOST_DEVICE int64_t operator()(int64_t i) const {
    return i + (i < split ? offset : offsetAfter);
  }
  /// The first row whose place is at least `p` (past the last row if no
  /// row is): the first query a causal mask lets see key p.
  CLEAVE_HOST_DEVICE int64_t firstAtOrPast(int64_t p) const {
    int64_t i = p - offset;
    if (i < split)
      return i < 0 ? 0 : i;
    i = p - offsetAfter;
    return i < split ? split : i;
  }
  /// The same places moved by `delta` (a causal mask's keys - queries).
  CLEAVE_HOST_DEVICE RowOffsets shifted(int64_t delta) const {
    RowOffsets r = *this;
    r.offset += delta;
    r.offsetAfter += delta;
    return r;
  }
  /// Block g of n contiguous blocks of `rows` rows.
  static RowOffsets block(int64_t rows, int64_t g, int64_t /*n*/) {
    return RowOffsets(g * rows);
  }
  /// Device g's zig-zag block of `rows` (even) rows: chunk g then chunk
  /// 2n - 1 - g of the sequence cut into 2n chunks of rows / 2.
  static RowOffsets zigzag(int64_t rows, int64_t g, int64_t n) {
    int64_t chunk = rows / 2;
    RowOffsets r(g * chunk);
    r.split = chunk;
    r.offsetAfter = (2 * n - 1 - g) * chunk - chunk;
    return r;
  }
};

} // namespace cleave::kernels

#endif // CLEAVE_RUNTIME_KERNELS_SEQUENCEBLOCKS_H
