//===- ShardingStrategyInterface.td - Sharding strategies --*- tablegen -*-===//

#ifndef CLEAVE_SEARCH_SHARDINGSTRATEGYINTERFACE_TD
#define CLEAVE_SEARCH_SHARDINGSTRATEGYINTERFACE_TD

include "mlir/IR/OpBase.td"

def ShardingStrategyOpInterface : OpInterface<"ShardingStrategyOpInterface"> {
  let cppNamespace = "::cleave::search";
  let description = [{
    The ways an op can run on a 1-D device mesh: for each strategy, which
    dimension of every operand and result is split over the mesh (or none),
    whether the op leaves partial sums that it reduces itself, and the
    collectives that needs. The intra-operator search
    (`cleave-intra-op-search`) picks one strategy per op. The rules live in
    the compiler as external models (compiler/lib/Search), so the dialect
    stays IR only; ops without a model run replicated.
  }];
  let methods = [
    InterfaceMethod<"Appends the op's strategies on a mesh of `meshSize`.",
      "void", "getShardingStrategies",
      (ins "int64_t":$meshSize,
           "::llvm::SmallVectorImpl<::cleave::search::ShardingStrategy> &":$strategies)>,
  ];
}

#endif // CLEAVE_SEARCH_SHARDINGSTRATEGYINTERFACE_TD
