//===- GraphOps.h - Operators of the graph dialect --------------*- C++ -*-===//

#ifndef CLEAVE_DIALECT_GRAPH_IR_GRAPHOPS_H
#define CLEAVE_DIALECT_GRAPH_IR_GRAPHOPS_H

#include "cleave/Dialect/Graph/IR/GraphDialect.h"
#include "cleave/Dialect/Graph/IR/GraphInterfaces.h"
#include "cleave/Dialect/Graph/IR/ShapeInference.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "cleave/Dialect/Graph/IR/GraphOps.h.inc"

#endif // CLEAVE_DIALECT_GRAPH_IR_GRAPHOPS_H
