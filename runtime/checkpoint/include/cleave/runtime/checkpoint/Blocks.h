//===- Blocks.h - Which boxes of which global tensors a rank holds -*- C++ -*-===//
//
// A plan splits every parameter and optimizer state into regular blocks:
// per dimension, the mesh axes of TensorDecl.dims cut it into equal parts,
// and a rank holds the part at its coordinates (tp/cp/ep splits and ZeRO
// shards alike; ParameterSharding.global_shape is the whole tensor). A
// checkpoint stores such blocks by their box in the global tensor, so that
// another plan, with other blocks, can cut its own out of them.
//
// Replicas (the same box on several ranks: data-parallel copies, tied
// embeddings on two stages) are written once. Which replica writes is
// decided from the plan alone, the same on every rank, spreading the bytes
// over the holders as PyTorch DCP's deduplication does: each box goes to the
// holder with the fewest bytes assigned so far.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_CHECKPOINT_BLOCKS_H
#define CLEAVE_RUNTIME_CHECKPOINT_BLOCKS_H

#include "cleave/runtime/plan/plan.pb.h"

#include <cstdint>
#include <string>
#include <vector>

namespace cleave::checkpoint {

/// A box of a global tensor: per dimension its first index and extent.
struct Box {
  std::vector<int64_t> origin;
  std::vector<int64_t> extent;

  int64_t numElements() const;
  bool operator==(const Box &other) const {
    return origin == other.origin && extent == other.extent;
  }
};

/// The intersection of two boxes of one tensor; false when it is empty.
bool intersect(const Box &a, const Box &b, Box &out);

/// Copies the elements of `region` (inside both boxes) from `src`, which
/// holds box `srcBox` row-major, to `dst`, which holds `dstBox` row-major;
/// `elementBytes` per element.
void copyRegion(const char *src, const Box &srcBox, char *dst,
                const Box &dstBox, const Box &region, int64_t elementBytes);

/// One block of a global tensor that a rank's program holds.
struct Block {
  /// Tensor id in the rank's program.
  int32_t tensorId = -1;
  /// The global parameter's name and the state ("" for the parameter).
  std::string name;
  std::string state;
  plan::DType dtype = plan::F32;
  std::vector<int64_t> globalShape;
  Box box;
  /// The parameter's other state_dict names (a tied embedding and head;
  /// also on its states, whose files use the parameter's name).
  std::vector<std::string> aliases;

  int64_t bytes() const;
  /// "name" or "name.state", for messages.
  std::string key() const;
};

/// Whether a tensor of a program is state a checkpoint keeps: parameters
/// and optimizer states, but not ZeRO-1/2's ".shard" block of the updated
/// parameter (sliced from the parameter every step).
bool isCheckpointed(const plan::TensorDecl &decl);

/// The checkpointed blocks the program of `rank` holds, in tensor order.
std::vector<Block> blocksOfRank(const plan::Plan &plan, int rank);

/// The blocks `rank` writes in a checkpoint of `plan`: its blocks less the
/// replicas another rank writes. Over all ranks, every box of every tensor
/// is written exactly once.
std::vector<Block> blocksWrittenBy(const plan::Plan &plan, int rank);

} // namespace cleave::checkpoint

#endif // CLEAVE_RUNTIME_CHECKPOINT_BLOCKS_H
