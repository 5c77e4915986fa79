//===- IntraOpSearchPass.cpp - cleave-intra-op-search ---------------------===//

#include "cleave/Search/IntraOpSearch.h"
#include "cleave/Transforms/Passes.h"

#include "cleave/Dialect/Graph/IR/GraphAttrs.h"
#include "cleave/Dialect/Graph/IR/GraphDialect.h"
#include "cleave/cost_model/Cluster.h"
#include "cleave/cost_model/Profile.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <optional>

namespace cleave {
#define GEN_PASS_DEF_INTRAOPSEARCH
#include "cleave/Transforms/Passes.h.inc"
} // namespace cleave

using namespace mlir;

namespace cleave::search {

/// Per value, the mesh axes that split each of its dimensions.
static SmallVector<graph::TensorShardingAttr>
tensorShardings(MLIRContext *ctx, ValueRange values,
                llvm::ArrayRef<int64_t> layouts, unsigned meshAxes) {
  SmallVector<graph::TensorShardingAttr> out;
  for (auto [v, layout] : llvm::zip(values, layouts)) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    int64_t rank = t ? t.getRank() : 0;
    SmallVector<SmallVector<int64_t>> axesOf(rank);
    for (auto [axis, dim] : llvm::enumerate(unpackLayout(layout, meshAxes)))
      if (dim != kReplicated && dim < rank)
        axesOf[dim].push_back(static_cast<int64_t>(axis));
    out.push_back(graph::TensorShardingAttr::get(ctx, axesOf));
  }
  return out;
}

Attribute shardingAttrOf(Operation *op, const ShardingStrategy &s,
                         unsigned meshAxes) {
  MLIRContext *ctx = op->getContext();
  return graph::OpShardingAttr::get(
      ctx, s.name,
      tensorShardings(ctx, op->getOperands(), s.operands, meshAxes),
      tensorShardings(ctx, op->getResults(), s.results, meshAxes), s.partial);
}

void annotateIntraOpPlan(const IntraOpPlan &plan) {
  for (auto [op, s] : llvm::zip(plan.ops, plan.strategies))
    op->setAttr(graph::kShardingAttrName,
                shardingAttrOf(op, s, plan.meshAxes));
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
                         << "': " << std::string(cluster.status().message());
      return signalPassFailure();
    }
    if (sequenceParallel && noSequenceParallel) {
      func.emitOpError("sequence-parallel and no-sequence-parallel both "
                       "set: sequence parallelism is asked for and ruled out");
      return signalPassFailure();
    }
    cleave::search::IntraOpOptions options;
    // The plan was priced with the profile; its shardings are chosen with
    // it too, or the program runs other collectives than were priced.
    std::optional<cleave::cost::Profile> profile;
    if (!profilePath.empty()) {
      auto loaded = cleave::cost::loadProfileFile(profilePath);
      if (!loaded.ok()) {
        func.emitOpError() << "bad profile: "
                          << std::string(loaded.status().message());
        return signalPassFailure();
      }
      profile = *std::move(loaded);
      options.profile = &*profile;
    }
    options.paramMemoryBytes = paramMemory;
    options.timeLimitSeconds = timeLimit;
    options.relativeGap = relativeGap;
    options.sequenceParallel = sequenceParallel;
    options.noSequenceParallel = noSequenceParallel;
    options.noBatchSplit = noBatchSplit;
    options.contextParallel = contextParallel;
    options.training = training;
    options.tieRepeatedLayers = tieRepeatedLayers;
    options.mergeFollowers = mergeFollowers;
    options.lpRounding = lpRounding;
    options.maxNodes = maxNodes;
    SmallVector<int64_t, 3> shape = {mesh};
    if (!meshShape.empty()) {
      shape.clear();
      SmallVector<StringRef> parts;
      StringRef(meshShape).split(parts, 'x');
      for (StringRef part : parts) {
        int64_t n;
        if (part.trim().getAsInteger(10, n) || n < 1) {
          func.emitOpError() << "bad mesh-shape '" << meshShape
                             << "': expected sizes joined by 'x', e.g. 2x4";
          return signalPassFailure();
        }
        shape.push_back(n);
      }
    }
    FailureOr<cleave::search::IntraOpPlan> plan =
        cleave::search::searchIntraOp(func, *cluster, shape, options);
    if (failed(plan))
      return signalPassFailure();
    cleave::search::annotateIntraOpPlan(*plan);
    if (report)
      func.emitRemark() << "intra-op search: " << plan->ops.size() << " ops"
                        << (plan->solvedNodes < int64_t(plan->ops.size())
                                ? " (" + std::to_string(plan->solvedNodes) +
                                      " after reduction)"
                                : std::string())
                        << ", "
                        << plan->numVariables << " variables ("
                        << plan->numIntegerVariables << " binary), "
                        << plan->numConstraints << " constraints; "
                        << (plan->rounded   ? "rounded"
                            : plan->optimal ? "solved"
                                            : "time limit")
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
