//===- LayerNumbering.cpp - Which transformer layer an op belongs to ------===//

#include "cleave/Analysis/LayerNumbering.h"

#include "cleave/Dialect/Graph/IR/GraphOps.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"

using namespace mlir;

namespace cleave {

int64_t layerOfParamName(StringRef name) {
  SmallVector<StringRef> parts;
  name.split(parts, '.');
  for (StringRef part : parts) {
    int64_t layer;
    if (!part.empty() && !part.getAsInteger(10, layer))
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
      if (paramLike.contains(def) && layer.lookup(def) < 0)
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

} // namespace cleave
