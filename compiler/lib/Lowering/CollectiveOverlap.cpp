//===- CollectiveOverlap.cpp - ZeRO's collectives beside the compute ------===//

#include "cleave/Lowering/CollectiveOverlap.h"

#include <algorithm>
#include <deque>
#include <map>
#include <set>

namespace cleave::lowering {

namespace {

plan::Instruction waitFor(int32_t handle) {
  plan::Instruction wait;
  wait.set_op("comm.wait");
  (*wait.mutable_attrs())["handle"].set_i(handle);
  return wait;
}

template <typename Pred>
bool touchesAny(const plan::Instruction &inst, Pred pred) {
  for (int id : inst.inputs())
    if (pred(id))
      return true;
  for (int id : inst.outputs())
    if (pred(id))
      return true;
  return false;
}

bool isSynchronous(const plan::Instruction &inst, const char *op) {
  return inst.op() == op &&
         (!inst.has_async_handle() || inst.async_handle() < 0) &&
         inst.inputs_size() == 1 && inst.outputs_size() == 1;
}

/// ZeRO's collectives run over the data-parallel replicas ("dp", with "ep"
/// for an MoE's dense parameters). Tensor- and context-parallel ones stay
/// where the partitioner put them: their results feed the pass at once,
/// and a tensor-parallel gradient may be accumulated into a data-parallel
/// bucket, whose all-reduce starts right after that accumulation (a
/// deferred one would race with it; the bucket aliases the gradient, which
/// the instructions do not show).
bool overReplicas(const plan::Instruction &inst) {
  auto axes = inst.attrs().find("axes");
  if (axes == inst.attrs().end() || !axes->second.has_strings())
    return false;
  const auto &names = axes->second.strings().values();
  return std::find(names.begin(), names.end(), "dp") != names.end();
}

} // namespace

OverlapCounts overlapCollectives(std::vector<plan::Instruction> &segment,
                                 const plan::Program &program, int &nextHandle,
                                 int64_t windowBytes) {
  OverlapCounts counts;
  auto bytes = [&](int id) { return program.tensors(id).bytes(); };
  auto kind = [&](int id) { return program.tensors(id).kind(); };
  std::map<int, int> readers;
  for (const plan::Instruction &inst : segment)
    for (int id : inst.inputs())
      ++readers[id];

  // The parameters' gathers, in program order; a gather of a parameter's
  // 16-bit copy (ZeRO-3 under mixed precision) starts with its cast.
  std::vector<size_t> gathers;
  std::map<size_t, size_t> gatherAt; // position -> ordinal
  std::set<size_t> castsOfGathers;    // positions of those casts
  auto castBefore = [&](size_t i) {
    if (i == 0)
      return false;
    const plan::Instruction &c = segment[i - 1];
    return c.op() == "graph.cast" && c.inputs_size() == 1 &&
           c.outputs_size() == 1 &&
           c.outputs(0) == segment[i].inputs(0) &&
           kind(c.inputs(0)) == plan::TensorDecl::PARAMETER &&
           readers[c.outputs(0)] == 1;
  };
  for (size_t i = 0; i < segment.size(); ++i) {
    if (!isSynchronous(segment[i], "comm.all_gather") ||
        !overReplicas(segment[i]))
      continue;
    bool cast = castBefore(i);
    if (!cast && kind(segment[i].inputs(0)) != plan::TensorDecl::PARAMETER)
      continue;
    if (cast)
      castsOfGathers.insert(i - 1);
    gatherAt[i] = gathers.size();
    gathers.push_back(i);
  }
  // Reduce-scatters whose transient result only the next instruction, an
  // accumulation, reads.
  auto isAccumulatedScatter = [&](size_t i) {
    if (!isSynchronous(segment[i], "comm.reduce_scatter") ||
        !overReplicas(segment[i]) || i + 1 >= segment.size())
      return false;
    const plan::Instruction &next = segment[i + 1];
    int out = segment[i].outputs(0);
    return next.op() == "runtime.accumulate" && next.inputs_size() == 1 &&
           next.inputs(0) == out && readers[out] == 1 &&
           kind(out) == plan::TensorDecl::TRANSIENT;
  };

  std::vector<plan::Instruction> out;
  out.reserve(segment.size() + gathers.size() + 8);

  // Gathers: started one or more ahead, each waited for where it stood.
  std::vector<int32_t> gatherHandle(gathers.size(), -1);
  size_t nextGather = 0;
  int64_t aheadBytes = 0;
  auto startGather = [&](size_t k) {
    if (castsOfGathers.count(gathers[k] - 1))
      out.push_back(segment[gathers[k] - 1]);
    plan::Instruction g = segment[gathers[k]];
    gatherHandle[k] = nextHandle++;
    g.set_async_handle(gatherHandle[k]);
    out.push_back(std::move(g));
    ++counts.prefetchedGathers;
  };

  // Scatters in flight: handle, bytes, and what completes them.
  struct InFlight {
    int64_t bytes;
    plan::Instruction wait, accumulate;
  };
  std::deque<InFlight> inFlight;
  int64_t inFlightBytes = 0;
  // The tensors the deferred accumulations write, with their count.
  std::map<int, int> deferredWrites;
  auto completeOldest = [&] {
    InFlight &done = inFlight.front();
    inFlightBytes -= done.bytes;
    if (--deferredWrites[done.accumulate.outputs(0)] == 0)
      deferredWrites.erase(done.accumulate.outputs(0));
    out.push_back(std::move(done.wait));
    out.push_back(std::move(done.accumulate));
    inFlight.pop_front();
  };
  // An instruction that reads or writes what a deferred accumulation
  // writes (the gradient a ZeRO-1 reduce-scatter or a bucket then reads)
  // runs after it: complete the scatters in flight up to the last such.
  auto completeBefore = [&](const plan::Instruction &inst) {
    auto touches = [&](int id) { return deferredWrites.count(id) > 0; };
    while (touchesAny(inst, touches) && !inFlight.empty())
      completeOldest();
  };

  for (size_t i = 0; i < segment.size(); ++i) {
    if (castsOfGathers.count(i))
      continue; // emitted where its gather starts
    completeBefore(segment[i]);
    if (auto g = gatherAt.find(i); g != gatherAt.end()) {
      size_t k = g->second;
      if (gatherHandle[k] < 0) {
        startGather(k);
        nextGather = k + 1;
      } else {
        aheadBytes -= bytes(segment[i].outputs(0));
      }
      plan::Instruction wait = waitFor(gatherHandle[k]);
      // A cast's copy is read by the gather in flight: live until here.
      if (castsOfGathers.count(i - 1))
        wait.add_inputs(segment[i].inputs(0));
      out.push_back(std::move(wait));
      // Prefetch: the next gather at least, more while their gathered
      // bytes fit the window.
      while (nextGather < gathers.size() &&
             (nextGather == k + 1 ||
              aheadBytes + bytes(segment[gathers[nextGather]].outputs(0)) <=
                  windowBytes)) {
        aheadBytes += bytes(segment[gathers[nextGather]].outputs(0));
        startGather(nextGather++);
      }
      continue;
    }
    if (isAccumulatedScatter(i)) {
      plan::Instruction rs = segment[i];
      int32_t handle = nextHandle++;
      rs.set_async_handle(handle);
      InFlight f;
      f.bytes = bytes(rs.inputs(0));
      f.wait = waitFor(handle);
      // Named only to keep both buffers live until the wait.
      f.wait.add_inputs(rs.inputs(0));
      f.wait.add_outputs(rs.outputs(0));
      f.accumulate = std::move(segment[i + 1]);
      ++deferredWrites[f.accumulate.outputs(0)];
      out.push_back(std::move(rs));
      inFlightBytes += f.bytes;
      inFlight.push_back(std::move(f));
      ++counts.overlappedScatters;
      while (inFlight.size() > 1 && inFlightBytes > windowBytes)
        completeOldest();
      ++i; // the accumulation goes with the wait
      continue;
    }
    out.push_back(std::move(segment[i]));
  }
  while (!inFlight.empty())
    completeOldest();
  segment = std::move(out);
  return counts;
}

int carryParameterGathers(std::vector<std::vector<plan::Instruction>> &segments,
                          const plan::Program &program, int &nextHandle) {
  if (segments.empty())
    return 0;
  size_t optimizer = segments.size() - 1;
  // The segments in the order of their first run in a step.
  std::vector<size_t> order;
  for (const plan::ScheduleStep &step : program.schedule()) {
    size_t s = static_cast<size_t>(step.segment());
    if (step.segment() >= 0 && s < optimizer &&
        std::find(order.begin(), order.end(), s) == order.end())
      order.push_back(s);
  }
  auto kind = [&](int id) { return program.tensors(id).kind(); };
  int carried = 0;
  for (plan::Instruction &gather : segments[optimizer]) {
    if (!isSynchronous(gather, "comm.all_gather") ||
        kind(gather.inputs(0)) != plan::TensorDecl::OPTIMIZER_STATE ||
        kind(gather.outputs(0)) != plan::TensorDecl::PARAMETER)
      continue;
    int param = gather.outputs(0);
    auto reads = [&](const plan::Instruction &inst) {
      return std::find(inst.inputs().begin(), inst.inputs().end(), param) !=
             inst.inputs().end();
    };
    for (size_t s : order) {
      std::vector<plan::Instruction> &segment = segments[s];
      auto reader = std::find_if(segment.begin(), segment.end(), reads);
      if (reader == segment.end())
        continue;
      int32_t handle = nextHandle++;
      gather.set_async_handle(handle);
      (*gather.mutable_attrs())["carried"].set_b(true);
      plan::Instruction wait = waitFor(handle);
      (*wait.mutable_attrs())["carried"].set_b(true);
      (*wait.mutable_attrs())["first_microbatch"].set_b(true);
      wait.add_inputs(gather.inputs(0));
      wait.add_outputs(param);
      segment.insert(reader, std::move(wait));
      ++carried;
      break;
    }
  }
  return carried;
}

int joinEpilogues(std::vector<plan::Instruction> &segment) {
  int joined = 0;
  for (size_t m = 0; m + 2 < segment.size(); ++m) {
    const plan::Instruction &mm = segment[m];
    if (mm.op() != "graph.matmul" || mm.outputs_size() != 1 ||
        (mm.has_async_handle() && mm.async_handle() >= 0))
      continue;
    // The waits and asynchronous starts right after it that neither write
    // what it reads nor read what it writes.
    size_t j = m + 1;
    auto movable = [&](const plan::Instruction &inst) {
      bool async = inst.op() == "comm.wait" ||
                   (inst.op().rfind("comm.", 0) == 0 &&
                    inst.has_async_handle() && inst.async_handle() >= 0);
      if (!async)
        return false;
      for (int out : inst.outputs())
        if (std::find(mm.inputs().begin(), mm.inputs().end(), out) !=
                mm.inputs().end() ||
            out == mm.outputs(0))
          return false;
      return std::find(inst.inputs().begin(), inst.inputs().end(),
                       mm.outputs(0)) == inst.inputs().end();
    };
    while (j < segment.size() && movable(segment[j]))
      ++j;
    if (j == m + 1 || j == segment.size())
      continue;
    const auto &reads = segment[j].inputs();
    if (std::find(reads.begin(), reads.end(), mm.outputs(0)) == reads.end())
      continue;
    // matmul, waits..., reader  ->  waits..., matmul, reader.
    std::rotate(segment.begin() + m, segment.begin() + m + 1,
                segment.begin() + j);
    m = j - 1;
    ++joined;
  }
  return joined;
}

} // namespace cleave::lowering
