//===- Blocks.cpp - Which boxes of which global tensors a rank holds ------===//

#include "cleave/runtime/checkpoint/Blocks.h"

#include "cleave/runtime/executor/Initialization.h"
#include "cleave/runtime/plan/PlanIO.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <tuple>

namespace cleave::checkpoint {

int64_t Box::numElements() const {
  int64_t n = 1;
  for (int64_t e : extent)
    n *= e;
  return n;
}

bool intersect(const Box &a, const Box &b, Box &out) {
  if (a.origin.size() != b.origin.size())
    return false;
  size_t rank = a.origin.size();
  out.origin.assign(rank, 0);
  out.extent.assign(rank, 0);
  for (size_t d = 0; d < rank; ++d) {
    int64_t lo = std::max(a.origin[d], b.origin[d]);
    int64_t hi = std::min(a.origin[d] + a.extent[d], b.origin[d] + b.extent[d]);
    if (hi <= lo)
      return false;
    out.origin[d] = lo;
    out.extent[d] = hi - lo;
  }
  return true;
}

void copyRegion(const char *src, const Box &srcBox, char *dst,
                const Box &dstBox, const Box &region, int64_t elementBytes) {
  size_t rank = region.origin.size();
  if (rank == 0) {
    std::memcpy(dst, src, elementBytes);
    return;
  }
  // Row-major strides (in elements) of both boxes.
  std::vector<int64_t> srcStride(rank, 1), dstStride(rank, 1);
  for (size_t d = rank - 1; d-- > 0;) {
    srcStride[d] = srcStride[d + 1] * srcBox.extent[d + 1];
    dstStride[d] = dstStride[d + 1] * dstBox.extent[d + 1];
  }
  // The innermost dimension is copied as one run.
  int64_t run = region.extent[rank - 1] * elementBytes;
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < rank; ++d)
    rows *= region.extent[d];
  std::vector<int64_t> idx(rank, 0);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t s = 0, t = 0;
    for (size_t d = 0; d < rank; ++d) {
      int64_t g = region.origin[d] + idx[d];
      s += (g - srcBox.origin[d]) * srcStride[d];
      t += (g - dstBox.origin[d]) * dstStride[d];
    }
    std::memcpy(dst + t * elementBytes, src + s * elementBytes, run);
    for (size_t d = rank - 1; d-- > 0;) {
      if (++idx[d] < region.extent[d])
        break;
      idx[d] = 0;
    }
  }
}

int64_t Block::bytes() const {
  return box.numElements() * plan::dtypeBytes(dtype);
}

std::string Block::key() const {
  return state.empty() ? name : name + "." + state;
}

bool isCheckpointed(const plan::TensorDecl &decl) {
  if (decl.kind() == plan::TensorDecl::PARAMETER)
    return true;
  // Plans of format 4 left the state of the ".shard" block unnamed.
  const std::string &name = decl.name();
  bool shardBlock = decl.state() == "shard" ||
                    (decl.state().empty() && name.size() > 6 &&
                     name.compare(name.size() - 6, 6, ".shard") == 0);
  return decl.kind() == plan::TensorDecl::OPTIMIZER_STATE && !shardBlock;
}

namespace {

comm::MeshInfo meshOfRank(const plan::Plan &plan, int rank) {
  comm::MeshInfo mesh;
  for (const plan::MeshAxis &axis : plan.mesh().axes()) {
    mesh.axisNames.push_back(axis.name());
    mesh.axisSizes.push_back(axis.size());
  }
  mesh.coords.assign(plan.ranks(rank).coords().begin(),
                     plan.ranks(rank).coords().end());
  return mesh;
}

} // namespace

std::vector<Block> blocksOfRank(const plan::Plan &plan, int rank) {
  std::vector<Block> blocks;
  if (rank < 0 || rank >= plan.ranks_size())
    return blocks;
  int programIndex = plan.ranks(rank).program();
  if (programIndex < 0 || programIndex >= plan.programs_size())
    return blocks;
  comm::MeshInfo mesh = meshOfRank(plan, rank);
  for (const plan::TensorDecl &t : plan.programs(programIndex).tensors()) {
    if (!isCheckpointed(t) || t.param_index() < 0 ||
        t.param_index() >= plan.parameters_size())
      continue;
    const plan::ParameterSharding &param = plan.parameters(t.param_index());
    Block b;
    b.tensorId = t.id();
    b.name = param.name();
    // A state the plan does not name keeps its tensor's name, so that it
    // never passes for the parameter.
    b.state = t.kind() == plan::TensorDecl::PARAMETER ? ""
              : t.state().empty()                     ? t.name()
                                                      : t.state();
    b.aliases.assign(param.aliases().begin(), param.aliases().end());
    b.dtype = t.dtype();
    b.globalShape.assign(param.global_shape().begin(),
                         param.global_shape().end());
    b.box.extent.assign(t.shape().begin(), t.shape().end());
    if (b.globalShape.empty())
      b.globalShape = b.box.extent;
    b.box.origin = executor::blockOrigin(b.box.extent, t, mesh);
    blocks.push_back(std::move(b));
  }
  return blocks;
}

std::vector<Block> blocksWrittenBy(const plan::Plan &plan, int rank) {
  // Every box with its holders in rank order, in a deterministic order.
  using Key = std::tuple<std::string, std::string, std::vector<int64_t>>;
  std::map<Key, std::vector<std::pair<int, Block>>> holders;
  for (int r = 0; r < plan.ranks_size(); ++r)
    for (Block &b : blocksOfRank(plan, r)) {
      Key key{b.name, b.state, b.box.origin};
      auto &list = holders[key];
      // A program holds a tensor once; a second block of the same box on
      // one rank (never made by the lowering) is not written twice.
      if (!list.empty() && list.back().first == r)
        continue;
      list.emplace_back(r, std::move(b));
    }
  std::vector<int64_t> assigned(plan.ranks_size(), 0);
  std::vector<Block> mine;
  for (auto &[key, list] : holders) {
    auto best = list.begin();
    for (auto it = list.begin(); it != list.end(); ++it)
      if (assigned[it->first] < assigned[best->first])
        best = it;
    assigned[best->first] += best->second.bytes();
    if (best->first == rank)
      mine.push_back(best->second);
  }
  std::sort(mine.begin(), mine.end(),
            [](const Block &a, const Block &b) { return a.tensorId < b.tensorId; });
  return mine;
}

} // namespace cleave::checkpoint
