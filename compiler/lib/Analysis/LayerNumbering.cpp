//===- LayerNumbering.cpp - Which transformer layer an op belongs to ------===//

#include "cleave/Analysis/LayerNumbering.h"

#include "cleave/Dialect/Graph/IR/GraphOps.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"

using namespace mlir;

namespace cleave {

bool isGeneratedParamName(StringRef name) {
  if (name.contains("::"))
    return true; // the TorchScript exporter's "onnx::MatMul_1573"
  // The dynamo exporter's optimiser names what it folds after the value,
  // no module path: "val_313", "embedding_1".
  size_t underscore = name.rfind('_');
  unsigned long long n;
  return !name.contains('.') && underscore != StringRef::npos &&
         underscore > 0 &&
         !name.substr(underscore + 1).getAsInteger(10, n);
}

int64_t layerOfParamName(StringRef name) {
  // ONNX names the initializers it makes ("onnx::MatMul_1573"): their
  // numbers count tensors, not layers.
  if (isGeneratedParamName(name))
    return -1;
  SmallVector<StringRef> parts;
  name.split(parts, '.');
  for (StringRef part : parts) {
    // "h.3", "layers.3", or torchvision's "encoder_layer_3"; not "conv1"
    // or "layer1" (a ResNet's stage, not a layer).
    size_t underscore = part.rfind('_');
    StringRef digits =
        underscore == StringRef::npos ? part : part.substr(underscore + 1);
    if (underscore != StringRef::npos &&
        !part.substr(0, underscore).ends_with("layer") &&
        !part.substr(0, underscore).ends_with("block"))
      continue; // "conv_1", "proj_2": a module's own numbering
    int64_t layer;
    if (!digits.empty() && !digits.getAsInteger(10, layer))
      return layer;
  }
  return -1;
}

llvm::DenseMap<Operation *, int64_t>
numberLayers(Block &block, function_ref<bool(Operation *)> include) {
  llvm::DenseMap<Operation *, int64_t> layer;
  // Parameters and what is computed from them alone (a ZeRO-3 gather, a
  // tensor-parallel gather of a tied embedding) stand for the parameter.
  llvm::DenseSet<Operation *> paramLike;
  for (Operation &op : block) {
    if (!include(&op))
      continue;
    if (auto param = dyn_cast<graph::ParamOp>(op)) {
      layer[&op] = layerOfParamName(param.getName());
      paramLike.insert(&op);
      continue;
    }
    int64_t l = kBeforeLayers;
    bool readsUnnumberedParam = false, allParamLike = op.getNumOperands() > 0;
    for (Value v : op.getOperands()) {
      Operation *def = v.getDefiningOp();
      allParamLike &= def && paramLike.contains(def);
      if (!def || !layer.count(def))
        continue;
      l = std::max(l, layer.lookup(def));
      // A named parameter outside the layers read inside them (the final
      // norm, a tied head) starts the tail; a generated one (ONNX's
      // transposed weights) belongs where it is read.
      if (paramLike.contains(def) && layer.lookup(def) < 0 &&
          !(isa<graph::ParamOp>(def) &&
            isGeneratedParamName(cast<graph::ParamOp>(def).getName())))
        readsUnnumberedParam = true;
    }
    if (allParamLike)
      paramLike.insert(&op);
    if (readsUnnumberedParam && l >= 0)
      l = kAfterLayers;
    layer[&op] = l;
  }
  return layer;
}

BlockNumbering numberResidualBlocks(Block &block,
                                    function_ref<bool(Operation *)> include) {
  auto included = [&](Operation *op) { return !include || include(op); };
  // A training step's optimizer states are declared at its top and read
  // by its update at the end: sources too, not values the blocks pass on.
  auto isSource = [](Operation *op) {
    return isa<graph::ParamOp, graph::InputOp, graph::ConstantOp,
               graph::OptimizerStateOp>(op);
  };
  // Positions of the non-source ops; each value is live from its producer
  // to its last reader.
  SmallVector<Operation *> ops;
  llvm::DenseMap<Operation *, int64_t> position;
  for (Operation &op : block.without_terminator())
    if (included(&op) && !isSource(&op)) {
      position[&op] = ops.size();
      ops.push_back(&op);
    }
  int64_t n = ops.size();
  // live[i]: values defined at or before op i and read after it.
  SmallVector<int64_t> delta(n + 1, 0);
  SmallVector<bool> readLater(n, false);
  for (int64_t i = 0; i < n; ++i)
    for (Value v : ops[i]->getResults()) {
      int64_t last = i;
      for (Operation *user : v.getUsers()) {
        // A reader in the terminator (a returned value) reads it at the end.
        Operation *u = block.findAncestorOpInBlock(*user);
        if (u && !u->hasTrait<OpTrait::IsTerminator>() && !included(u))
          continue;
        last = std::max(last, u && position.count(u) ? position.lookup(u) : n);
      }
      if (last > i) {
        ++delta[i];
        --delta[last];
        readLater[i] = true;
      }
    }
  SmallVector<bool> cut(n, false);
  int64_t live = 0;
  for (int64_t i = 0; i < n; ++i) {
    live += delta[i];
    cut[i] = live == 1 && readLater[i];
  }
  // Segments end at cuts (the last one at the end of the block).
  BlockNumbering out;
  SmallVector<std::pair<int64_t, int64_t>> segments; // [begin, end)
  for (int64_t i = 0, begin = 0; i < n; ++i)
    if (cut[i] || i == n - 1) {
      segments.push_back({begin, i + 1});
      begin = i + 1;
    }
  int64_t firstBlock = -1, lastBlock = -1, blocks = 0;
  SmallVector<int64_t> blockOf(segments.size(), -1);
  // Communication a partitioner inserted (tensor parallelism's gathers
  // and reductions) does not make a block: the blocks of a partitioned
  // graph are those of the graph it came from, which the plan's stages
  // were balanced over.
  auto isCommunication = [](Operation *op) {
    return isa<graph::AllReduceOp, graph::AllGatherOp, graph::ReduceScatterOp,
               graph::AllToAllOp, graph::ShardSliceOp, graph::CopyToGroupOp>(
        op);
  };
  for (auto [k, seg] : llvm::enumerate(segments))
    if (llvm::count_if(llvm::ArrayRef(ops).slice(seg.first,
                                                 seg.second - seg.first),
                       [&](Operation *op) { return !isCommunication(op); }) >
        1) {
      blockOf[k] = blocks++;
      if (firstBlock < 0)
        firstBlock = k;
      lastBlock = k;
    }
  out.numBlocks = blocks;
  int64_t current = kBeforeLayers;
  for (auto [k, seg] : llvm::enumerate(segments)) {
    int64_t l = blockOf[k] >= 0                      ? blockOf[k]
                : int64_t(k) > lastBlock && blocks ? kAfterLayers
                : int64_t(k) < firstBlock || !blocks ? kBeforeLayers
                                                     : current;
    if (blockOf[k] >= 0)
      current = blockOf[k];
    for (int64_t i = seg.first; i < seg.second; ++i)
      out.layer[ops[i]] = l;
  }
  // A source belongs to the first op that reads it.
  for (Operation &op : block.without_terminator())
    if (included(&op) && isSource(&op)) {
      int64_t l = kAfterLayers;
      for (Operation *user : op.getUsers())
        if (Operation *u = block.findAncestorOpInBlock(*user);
            u && out.layer.count(u))
          l = std::min(l, out.layer.lookup(u));
      out.layer[&op] = l == kAfterLayers && op.use_empty() ? kBeforeLayers : l;
    }
  return out;
}

} // namespace cleave
