//===- Recompute.cpp - cleave-recompute -----------------------------------===//
//
// Activation recomputation trades compute for memory: a forward value the
// backward pass reads is either stashed from the forward pass of its
// microbatch until that microbatch's backward pass (the lowering's STASH
// tensors, one slot per microbatch in flight), or computed again from what
// is stashed. Cloning the forward ops into the backward phase is all it
// takes: the lowering's liveness then sees short-lived transients instead
// of stashed values.
//
//===----------------------------------------------------------------------===//

#include "cleave/Dialect/Graph/IR/GraphOps.h"
#include "cleave/Analysis/LayerNumbering.h"
#include "cleave/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

#include <map>

namespace cleave {
#define GEN_PASS_DEF_RECOMPUTE
#include "cleave/Transforms/Passes.h.inc"
} // namespace cleave

using namespace mlir;
using namespace cleave::graph;

namespace {

bool isForward(Operation *op) { return !op->hasAttr("cleave.phase"); }

bool isBackward(Operation *op) {
  auto phase = op->getAttrOfType<StringAttr>("cleave.phase");
  return phase && phase.getValue() == "backward";
}

/// Sources are declared tensors, not instructions: there is nothing to
/// recompute. Pipeline transfers are matched with another stage's program
/// and must run exactly once per microbatch.
bool isRecomputable(Operation *op) {
  return !isa<ParamOp, InputOp, ConstantOp, OptimizerStateOp, SendOp, RecvOp,
              func::ReturnOp>(op) &&
         op->getNumResults() > 0;
}

int64_t elementsOf(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type && type.hasStaticShape() ? type.getNumElements() : -1;
}

/// The attention core of a softmax: the chain of score-sized ops back to
/// the matmul that made the scores (scaling, masking) and the dropouts
/// after it.
void addAttentionCore(SoftmaxOp softmax, llvm::DenseSet<Operation *> &core) {
  int64_t size = elementsOf(softmax.getResult());
  core.insert(softmax);
  Value v = softmax.getInput();
  while (Operation *def = v.getDefiningOp()) {
    if (!isForward(def) || !isRecomputable(def) ||
        elementsOf(def->getResult(0)) != size)
      break;
    core.insert(def);
    if (isa<MatmulOp>(def) || def->getNumOperands() == 0)
      break;
    // Follow the operand that carries the scores (the other is a scale or
    // a mask, broadcast from something smaller or a source).
    Value next;
    for (Value operand : def->getOperands())
      if (elementsOf(operand) == size && operand.getDefiningOp() &&
          isRecomputable(operand.getDefiningOp()))
        next = operand;
    if (!next)
      break;
    v = next;
  }
  Value out = softmax.getResult();
  while (out.hasOneUse()) {
    auto dropout = dyn_cast<DropoutOp>(*out.getUsers().begin());
    if (!dropout || !isForward(dropout))
      break;
    core.insert(dropout);
    out = dropout.getResult();
  }
}

struct RecomputePass : public cleave::impl::RecomputeBase<RecomputePass> {
  using RecomputeBase::RecomputeBase;

  void runOnOperation() override;
};

void RecomputePass::runOnOperation() {
  func::FuncOp func = getOperation();
  if (mode != "full" && mode != "selective") {
    func.emitError("unknown recomputation mode '")
        << mode << "' (expected full or selective)";
    return signalPassFailure();
  }
  if (!func.getBody().hasOneBlock())
    return;
  Block &body = func.front();
  bool hasBackward = llvm::any_of(body, [](Operation &op) {
    return isBackward(&op);
  });
  if (!hasBackward)
    return; // an inference program stashes nothing

  llvm::DenseMap<Operation *, int64_t> layer =
      residualBlocks ? cleave::numberResidualBlocks(body, isForward).layer
                     : cleave::numberLayers(body, isForward);

  // The candidates: ops of a layer the backward pass might recompute.
  llvm::DenseSet<Operation *> candidates;
  if (mode == "selective") {
    for (Operation &op : body)
      if (auto softmax = dyn_cast<SoftmaxOp>(op);
          softmax && isForward(softmax))
        addAttentionCore(softmax, candidates);
  } else {
    for (Operation &op : body)
      if (isForward(&op) && isRecomputable(&op))
        candidates.insert(&op);
  }
  // Only ops inside the layers, and never a checkpoint: a value that the
  // forward ops of another layer (or the function's results) read is
  // stashed whatever happens, so recomputing it would only add work.
  llvm::SetVector<Operation *> recompute;
  for (Operation &op : body) {
    if (!candidates.contains(&op))
      continue;
    int64_t l = layer.lookup(&op);
    if (l < 0 || l >= cleave::kAfterLayers)
      continue;
    bool checkpoint = false;
    for (Operation *user : op.getUsers())
      if (isa<func::ReturnOp>(user) ||
          (isForward(user) && layer.lookup(user) != l) ||
          (!isForward(user) && !isBackward(user)))
        checkpoint = true;
    if (!checkpoint)
      recompute.insert(&op);
  }

  // Per layer: the recomputed ops the backward pass needs, with the
  // recomputed ops they read, in forward order.
  std::map<int64_t, SmallVector<Operation *>> needed;
  llvm::DenseSet<Operation *> isNeeded;
  for (Operation *op : llvm::reverse(recompute)) {
    bool need = llvm::any_of(op->getUsers(), [&](Operation *user) {
      return isBackward(user) || isNeeded.contains(user);
    });
    if (!need)
      continue;
    isNeeded.insert(op);
    needed[layer.lookup(op)].push_back(op);
  }

  OpBuilder b(func.getContext());
  for (auto &[l, ops] : needed) {
    std::reverse(ops.begin(), ops.end());
    // Insert before the first backward op that reads any of them.
    Operation *first = nullptr;
    for (Operation *op : ops)
      for (Operation *user : op->getUsers())
        if (isBackward(user) && (!first || user->isBeforeInBlock(first)))
          first = user;
    if (!first)
      continue;
    b.setInsertionPoint(first);
    IRMapping map;
    SmallVector<std::pair<Operation *, Operation *>> clones;
    for (Operation *op : ops) {
      Operation *clone = b.clone(*op, map);
      clone->setAttr("cleave.phase", b.getStringAttr("backward"));
      clone->setAttr("cleave.recomputed", b.getUnitAttr());
      clones.push_back({op, clone});
      ++numRecomputed;
    }
    for (auto [op, clone] : clones)
      for (auto [from, to] : llvm::zip(op->getResults(), clone->getResults()))
        from.replaceUsesWithIf(to, [&](OpOperand &use) {
          Operation *user = use.getOwner();
          return isBackward(user) && !user->hasAttr("cleave.recomputed");
        });
    ++numLayers;
  }
}

} // namespace
