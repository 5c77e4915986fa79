//===- ExpertParallel.cpp - cleave-expert-parallel ------------------------===//
//
// The expert-parallel group is a set of data-parallel replicas: unlike the
// SPMD axes (tp, cp), its devices hold different tokens, so nothing but
// the MoE layers changes. Each layer's dispatch buffer is exchanged so that
// a device computes its own experts over every replica's slots, and the
// results go back before the combine.
//
//===----------------------------------------------------------------------===//

#include "cleave/Dialect/Graph/IR/GraphOps.h"
#include "cleave/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "llvm/ADT/SetVector.h"

namespace cleave {
#define GEN_PASS_DEF_EXPERTPARALLEL
#include "cleave/Transforms/Passes.h.inc"
} // namespace cleave

using namespace mlir;
using namespace cleave::graph;

namespace {

/// The ops from a dispatch's result to its combine's input: those reached
/// from the dispatch that also reach the combine.
llvm::SetVector<Operation *> expertRegion(MoeDispatchOp dispatch,
                                          MoeCombineOp combine) {
  llvm::DenseSet<Operation *> forward;
  SmallVector<Operation *> work;
  for (Operation *user : dispatch->getUsers())
    work.push_back(user);
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    if (op == combine.getOperation() || !forward.insert(op).second)
      continue;
    for (Operation *user : op->getUsers())
      work.push_back(user);
  }
  llvm::DenseSet<Operation *> backward;
  if (Operation *def = combine.getInput().getDefiningOp())
    work.push_back(def);
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    if (!forward.contains(op) || !backward.insert(op).second)
      continue;
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp())
        work.push_back(def);
  }
  // In block order, so that re-typing sees operands first.
  llvm::SetVector<Operation *> region;
  for (Operation &op : *dispatch->getBlock())
    if (backward.contains(&op))
      region.insert(&op);
  return region;
}

struct ExpertParallelPass
    : public cleave::impl::ExpertParallelBase<ExpertParallelPass> {
  using ExpertParallelBase::ExpertParallelBase;

  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<GraphDialect>();
  }

  void runOnOperation() override;
  LogicalResult parallelize(MoeDispatchOp dispatch, OpBuilder &b);
};

LogicalResult ExpertParallelPass::parallelize(MoeDispatchOp dispatch,
                                              OpBuilder &b) {
  int64_t n = size, experts = dispatch.getNumExperts();
  if (experts % n != 0)
    return dispatch.emitOpError("cannot split ")
           << experts << " experts over " << n << " devices of axis '"
           << axis << "'";
  // The combine that reads the experts' outputs of this dispatch (through
  // the expert MLPs): the one whose indices are the dispatch's.
  MoeCombineOp combine;
  for (Operation *user : dispatch.getIndices().getUsers())
    if (auto c = dyn_cast<MoeCombineOp>(user))
      combine = c;
  if (!combine)
    return dispatch.emitOpError("has no moe_combine reading its routing");
  llvm::SetVector<Operation *> region = expertRegion(dispatch, combine);
  if (!combine.getInput().getDefiningOp() ||
      !region.contains(combine.getInput().getDefiningOp()))
    return combine.emitOpError(
        "does not read the experts' outputs of its dispatch");

  ArrayAttr axes = b.getStrArrayAttr({axis});
  IntegerAttr groupSize = b.getI64IntegerAttr(n);
  auto exchanged = [&](RankedTensorType t, int64_t split, int64_t concat) {
    SmallVector<int64_t> shape(t.getShape());
    shape[split] /= n;
    shape[concat] *= n;
    return t.clone(shape);
  };
  // Every replica's slots of this device's experts.
  b.setInsertionPointAfter(dispatch);
  auto bufferType = cast<RankedTensorType>(dispatch.getType());
  auto toExperts = AllToAllOp::create(
      b, dispatch.getLoc(), exchanged(bufferType, 0, 1), dispatch, axes,
      groupSize, b.getI64IntegerAttr(0), b.getI64IntegerAttr(1));
  dispatch.getResult().replaceAllUsesExcept(toExperts, toExperts);

  // The expert weights: this device's block of experts.
  for (Operation *op : region)
    for (Value operand : op->getOperands()) {
      auto param = operand.getDefiningOp<ParamOp>();
      auto type = cast<RankedTensorType>(operand.getType());
      if (!param || param->hasAttr("cleave.global_shape") ||
          type.getRank() == 0 || type.getDimSize(0) != experts)
        continue;
      SmallVector<StringRef> shardAxes(type.getRank(), "");
      shardAxes[0] = axis;
      param->setAttr("cleave.global_shape",
                     b.getDenseI64ArrayAttr(type.getShape()));
      param->setAttr("cleave.shard_axes", b.getStrArrayAttr(shardAxes));
      SmallVector<int64_t> shape(type.getShape());
      shape[0] /= n;
      param.getResult().setType(type.clone(shape));
      if (auto value = param.getValueAttr()) {
        param->setAttr("cleave.global_value", value);
        param.setValueAttr(nullptr);
      }
    }
  // The expert MLPs now see [experts / n, n * capacity, ...].
  for (Operation *op : region) {
    SmallVector<Type> types;
    if (auto infer = dyn_cast<InferTypeOpInterface>(op)) {
      if (failed(infer.inferReturnTypes(
              op->getContext(), op->getLoc(), op->getOperands(),
              op->getRawDictionaryAttrs(), op->getPropertiesStorage(),
              op->getRegions(), types)))
        return op->emitOpError("cannot be re-typed for expert parallelism");
    } else if (op->hasTrait<OpTrait::SameOperandsAndResultType>()) {
      types.assign(op->getNumResults(), op->getOperand(0).getType());
    } else {
      return op->emitOpError("between moe_dispatch and moe_combine has no "
                             "type inference; expert parallelism cannot "
                             "re-type it");
    }
    for (auto [result, type] : llvm::zip(op->getResults(), types))
      result.setType(type);
  }
  // Back to the replica that owns the tokens.
  b.setInsertionPoint(combine);
  auto expertOut = cast<RankedTensorType>(combine.getInput().getType());
  auto toTokens = AllToAllOp::create(
      b, combine.getLoc(), exchanged(expertOut, 1, 0), combine.getInput(),
      axes, groupSize, b.getI64IntegerAttr(1), b.getI64IntegerAttr(0));
  combine.getInputMutable().assign(toTokens);
  if (toTokens.getType().getDimSize(0) != experts ||
      toTokens.getType().getDimSize(1) != bufferType.getDimSize(1))
    return combine.emitOpError("expert outputs do not come back as [")
           << experts << ", " << bufferType.getDimSize(1) << ", ...]";
  ++numLayers;
  return success();
}

void ExpertParallelPass::runOnOperation() {
  func::FuncOp func = getOperation();
  if (func.isExternal())
    return;
  if (size < 1) {
    func.emitOpError("expert-parallel size must be positive, got ")
        << static_cast<int64_t>(size);
    return signalPassFailure();
  }
  if (size == 1)
    return;
  SmallVector<MoeDispatchOp> dispatches;
  func.walk([&](MoeDispatchOp d) { dispatches.push_back(d); });
  if (dispatches.empty()) {
    func.emitOpError("expert parallelism over '")
        << axis << "' needs MoE layers (graph.moe_dispatch); this model has none";
    return signalPassFailure();
  }
  OpBuilder b(func.getContext());
  for (MoeDispatchOp d : dispatches)
    if (failed(parallelize(d, b)))
      return signalPassFailure();
}

} // namespace
