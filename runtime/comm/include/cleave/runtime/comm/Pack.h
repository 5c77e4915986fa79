//===- Pack.h - Move blocks along a dimension into contiguous buffers -----===//
//
// MPI gathers, scatters and exchanges contiguous blocks, one per rank, but
// a tensor split along a dimension other than the first has its blocks
// interleaved in memory. These copy block i of n along `dim` to or from a
// contiguous buffer.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_COMM_PACK_H
#define CLEAVE_RUNTIME_COMM_PACK_H

#include "cleave/runtime/comm/Communicator.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace cleave::comm {

/// The layout of a tensor seen as [outer, dimSize, inner] around `dim`.
struct BlockLayout {
  int64_t outer = 1;
  int64_t dimSize = 1;
  /// Bytes of one index step of `dim`.
  int64_t innerBytes = 1;
};

/// Checks dim and that `tensor`'s dimension `dim` splits into `parts`.
BlockLayout blockLayout(const CommTensor &tensor, int dim, int64_t parts,
                        const char *what);

/// Copies block `index` (of dimSize / parts along dim) of `tensor` into the
/// contiguous `dst`.
void packBlock(const BlockLayout &layout, const void *tensor, int64_t parts,
               int64_t index, void *dst);
/// Copies the contiguous `src` into block `index` of `tensor`.
void unpackBlock(const BlockLayout &layout, const void *src, int64_t parts,
                 int64_t index, void *tensor);

/// The shape `in` becomes after a collective: dim scaled by num / den.
std::vector<int64_t> scaledShape(std::vector<int64_t> shape, int dim,
                                 int64_t num, int64_t den);

/// Throws std::invalid_argument naming `what` unless shapes match.
void checkShape(const CommTensor &tensor, const std::vector<int64_t> &shape,
                const char *what);

/// out = in / n elementwise (mean after a sum).
void divideFloats(CommTensor tensor, int64_t n);

} // namespace cleave::comm

#endif // CLEAVE_RUNTIME_COMM_PACK_H
