//===- HostIntegerOps.cpp - Integer tensors of imported models, on the host -===//
//
// ONNX models compute on integers at run time (position ids from a mask,
// index arithmetic, quantised pre-processing): graph arithmetic, compare,
// where, cast and the data movement ops on int8 ... uint64 tensors. Those
// tensors are small (ids and positions, not activations), so the CUDA
// backend runs these ops on the host with the CPU kernels, which define
// their semantics (wrap-around, truncating division, an error on a zero
// divisor): the operands are copied off the device after the compute
// stream drains, the CPU kernel runs, and the results are copied back.
// Float operands keep their device kernels. The cost is a stream
// synchronisation and two small copies per integer op.
//
//===----------------------------------------------------------------------===//

#include "Context.h"
#include "Ops.h"

#include "cleave/runtime/executor/Backend.h"
#include "cleave/runtime/plan/PlanIO.h"

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <vector>

namespace cleave::cuda {
namespace {

/// The ops the CPU backend runs on integer tensors (IntegerKernels.cpp).
constexpr const char *kIntegerCapable[] = {
    "graph.add",      "graph.sub",       "graph.mul",   "graph.div",
    "graph.max",      "graph.min",       "graph.mod",   "graph.bitshift",
    "graph.compare",  "graph.where",     "graph.cast",  "graph.gather",
    "graph.transpose", "graph.slice",    "graph.concat", "graph.split"};

bool isInteger(const executor::TensorView &v) {
  return v.data != nullptr && plan::isIntegerDType(v.dtype);
}

/// Whether the instruction moves or computes integer data (not merely
/// reads integer indices, as gather's second operand).
bool onIntegers(const executor::OpContext &c) {
  for (const executor::TensorView &v : c.outputs)
    if (isInteger(v))
      return true;
  // Compare and cast read integers into bool or float results; where's
  // values are its operands 1 and 2.
  const std::string &op = c.inst.op();
  size_t first = op == "graph.where" ? 1 : 0;
  for (size_t i = first; i < c.inputs.size(); ++i) {
    if (op == "graph.gather" && i == 1)
      break;
    if (isInteger(c.inputs[i]))
      return true;
  }
  return false;
}

/// The device kernels the integer-aware entries replace, by op name.
Registry &deviceKernels() {
  static Registry kernels;
  return kernels;
}

const executor::Backend &cpuBackend() {
  static const std::unique_ptr<executor::Backend> cpu =
      executor::createCpuBackend();
  return *cpu;
}

/// Runs `c` with the CPU kernel on host copies of its operands.
void runOnHost(executor::OpContext &c) {
  executor::KernelFn host = cpuBackend().findKernel(c.inst.op());
  if (!host)
    throw std::invalid_argument("no host kernel for integer operands");
  cudaStream_t stream = context().compute;
  std::vector<std::vector<char>> buffers;
  auto hostCopy = [&](std::vector<executor::TensorView> views, bool read) {
    for (executor::TensorView &v : views) {
      if (!v.data)
        continue;
      buffers.emplace_back(static_cast<size_t>(std::max<int64_t>(v.numBytes(), 1)));
      if (read)
        CLEAVE_CUDA_CHECK(cudaMemcpyAsync(buffers.back().data(), v.data,
                                          v.numBytes(),
                                          cudaMemcpyDeviceToHost, stream));
      v.data = buffers.back().data();
    }
    return views;
  };
  std::vector<executor::TensorView> inputs = hostCopy(c.inputs, true);
  // Outputs are read too: an in-place update starts from them.
  std::vector<executor::TensorView> outputs = hostCopy(c.outputs, true);
  CLEAVE_CUDA_CHECK(cudaStreamSynchronize(stream));
  executor::OpContext hostContext(c.inst, inputs, outputs, c.comm, c.pending,
                                  c.deferred);
  host(hostContext);
  // On the compute stream, which later kernels follow, and waited for:
  // the host buffers end with this call.
  for (size_t i = 0; i < outputs.size(); ++i)
    if (c.outputs[i].data)
      CLEAVE_CUDA_CHECK(cudaMemcpyAsync(c.outputs[i].data, outputs[i].data,
                                        c.outputs[i].numBytes(),
                                        cudaMemcpyHostToDevice, stream));
  CLEAVE_CUDA_CHECK(cudaStreamSynchronize(stream));
}

void integerAwareKernel(executor::OpContext &c) {
  if (onIntegers(c))
    return runOnHost(c);
  auto it = deviceKernels().find(c.inst.op());
  if (it == deviceKernels().end())
    throw std::invalid_argument("the CUDA backend runs this op on integer "
                                "tensors only");
  it->second(c);
}

} // namespace

void registerHostIntegerOps(Registry &registry) {
  for (const char *op : kIntegerCapable) {
    auto it = registry.find(op);
    if (it != registry.end())
      deviceKernels()[op] = it->second;
    registry[op] = integerAwareKernel;
  }
}

} // namespace cleave::cuda
