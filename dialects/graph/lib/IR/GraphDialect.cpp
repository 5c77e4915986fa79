//===- GraphDialect.cpp - The graph dialect -------------------------------===//

#include "cleave/Dialect/Graph/IR/GraphDialect.h"
#include "cleave/Dialect/Graph/IR/GraphAttrs.h"
#include "cleave/Dialect/Graph/IR/GraphOps.h"

using namespace mlir;
using namespace cleave::graph;

#include "cleave/Dialect/Graph/IR/GraphOpsDialect.cpp.inc"
#include "cleave/Dialect/Graph/IR/GraphInterfaces.cpp.inc"

void GraphDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "cleave/Dialect/Graph/IR/GraphOps.cpp.inc"
      >();
  registerAttributes();
}
