//===- GraphInterfaces.td - Interfaces of graph ops --------*- tablegen -*-===//

#ifndef CLEAVE_DIALECT_GRAPH_IR_GRAPHINTERFACES_TD
#define CLEAVE_DIALECT_GRAPH_IR_GRAPHINTERFACES_TD

include "mlir/IR/OpBase.td"

def Graph_CostOpInterface : OpInterface<"CostOpInterface"> {
  let cppNamespace = "::cleave::graph";
  let description = [{
    The work one forward evaluation of an op does for its (static) shapes:
    floating-point operations and bytes read and written from memory. The
    cost model turns these into time with a roofline and, when a profile is
    given, measured tables. Convention: a multiply-add counts 2 FLOPs; every
    other arithmetic or transcendental evaluation counts 1 per element and
    per operation it takes (documented per op). Bytes assume each operand is
    read once and each result written once, unless the op knows better
    (a gather reads only the rows it selects).
  }];
  let methods = [
    InterfaceMethod<"Floating-point operations of one forward evaluation.",
      "double", "getFlops", (ins)>,
    InterfaceMethod<"Bytes the op reads from memory.",
      "int64_t", "getBytesRead", (ins), [{}], [{
        return ::cleave::graph::sumTensorBytes($_op->getOperands());
      }]>,
    InterfaceMethod<"Bytes the op writes to memory.",
      "int64_t", "getBytesWritten", (ins), [{}], [{
        return ::cleave::graph::sumTensorBytes($_op->getResults());
      }]>,
    InterfaceMethod<[{Whether the math runs on tensor cores at the device's
      peak for the dtype (fused attention's block products), rather than on
      CUDA cores at the fp32 vector rate (elementwise, normalisation).}],
      "bool", "usesTensorCores", (ins), [{}], [{ return false; }]>,
  ];
}

def Graph_AutodiffOpInterface : OpInterface<"AutodiffOpInterface"> {
  let cppNamespace = "::cleave::graph";
  let description = [{
    The op's reverse-mode derivative rule: given the gradients of its
    results (a null Value where no gradient flows into a result), build ops
    at the builder's insertion point that compute the gradient of each
    operand, and append one Value per operand to `operandGrads` (null for
    operands that have none, such as integer indices). The rules live in
    the compiler as external models (compiler/lib/Transforms/Autodiff), so
    the dialect stays IR only; the training-step pass drives them.
  }];
  let methods = [
    InterfaceMethod<"Builds the gradients of the operands.",
      "::llvm::LogicalResult", "buildGradients",
      (ins "::mlir::OpBuilder &":$builder,
           "::mlir::ValueRange":$resultGrads,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>,
  ];
}

#endif // CLEAVE_DIALECT_GRAPH_IR_GRAPHINTERFACES_TD
