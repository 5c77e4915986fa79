//===- RuntimeKernels.cpp - runtime.* and comm.* ops ----------------------===//
//
// The ops plan.proto defines beside the graph dialect's: arena bookkeeping
// (zero, accumulate, copy, scale) and the collectives, which go to the
// Communicator. A comm op with an async_handle >= 0 is started and parked
// in the step's pending requests; comm.wait completes it.
//
//===----------------------------------------------------------------------===//

#include "Registry.h"

#include <cstring>
#include <stdexcept>

namespace cleave::executor {

namespace {

void requireSameSize(const TensorView &a, const TensorView &b) {
  if (a.numElements() != b.numElements() || a.dtype != b.dtype)
    throw std::invalid_argument(
        "input and output differ in size or element type (" +
        std::to_string(a.numElements()) + " and " +
        std::to_string(b.numElements()) + " elements)");
}

/// Runs `request` now or parks it under the instruction's async handle.
void finish(OpContext &c, std::unique_ptr<comm::Request> request) {
  if (c.inst.has_async_handle() && c.inst.async_handle() >= 0) {
    int32_t handle = c.inst.async_handle();
    if (c.pending.count(handle))
      throw std::invalid_argument("async handle " + std::to_string(handle) +
                                  " is already in flight");
    c.pending[handle] = std::move(request);
    return;
  }
  request->wait();
}

void allReduce(OpContext &c) {
  c.expectArity(1, 1);
  finish(c, c.comm.allReduceAsync(
                c.attrStrings("axes"), commTensor(c.input(0)),
                commTensor(c.output(0)),
                comm::parseReduction(c.attrString("reduction", "sum"))));
}

void allGather(OpContext &c) {
  c.expectArity(1, 1);
  finish(c, c.comm.allGatherAsync(c.attrStrings("axes"),
                                  commTensor(c.input(0)),
                                  commTensor(c.output(0)),
                                  static_cast<int>(c.attrInt("dim"))));
}

void reduceScatter(OpContext &c) {
  c.expectArity(1, 1);
  finish(c, c.comm.reduceScatterAsync(
                c.attrStrings("axes"), commTensor(c.input(0)),
                commTensor(c.output(0)), static_cast<int>(c.attrInt("dim")),
                comm::parseReduction(c.attrString("reduction", "sum"))));
}

void allToAll(OpContext &c) {
  c.expectArity(1, 1);
  finish(c, c.comm.allToAllAsync(
                c.attrStrings("axes"), commTensor(c.input(0)),
                commTensor(c.output(0)),
                static_cast<int>(c.attrInt("split_dim")),
                static_cast<int>(c.attrInt("concat_dim"))));
}

void broadcast(OpContext &c) {
  // Either in place (one operand) or from an input into an output.
  const TensorView &buffer = c.outputs.empty() ? c.input(0) : c.output(0);
  if (!c.inputs.empty() && !c.outputs.empty() &&
      c.input(0).data != buffer.data) {
    requireSameSize(c.input(0), buffer);
    std::memcpy(buffer.data, c.input(0).data, buffer.numBytes());
  }
  finish(c, c.comm.broadcastAsync(c.attrStrings("axes"), commTensor(buffer),
                                  c.attrInt("root", 0)));
}

void send(OpContext &c) {
  c.expectArity(1, 0);
  finish(c, c.comm.sendAsync(c.attrString("axis"), c.attrInt("offset"),
                             c.attrInt("tag", 0), commTensor(c.input(0))));
}

void recv(OpContext &c) {
  c.expectArity(0, 1);
  finish(c, c.comm.recvAsync(c.attrString("axis"), c.attrInt("offset"),
                             c.attrInt("tag", 0), commTensor(c.output(0))));
}

void wait(OpContext &c) {
  int64_t handle = c.attrInt("handle");
  auto it = c.pending.find(static_cast<int32_t>(handle));
  if (it == c.pending.end())
    throw std::invalid_argument("no async op with handle " +
                                std::to_string(handle) + " is in flight");
  std::unique_ptr<comm::Request> request = std::move(it->second);
  c.pending.erase(it);
  request->wait();
}

void zero(OpContext &c) {
  for (const TensorView &out : c.outputs)
    if (out)
      std::memset(out.data, 0, out.numBytes());
}

void accumulate(OpContext &c) {
  c.expectArity(1, 1);
  kernels::ConstTensorRef in = c.in(0);
  kernels::TensorRef out = c.out(0);
  if (in.numElements() != out.numElements())
    throw std::invalid_argument("accumulates " +
                                std::to_string(in.numElements()) +
                                " elements into " +
                                std::to_string(out.numElements()));
  for (int64_t i = 0, e = out.numElements(); i < e; ++i)
    out.data[i] += in.data[i];
}

void copy(OpContext &c) {
  c.expectArity(1, 1);
  requireSameSize(c.input(0), c.output(0));
  if (c.input(0).data != c.output(0).data)
    std::memmove(c.output(0).data, c.input(0).data, c.output(0).numBytes());
}

void scale(OpContext &c) {
  c.expectArity(1, 1);
  kernels::ConstTensorRef in = c.in(0);
  kernels::TensorRef out = c.out(0);
  if (in.numElements() != out.numElements())
    throw std::invalid_argument("scales " + std::to_string(in.numElements()) +
                                " elements into " +
                                std::to_string(out.numElements()));
  float factor = static_cast<float>(c.attrFloat("factor"));
  for (int64_t i = 0, e = out.numElements(); i < e; ++i)
    out.data[i] = in.data[i] * factor;
}

} // namespace

void registerRuntimeKernels(Registry &r) {
  r["comm.all_reduce"] = allReduce;
  r["comm.all_gather"] = allGather;
  r["comm.reduce_scatter"] = reduceScatter;
  r["comm.all_to_all"] = allToAll;
  r["comm.broadcast"] = broadcast;
  r["comm.send"] = send;
  r["comm.recv"] = recv;
  r["comm.wait"] = wait;
  r["runtime.zero"] = zero;
  r["runtime.accumulate"] = accumulate;
  r["runtime.copy"] = copy;
  r["runtime.scale"] = scale;
}

} // namespace cleave::executor
