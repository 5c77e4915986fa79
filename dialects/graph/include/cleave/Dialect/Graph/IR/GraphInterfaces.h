//===- GraphInterfaces.h - Interfaces of graph ops --------------*- C++ -*-===//

#ifndef CLEAVE_DIALECT_GRAPH_IR_GRAPHINTERFACES_H
#define CLEAVE_DIALECT_GRAPH_IR_GRAPHINTERFACES_H

#include "cleave/Dialect/Graph/IR/ShapeInference.h"
#include "mlir/IR/OpDefinition.h"

#include "cleave/Dialect/Graph/IR/GraphInterfaces.h.inc"

#endif // CLEAVE_DIALECT_GRAPH_IR_GRAPHINTERFACES_H
