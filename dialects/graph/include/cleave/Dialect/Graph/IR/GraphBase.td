//===- GraphBase.td - The graph dialect --------------------*- tablegen -*-===//
//
// The graph dialect holds a model as a dataflow graph of tensor operators at
// the granularity of ONNX and PyTorch operators. Every importer (ONNX, the
// model zoo, MLIR text) produces it; the planner annotates it; the lowering
// partitions it. All shapes are static: symbolic dimensions are bound at
// import (`--batch`, `--seq`, `--dim NAME=VALUE`), because the cost model
// needs concrete sizes to price every choice.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_DIALECT_GRAPH_IR_GRAPHBASE_TD
#define CLEAVE_DIALECT_GRAPH_IR_GRAPHBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/IR/CommonTypeConstraints.td"

def Graph_Dialect : Dialect {
  let name = "graph";
  let cppNamespace = "::cleave::graph";
  let summary = "Tensor operator graphs of large models, with static shapes";
  let description = [{
    A model is a `func.func` whose body reads `graph.input` values (data fed
    per step) and `graph.param` values (trainable or frozen weights, named so
    that plans and checkpoints can refer to them), applies graph operators,
    and returns its outputs (a scalar loss for a training graph).

    Every operator infers its result shape from its operands and attributes
    (so builders and importers never spell result types by hand), verifies
    its operands, and reports its FLOPs and bytes moved through
    `CostOpInterface`, which is what the cost model prices.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect"];
  // `graph.sharding` (GraphAttrs.td) is checked against the op it is on.
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    void registerAttributes();
  }];
}

class Graph_Op<string mnemonic, list<Trait> traits = []>
    : Op<Graph_Dialect, mnemonic, traits>;

// Tensors the graph computes on. Shapes are always static (see above).
def Graph_FloatTensor : StaticShapeTensorOf<[AnyFloat]>;
def Graph_IndexTensor : StaticShapeTensorOf<[AnySignlessInteger]>;
def Graph_BoolTensor : StaticShapeTensorOf<[I1]>;
// Integers of any width and signedness (ONNX's uint8 is ui8): the integer
// arithmetic of imported models (position ids, index arithmetic, the clamps
// of quantised pre-processing).
def Graph_IntegerTensor : StaticShapeTensorOf<[AnySignlessInteger,
                                               AnyUnsignedInteger]>;
// What graph.add, sub, mul, div, max and min compute on: floats (and
// their gradients) or integers (no gradients).
def Graph_NumericTensor : StaticShapeTensorOf<[AnyFloat, AnySignlessInteger,
                                               AnyUnsignedInteger]>;
def Graph_Tensor : StaticShapeTensorOf<[AnyType]>;

#endif // CLEAVE_DIALECT_GRAPH_IR_GRAPHBASE_TD
