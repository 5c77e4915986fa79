//===- ShardingStrategy.h - How one op runs on a 1-D mesh -------*- C++ -*-===//
//
// A sharding strategy says, for every operand and result of an op, which
// tensor dimension is split over the (1-D, tensor-parallel) mesh, and what
// communication the op itself then needs. The rules that enumerate them are
// external models of ShardingStrategyOpInterface (ShardingStrategies.cpp);
// the intra-operator search (IntraOpSearch.h) picks one per op.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_SEARCH_SHARDINGSTRATEGY_H
#define CLEAVE_SEARCH_SHARDINGSTRATEGY_H

#include "cleave/Dialect/Graph/IR/GraphAttrs.h"
#include "cleave/cost_model/Collectives.h"
#include "cleave/cost_model/OperatorCost.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/OpDefinition.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <string>

namespace cleave::search {

/// The layout of a tensor not split over the mesh.
inline constexpr int64_t kReplicated = -1;

/// How an op that computes partial sums (a split contraction dimension)
/// turns them into its declared result layout: the graph dialect's enum,
/// which its sharding attribute carries (GraphAttrs.td).
using PartialReduction = graph::PartialReduction;

/// A collective the strategy itself issues, in the cost model's convention
/// for `bytes` (see cost_model/Collectives.h).
struct StrategyCollective {
  cost::Collective kind;
  double bytes = 0;
  /// The mesh axis whose groups run it (a strategy composed over a mesh of
  /// several axes issues each axis's collectives on that axis).
  unsigned axis = 0;
};

struct ShardingStrategy {
  /// Short and stable: "replicated", "split2", "matmul.n", "matmul.k+ar".
  std::string name;
  /// Required layout per operand: a dimension or kReplicated (also for
  /// operands that are not ranked tensors).
  llvm::SmallVector<int64_t> operands;
  /// Layout per result, after the strategy's own collectives.
  llvm::SmallVector<int64_t> results;
  PartialReduction partial = PartialReduction::None;
  llvm::SmallVector<StrategyCollective> collectives;
  /// The fraction of the op's FLOPs and bytes one device does.
  double workShare = 1.0;
  /// For contractions: the per-device GEMM, priced by estimateGemm rather
  /// than from workShare.
  std::optional<cost::Gemm> gemm;
};

/// The all-replicated strategy of `op` (what ops without rules get).
ShardingStrategy replicatedStrategy(mlir::Operation *op);

/// The cost model's dtype for an element type (fp32 when unknown).
cost::DType costDType(mlir::Type elementType);

/// Attaches ShardingStrategyOpInterface to the graph ops that have rules.
void registerShardingStrategyExternalModels(mlir::DialectRegistry &registry);

} // namespace cleave::search

#include "cleave/Search/ShardingStrategyInterface.h.inc"

#endif // CLEAVE_SEARCH_SHARDINGSTRATEGY_H
