//===- RuntimeKernels.cpp - runtime.* and comm.* ops ----------------------===//
//
// The ops plan.proto defines beside the graph dialect's: arena bookkeeping
// (zero, accumulate, copy, scale) and the collectives, which go to the
// Communicator. A comm op with an async_handle >= 0 is started and parked
// in the step's pending requests; comm.wait completes it.
//
//===----------------------------------------------------------------------===//

#include "Registry.h"

#include "cleave/runtime/plan/PlanIO.h"

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

/// Runs `request` now, parks it under the instruction's async handle, or
/// (a `buffered` send) leaves it to the end of the step.
void finish(OpContext &c, std::unique_ptr<comm::Request> request) {
  if (c.inst.has_async_handle() && c.inst.async_handle() >= 0) {
    int32_t handle = c.inst.async_handle();
    if (c.pending.count(handle))
      throw std::invalid_argument("async handle " + std::to_string(handle) +
                                  " is already in flight");
    c.pending[handle] = std::move(request);
    return;
  }
  if (c.attrBool("buffered")) {
    // The executor waited for the slot's previous send before this run.
    std::unique_ptr<comm::Request> &slot = c.deferred[c.inputs.at(0).data];
    if (slot)
      slot->wait();
    slot = std::move(request);
    return;
  }
  request->wait();
}

/// The group's axes; a `group_size` attribute (the graph dialect's
/// collectives carry one) must match the mesh, or the plan and the launch
/// disagree.
comm::Axes groupAxes(const OpContext &c) {
  comm::Axes axes = c.attrStrings("axes");
  if (c.has("group_size")) {
    int64_t expected = c.attrInt("group_size");
    int64_t actual = c.comm.groupSize(axes);
    if (expected != actual)
      throw std::invalid_argument("group_size is " + std::to_string(expected) +
                                  " but the mesh group has " +
                                  std::to_string(actual) + " ranks");
  }
  return axes;
}

void allReduce(OpContext &c) {
  c.expectArity(1, 1);
  finish(c, c.comm.allReduceAsync(
                groupAxes(c), commTensor(c.input(0)),
                commTensor(c.output(0)),
                comm::parseReduction(c.attrString("reduction", "sum"))));
}

void allGather(OpContext &c) {
  c.expectArity(1, 1);
  finish(c, c.comm.allGatherAsync(groupAxes(c),
                                  commTensor(c.input(0)),
                                  commTensor(c.output(0)),
                                  static_cast<int>(c.attrInt("dim"))));
}

void reduceScatter(OpContext &c) {
  c.expectArity(1, 1);
  finish(c, c.comm.reduceScatterAsync(
                groupAxes(c), commTensor(c.input(0)),
                commTensor(c.output(0)), static_cast<int>(c.attrInt("dim")),
                comm::parseReduction(c.attrString("reduction", "sum"))));
}

void allToAll(OpContext &c) {
  c.expectArity(1, 1);
  finish(c, c.comm.allToAllAsync(
                groupAxes(c), commTensor(c.input(0)),
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
  finish(c, c.comm.broadcastAsync(groupAxes(c), commTensor(buffer),
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
  // A collective carried over from the previous step: the first step has
  // none to wait for (its parameters are the initial ones).
  if (it == c.pending.end() && c.attrBool("carried"))
    return;
  if (it == c.pending.end())
    throw std::invalid_argument("no async op with handle " +
                                std::to_string(handle) + " is in flight");
  std::unique_ptr<comm::Request> request = std::move(it->second);
  c.pending.erase(it);
  request->wait();
}

/// graph.shard_slice: this rank's block along `dim` of a tensor the group
/// holds in full (no communication); with `zigzag`, chunks g and 2n - 1 - g
/// of the 2n the dimension is cut into.
void shardSlice(OpContext &c) {
  c.expectArity(1, 1);
  comm::Axes axes = groupAxes(c);
  const TensorView &in = c.input(0), &out = c.output(0);
  int64_t n = c.comm.groupSize(axes), g = c.comm.mesh().groupRank(axes);
  int64_t dim = c.attrInt("dim");
  if (in.dtype != out.dtype || dim < 0 ||
      dim >= static_cast<int64_t>(in.shape.size()) ||
      in.shape[dim] != out.shape[dim] * n ||
      in.numElements() != out.numElements() * n)
    throw std::invalid_argument("the output is not block " + std::to_string(g) +
                                " of " + std::to_string(n) + " of the input");
  int64_t outer = 1, inner = plan::dtypeBytes(in.dtype);
  for (int64_t d = 0; d < dim; ++d)
    outer *= in.shape[d];
  for (size_t d = dim + 1; d < in.shape.size(); ++d)
    inner *= in.shape[d];
  int64_t block = out.shape[dim] * inner;
  const char *src = static_cast<const char *>(in.data);
  char *dst = static_cast<char *>(out.data);
  if (c.attrBool("zigzag")) {
    if (out.shape[dim] % 2)
      throw std::invalid_argument("zigzag: block " + std::to_string(g) +
                                  " has an odd length along dim " +
                                  std::to_string(dim));
    int64_t chunk = block / 2, chunks = 2 * n;
    for (int64_t o = 0; o < outer; ++o) {
      std::memcpy(dst + o * block, src + (o * chunks + g) * chunk, chunk);
      std::memcpy(dst + o * block + chunk,
                  src + (o * chunks + chunks - 1 - g) * chunk, chunk);
    }
    return;
  }
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(dst + o * block, src + (o * n + g) * block, block);
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
  // The graph dialect's communication ops (GraphCollectiveOps.td), should a
  // plan carry them under their own names; same attributes.
  r["graph.all_reduce"] = allReduce;
  r["graph.all_gather"] = allGather;
  r["graph.reduce_scatter"] = reduceScatter;
  r["graph.all_to_all"] = allToAll;
  r["graph.send"] = send;
  r["graph.recv"] = recv;
  r["graph.shard_slice"] = shardSlice;
  r["comm.shard_slice"] = shardSlice;
  r["graph.copy_to_group"] = copy;
  r["runtime.zero"] = zero;
  r["runtime.accumulate"] = accumulate;
  r["runtime.copy"] = copy;
  r["runtime.scale"] = scale;
}

} // namespace cleave::executor
