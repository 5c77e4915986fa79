//===- Passes.h - The lowering's passes -------------------------*- C++ -*-===//

#ifndef CLEAVE_LOWERING_PASSES_H
#define CLEAVE_LOWERING_PASSES_H

#include "mlir/Pass/Pass.h"

namespace cleave::graph {
class GraphDialect;
} // namespace cleave::graph

namespace cleave::lowering {

#define GEN_PASS_DECL
#include "cleave/Lowering/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "cleave/Lowering/Passes.h.inc"

} // namespace cleave::lowering

#endif // CLEAVE_LOWERING_PASSES_H
