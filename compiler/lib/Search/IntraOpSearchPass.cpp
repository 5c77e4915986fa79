//===- IntraOpSearchPass.cpp - cleave-intra-op-search ---------------------===//

#include "cleave/Search/IntraOpSearch.h"
#include "cleave/Transforms/Passes.h"

#include "cleave/Dialect/Graph/IR/GraphDialect.h"
#include "cleave/cost_model/Cluster.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace cleave {
#define GEN_PASS_DEF_INTRAOPSEARCH
#include "cleave/Transforms/Passes.h.inc"
} // namespace cleave

using namespace mlir;

namespace cleave::search {

/// One array per value: the mesh axis (0) over which each dimension is
/// split, or -1.
static ArrayAttr layoutAttr(Builder &b, ValueRange values,
                            llvm::ArrayRef<int64_t> dims) {
  SmallVector<Attribute> arrays;
  for (auto [v, dim] : llvm::zip(values, dims)) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    SmallVector<int64_t> axes(t ? t.getRank() : 0, -1);
    if (dim != kReplicated && dim < int64_t(axes.size()))
      axes[dim] = 0;
    arrays.push_back(b.getDenseI64ArrayAttr(axes));
  }
  return b.getArrayAttr(arrays);
}

void annotateIntraOpPlan(const IntraOpPlan &plan) {
  for (auto [op, s] : llvm::zip(plan.ops, plan.strategies)) {
    Builder b(op->getContext());
    op->setAttr("cleave.strategy", b.getStringAttr(s.name));
    op->setAttr("cleave.sharding", layoutAttr(b, op->getResults(), s.results));
    if (op->getNumOperands())
      op->setAttr("cleave.operand_sharding",
                  layoutAttr(b, op->getOperands(), s.operands));
    if (s.partial != PartialReduction::None)
      op->setAttr("cleave.partial",
                  b.getStringAttr(partialReductionName(s.partial)));
    else
      op->removeAttr("cleave.partial");
  }
}

} // namespace cleave::search

namespace {

struct IntraOpSearchPass
    : public cleave::impl::IntraOpSearchBase<IntraOpSearchPass> {
  using IntraOpSearchBase::IntraOpSearchBase;

  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<cleave::graph::GraphDialect>();
    cleave::search::registerShardingStrategyExternalModels(registry);
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    auto cluster = cleave::cost::parseCluster(clusterSpec);
    if (!cluster.ok()) {
      func.emitOpError() << "bad cluster '" << clusterSpec
                         << "': " << cluster.status().message();
      return signalPassFailure();
    }
    cleave::search::IntraOpOptions options;
    options.paramMemoryBytes = paramMemory;
    options.timeLimitSeconds = timeLimit;
    options.relativeGap = relativeGap;
    options.sequenceParallel = sequenceParallel;
    options.contextParallel = contextParallel;
    options.training = training;
    options.tieRepeatedLayers = tieRepeatedLayers;
    FailureOr<cleave::search::IntraOpPlan> plan =
        cleave::search::searchIntraOp(func, *cluster, mesh, options);
    if (failed(plan))
      return signalPassFailure();
    cleave::search::annotateIntraOpPlan(*plan);
    if (report)
      func.emitRemark() << "intra-op search: " << plan->ops.size() << " ops"
                        << (plan->solvedNodes < int64_t(plan->ops.size())
                                ? " (" + std::to_string(plan->solvedNodes) +
                                      " after tying repeated layers)"
                                : std::string())
                        << ", "
                        << plan->numVariables << " variables ("
                        << plan->numIntegerVariables << " binary), "
                        << plan->numConstraints << " constraints; "
                        << (plan->optimal ? "solved" : "time limit")
                        << ", objective " << plan->objective * 1e3
                        << " ms, gap " << plan->gap * 100 << "%, solved in "
                        << plan->solveSeconds << " s";
    numOps += plan->ops.size();
    numShardedOps += llvm::count_if(
        plan->strategies, [](const auto &s) { return s.name != "replicated"; });
    numVariables += plan->numVariables;
  }
};

} // namespace
