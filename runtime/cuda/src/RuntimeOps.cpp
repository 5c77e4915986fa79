//===- RuntimeOps.cpp - comm.* and runtime bookkeeping on the GPU ---------===//
//
// The collectives' glue is the CPU backend's (RuntimeKernels.cpp): it only
// hands device pointers to the Communicator (NCCL here), parks requests
// under their async handles and completes buffered sends, none of which
// touches tensor memory. Only what the host would copy itself differs: a
// broadcast from an input into another output, and zeroing.
//
//===----------------------------------------------------------------------===//

#include "Ops.h"

#include "Context.h"

#include <stdexcept>

namespace cleave::cuda {

using executor::OpContext;
using executor::TensorView;

namespace {

void zeroKernel(OpContext &c) {
  for (const TensorView &out : c.outputs)
    if (out)
      CLEAVE_CUDA_CHECK(
          cudaMemsetAsync(out.data, 0, out.numBytes(), context().compute));
}

/// Either in place (one operand) or from an input into an output: the copy
/// goes first on the compute stream, then the CPU glue's broadcast of the
/// output in place.
void broadcastKernel(OpContext &c) {
  static executor::KernelFn inPlace = executor::findKernel("comm.broadcast");
  if (!c.inputs.empty() && !c.outputs.empty() &&
      c.input(0).data != c.output(0).data) {
    const TensorView &in = c.input(0), &out = c.output(0);
    if (in.numBytes() != out.numBytes() || in.dtype != out.dtype)
      throw std::invalid_argument("input and output differ in size or "
                                  "element type");
    CLEAVE_CUDA_CHECK(cudaMemcpyAsync(out.data, in.data, out.numBytes(),
                                      cudaMemcpyDeviceToDevice,
                                      context().compute));
    OpContext rest(c.inst, {out}, {out}, c.comm, c.pending, c.deferred);
    return inPlace(rest);
  }
  inPlace(c);
}

} // namespace

void registerRuntimeOps(Registry &r) {
  for (const char *op :
       {"comm.all_reduce", "comm.all_gather", "comm.reduce_scatter",
        "comm.all_to_all", "comm.send", "comm.recv", "comm.wait",
        "graph.all_reduce", "graph.all_gather", "graph.reduce_scatter",
        "graph.all_to_all", "graph.send", "graph.recv"}) {
    executor::KernelFn fn = executor::findKernel(op);
    if (!fn)
      throw std::logic_error(std::string("the CPU backend has no glue for ") +
                             op);
    r[op] = fn;
  }
  r["comm.broadcast"] = broadcastKernel;
  r["runtime.zero"] = zeroKernel;
}

} // namespace cleave::cuda
