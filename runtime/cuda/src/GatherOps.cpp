//===- GatherOps.cpp - gather and gather_grad on the GPU ------------------===//
//
// The host half of the gather family: operands, attributes and shape checks
// as runtime/executor/src/ComputeKernels.cpp and GradKernels.cpp have them
// (the result shape is the CPU's gatherShape), then a launch on the compute
// stream. The indices stay in device memory, so their range is not checked
// here; see kernels/Gather.h for what an out-of-range index gives.
//
//===----------------------------------------------------------------------===//

#include "Context.h"
#include "OpChecks.h"
#include "Ops.h"
#include "kernels/Gather.h"

#include "cleave/runtime/kernels/DataMovement.h"

#include <stdexcept>
#include <string>

namespace cleave::cuda {
namespace {

using executor::OpContext;
using kernels::Shape;

/// The data (or table) around the gathered axis: [outer, size, inner].
struct GatherDims {
  int64_t outer = 1, size = 1, inner = 1;
};

GatherDims gatherDims(const Shape &table, int64_t axis) {
  GatherDims d;
  for (int64_t i = 0; i < axis; ++i)
    d.outer *= table[i];
  d.size = table[axis];
  for (size_t i = axis + 1; i < table.size(); ++i)
    d.inner *= table[i];
  return d;
}

void gatherKernel(OpContext &c) {
  c.expectArity(2, 1);
  kernels::ConstTensorRef data = c.in(0);
  kernels::IndexRef indices = c.index(1);
  kernels::TensorRef out = c.out(0);
  int64_t axis = c.attrAxis("axis", data.rank());
  // gatherShape checks the axis.
  checkShape("gather", "result", out.shape,
             kernels::gatherShape(data.shape, indices.shape, axis));
  GatherDims d = gatherDims(data.shape, axis);
  launchGather(data.data, indices.data, out.data, d.outer, d.size, d.inner,
               indices.numElements(), context().compute);
}

// Operands: grad, indices; the result has the gathered table's shape.
void gatherGradKernel(OpContext &c) {
  c.expectArity(2, 1);
  kernels::ConstTensorRef dOut = c.in(0);
  kernels::IndexRef indices = c.index(1);
  kernels::TensorRef dData = c.out(0);
  int64_t axis = c.attrAxis("axis", dData.rank());
  checkShape("gather_grad", "dOut", dOut.shape,
             kernels::gatherShape(dData.shape, indices.shape, axis));
  GatherDims d = gatherDims(dData.shape, axis);
  int64_t count = indices.numElements();
  Scratch workspace(gatherGradWorkspaceBytes(count, d.size));
  launchGatherGrad(indices.data, dOut.data, dData.data, d.outer, d.size,
                   d.inner, count, workspace.data(), context().compute);
}

} // namespace

void registerGatherOps(Registry &r) {
  r["graph.gather"] = gatherKernel;
  r["graph.gather_grad"] = gatherGradKernel;
}

} // namespace cleave::cuda
