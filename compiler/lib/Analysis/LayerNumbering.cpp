//===- LayerNumbering.cpp - Which transformer layer an op belongs to ------===//

#include "cleave/Analysis/LayerNumbering.h"

#include "cleave/Dialect/Graph/IR/GraphOps.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"

using namespace mlir;

namespace cleave {

bool isGeneratedParamName(StringRef name) { return name.contains("::"); }

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

} // namespace cleave
