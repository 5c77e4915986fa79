//===- ActivationEstimate.cpp - What a training step keeps for backward ---===//

#include "cleave/Lowering/ActivationEstimate.h"

#include "cleave/Analysis/LayerNumbering.h"
#include "cleave/Dialect/Graph/IR/GraphOps.h"
#include "cleave/Dialect/Graph/IR/ShapeInference.h"
#include "cleave/Transforms/Passes.h"
#include "cleave/Transforms/TrainingStepBuilder.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"

namespace cleave::lowering {

using namespace mlir;

static constexpr llvm::StringLiteral kBlockSlot = "cleave.block_slot";

namespace {
/// Bytes stashed per block slot (see stashedActivationBytesByBlock); one
/// slot when `byBlock` is off.
FailureOr<std::vector<double>> stash(ModuleOp module, Optimizer optimizer,
                                     bool byBlock, bool recompute = false) {
  OwningOpRef<ModuleOp> copy(module.clone());
  auto forward = copy->lookupSymbol<func::FuncOp>("forward");
  if (!forward)
    return failure();
  auto results = forward.getFunctionType().getResults();
  auto first = results.empty() ? RankedTensorType()
                               : dyn_cast<RankedTensorType>(results[0]);
  if (!first || first.getRank() != 0) {
    PassManager pm(module.getContext());
    pm.addPass(createAppendLoss());
    if (failed(pm.run(*copy)))
      return failure();
    forward = copy->lookupSymbol<func::FuncOp>("forward");
  }
  // Each forward op carries its block slot into the training step, whose
  // forward ops are its clones.
  size_t slots = 1;
  if (byBlock) {
    BlockNumbering blocks = numberResidualBlocks(forward.front());
    slots = blocks.numBlocks + 2;
    Builder b(module.getContext());
    for (Operation &op : forward.front().without_terminator()) {
      int64_t l = blocks.layer.lookup(&op);
      int64_t slot = l < 0 ? 0 : l >= blocks.numBlocks ? slots - 1 : l + 1;
      op.setAttr(kBlockSlot, b.getI64IntegerAttr(slot));
    }
  }
  StepOptions step;
  // An inference plan's stash is what training it would keep.
  step.optimizer = trains(optimizer) ? optimizer : Optimizer::Sgd;
  step.tagPhases = true;
  FailureOr<func::FuncOp> train =
      buildTrainingStep(forward, "activation_estimate", step);
  if (failed(train))
    return failure();
  if (recompute) {
    PassManager pm(module.getContext(), func::FuncOp::getOperationName());
    RecomputeOptions options;
    options.mode = "full";
    options.residualBlocks = byBlock;
    pm.addPass(createRecompute(options));
    if (failed(pm.run(*train)))
      return failure();
  }
  // Forward ops carry no phase; a value one of them defines and a backward
  // op reads stays alive from its forward to its backward.
  auto phase = [](Operation *op) {
    auto attr = op->getAttrOfType<StringAttr>("cleave.phase");
    return attr ? attr.getValue() : StringRef("forward");
  };
  // Parameters, constants and inputs have their own places in memory; so
  // do values made from parameters alone (a transposed weight lives as
  // long as its parameter), which are not per-microbatch activations.
  llvm::DenseSet<Operation *> persistent;
  std::vector<double> bytes(slots, 0.0);
  train->walk([&](Operation *op) {
    if (phase(op) != "forward" || isa<func::FuncOp>(op))
      return;
    if (isa<graph::InputOp>(op))
      return;
    if (isa<graph::ParamOp, graph::ConstantOp>(op) ||
        (op->getNumOperands() > 0 &&
         llvm::all_of(op->getOperands(), [&](Value v) {
           Operation *def = v.getDefiningOp();
           return def && persistent.contains(def);
         }))) {
      persistent.insert(op);
      return;
    }
    for (Value result : op->getResults())
      if (llvm::any_of(result.getUsers(), [&](Operation *user) {
            return phase(user) == "backward";
          })) {
        size_t slot = 0;
        if (auto attr = op->getAttrOfType<IntegerAttr>(kBlockSlot))
          slot = std::min<size_t>(attr.getInt(), slots - 1);
        bytes[slot] += static_cast<double>(graph::tensorBytes(result.getType()));
      }
  });
  return bytes;
}
} // namespace

FailureOr<double> stashedActivationBytes(ModuleOp module,
                                         Optimizer optimizer) {
  FailureOr<std::vector<double>> bytes = stash(module, optimizer, false);
  if (failed(bytes))
    return failure();
  return bytes->front();
}

FailureOr<std::vector<double>>
stashedActivationBytesByBlock(ModuleOp module, Optimizer optimizer,
                              bool recompute) {
  return stash(module, optimizer, true, recompute);
}

} // namespace cleave::lowering
