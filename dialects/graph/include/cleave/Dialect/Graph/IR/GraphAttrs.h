//===- GraphAttrs.h - Attributes of the graph dialect ------------*- C++ -*-===//

#ifndef CLEAVE_DIALECT_GRAPH_IR_GRAPHATTRS_H
#define CLEAVE_DIALECT_GRAPH_IR_GRAPHATTRS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/SmallVector.h"

#include "cleave/Dialect/Graph/IR/GraphEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "cleave/Dialect/Graph/IR/GraphAttrs.h.inc"

namespace cleave::graph {

/// The discardable attribute that holds an op's OpShardingAttr.
constexpr llvm::StringLiteral kShardingAttrName = "graph.sharding";

/// The op's sharding, if the search annotated it.
inline OpShardingAttr getSharding(mlir::Operation *op) {
  return op->getAttrOfType<OpShardingAttr>(kShardingAttrName);
}

} // namespace cleave::graph

#endif // CLEAVE_DIALECT_GRAPH_IR_GRAPHATTRS_H
