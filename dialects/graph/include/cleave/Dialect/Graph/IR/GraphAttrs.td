//===- GraphAttrs.td - Attributes of the graph dialect -----*- tablegen -*-===//
//
// The sharding the intra-operator search chooses for an op, as the SPMD
// partitioner reads it: one typed, verified attribute `graph.sharding` in
// place of loose strings and arrays (Shardy's TensorShardingAttr is the
// model: per tensor, per dimension, the mesh axes that split it).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_DIALECT_GRAPH_IR_GRAPHATTRS_TD
#define CLEAVE_DIALECT_GRAPH_IR_GRAPHATTRS_TD

include "cleave/Dialect/Graph/IR/GraphBase.td"
include "mlir/IR/EnumAttr.td"

def Graph_PartialReduction : I32EnumAttr<"PartialReduction",
    "how the partial results of a sharded op become whole", [
      I32EnumAttrCase<"None", 0, "none">,
      // All-reduced: the result is replicated.
      I32EnumAttrCase<"AllReduce", 1, "all_reduce">,
      // Reduce-scattered: the result is split as the sharding says.
      I32EnumAttrCase<"ReduceScatter", 2, "reduce_scatter">,
      // Each device holds the mean over its share (a loss over a split
      // batch); their all-reduced mean is the whole result.
      I32EnumAttrCase<"AllReduceMean", 3, "all_reduce_mean">]> {
  let cppNamespace = "::cleave::graph";
  let genSpecializedAttr = 0;
}

def Graph_TensorShardingAttr : AttrDef<Graph_Dialect, "TensorSharding"> {
  let mnemonic = "tensor_sharding";
  let summary = "The mesh axes that split each dimension of a tensor";
  let description = [{
    One list of mesh axes per dimension, outermost first, in square
    brackets: `{}` keeps the dimension whole, `{0}` splits it over mesh
    axis 0, `{0, 1}` over axes 0 and 1 (axis 0 major). An axis splits at
    most one dimension. A matrix split by columns over axis 0 is
    `#graph.tensor_sharding<[{}, {0} ]>` (printed without the space).
  }];
  // One DenseI64ArrayAttr of axes per dimension.
  let parameters = (ins "::mlir::ArrayAttr":$dims);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let builders = [
    AttrBuilder<(ins "::llvm::ArrayRef<::llvm::SmallVector<int64_t>>":$axes)>
  ];
  let extraClassDeclaration = [{
    int64_t getRank() const { return getDims().size(); }
    /// The mesh axes that split dimension `dim`.
    ::llvm::ArrayRef<int64_t> axesOf(int64_t dim) const;
    /// The dimension mesh axis `axis` splits, or -1.
    int64_t dimOf(int64_t axis) const;
    /// The bracketed axis lists alone.
    void printDims(::mlir::AsmPrinter &printer) const;
    static TensorShardingAttr parseDims(::mlir::AsmParser &parser);
  }];
}

def Graph_OpShardingAttr : AttrDef<Graph_Dialect, "OpSharding"> {
  let mnemonic = "op_sharding";
  let summary = "The sharding strategy the search chose for an op";
  let description = [{
    The strategy's name (for the partitioner's expansions and messages),
    how each operand must arrive and how each result is produced, and how
    partial results become whole. Attached to an op as `graph.sharding`;
    the dialect checks that it has one tensor sharding per operand and
    result, of that value's rank.

    A row-parallel matmul whose partial sums are all-reduced reads its
    input split by columns and its weight by rows, and returns the whole
    product (each tensor sharding is written in angle brackets as in
    TensorShardingAttr, so that no two square brackets meet):

    ```
    graph.sharding = #graph.op_sharding<"matmul.k+ar",
        operands = [A, W], results = [Y], partial = all_reduce>
    ```

    with A split by columns over axis 0, W by rows, and Y whole
    (`test/Partition/spmd-partition.mlir` has it in full).
  }];
  let parameters = (ins
    StringRefParameter<"the strategy's name">:$strategy,
    ArrayRefParameter<"TensorShardingAttr">:$operands,
    ArrayRefParameter<"TensorShardingAttr">:$results,
    "PartialReduction":$partial);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

#endif // CLEAVE_DIALECT_GRAPH_IR_GRAPHATTRS_TD
