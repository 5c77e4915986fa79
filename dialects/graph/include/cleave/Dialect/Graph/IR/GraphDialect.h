//===- GraphDialect.h - The graph dialect -----------------------*- C++ -*-===//

#ifndef CLEAVE_DIALECT_GRAPH_IR_GRAPHDIALECT_H
#define CLEAVE_DIALECT_GRAPH_IR_GRAPHDIALECT_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Dialect.h"

#include "cleave/Dialect/Graph/IR/GraphOpsDialect.h.inc"

#endif // CLEAVE_DIALECT_GRAPH_IR_GRAPHDIALECT_H
