//===- PipelineSimulation.cpp - Task graphs of pipelined training steps ---===//

#include "cleave/cost_model/PipelineSimulation.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

#include <map>
#include <stdexcept>
#include <tuple>

namespace cleave::cost {

absl::StatusOr<TaskGraph> buildPipelineTasks(const PipelineSpec &spec) {
  int p = static_cast<int>(spec.stages.size());
  if (p == 0)
    return absl::InvalidArgumentError("a pipeline needs at least one stage");
  int v = static_cast<int>(spec.stages[0].chunks.size());
  for (const StageCosts &s : spec.stages)
    if (static_cast<int>(s.chunks.size()) != v || v == 0)
      return absl::InvalidArgumentError(
          "every stage needs the same, non-zero number of chunks");
  int m = spec.microbatches;
  bool split = spec.schedule == ScheduleKind::ZeroBubbleH1;

  // Orders first: every stage's compute stream in program order.
  std::vector<std::vector<PipelineSlot>> orders;
  for (int s = 0; s < p; ++s) {
    auto order = pipelineOrder(spec.schedule, p, s, m, v);
    if (!order.ok())
      return order.status();
    orders.push_back(*std::move(order));
  }

  // Virtual stage of chunk c on stage s: activations flow through virtual
  // stages 0 .. p*v-1, i.e. stage 0 chunk 0, stage 1 chunk 0, ... stage 0
  // chunk 1, ...
  auto virtualStage = [&](int s, int c) { return c * p + s; };
  int numVirtual = p * v;

  TaskGraph g;
  // (pass, microbatch, virtual stage) -> task id, filled as tasks are
  // added: a dense table (a search builds graphs of a hundred thousand
  // tasks; a tree of them was a fifth of its time).
  size_t slots = 3 * static_cast<size_t>(m) * numVirtual;
  std::vector<int> ids(slots, -1);
  auto key = [&](PassKind pass, int mb, int vs) {
    return (static_cast<size_t>(pass) * m + mb) * numVirtual + vs;
  };
  auto existing = [](const std::vector<int> &table, size_t k) {
    if (table[k] < 0)
      throw std::logic_error("pipeline task graph: a dependency's task is "
                             "missing from the schedule");
    return table[k];
  };

  // Tasks are added stage by stage in program order; dependencies on other
  // stages are attached afterwards, once every task exists.
  struct Pending {
    int task;
    PipelineSlot slot;
    int stage;
  };
  std::vector<Pending> pending;
  std::vector<std::vector<int>> reductions(p);
  // Transfers go on the producer's send stream in its program order, right
  // after the pass that produces them (ordering them otherwise could make
  // one wait behind a transfer that depends on it).
  std::vector<int> sends(slots, -1);
  auto addSend = [&](int producer, const PipelineSlot &slot, int vs) {
    bool forward = slot.pass == PassKind::Forward;
    if (slot.pass == PassKind::WeightGrad || (forward && vs + 1 >= numVirtual) ||
        (!forward && vs == 0))
      return;
    const Task &src = g.tasks()[producer];
    const ChunkCosts &c = spec.stages[src.stage].chunks[src.chunk];
    Task send;
    send.name = absl::StrCat(forward ? "send act " : "send grad ",
                             slot.microbatch);
    send.category = "send";
    send.rank = src.rank;
    send.stream =
        spec.overlapTransfers ? Stream::PipelineSend : Stream::Compute;
    send.stage = src.stage;
    send.microbatch = slot.microbatch;
    send.chunk = src.chunk;
    send.seconds = forward ? c.sendForward : c.sendBackward;
    send.deps = {producer};
    sends[key(slot.pass, slot.microbatch, vs)] = g.add(send);
  };
  auto stageTask = [&](int s, const char *name, const char *category,
                       Stream stream, double seconds, std::vector<int> deps) {
    Task t;
    t.name = name;
    t.category = category;
    t.rank = s;
    t.stream = stream;
    t.stage = s;
    t.seconds = seconds;
    t.deps = std::move(deps);
    return g.add(t);
  };
  for (int s = 0; s < p; ++s) {
    // The pass that completes a chunk's gradients: its last B (or W when
    // split). Its data-parallel reduction overlaps that pass in buckets.
    std::vector<int> finishing(v, -1);
    for (int i = 0; i < static_cast<int>(orders[s].size()); ++i)
      if (orders[s][i].pass == (split ? PassKind::WeightGrad : PassKind::Backward))
        finishing[orders[s][i].chunk] = i;
    // The first forward pass of each chunk waits for the gather carried
    // over from the previous step (ChunkCosts::carriedGather). A stream
    // runs its tasks in the order they are added, so these gathers start
    // the step on theirs.
    std::vector<int> starting(v, -1), carried(v, -1);
    for (int i = static_cast<int>(orders[s].size()) - 1; i >= 0; --i)
      if (orders[s][i].pass == PassKind::Forward)
        starting[orders[s][i].chunk] = i;
    for (int c = 0; c < v; ++c) {
      const ChunkCosts &cc = spec.stages[s].chunks[c];
      if (cc.carriedGather <= 0)
        continue;
      Task gather;
      gather.name = v > 1 ? absl::StrCat("parameter gather (previous step) .",
                                         c)
                          : "parameter gather (previous step)";
      gather.category = "param-gather";
      gather.rank = s;
      gather.stream =
          cc.carriedBeside ? Stream::DataParallelComm : Stream::Compute;
      gather.stage = s;
      gather.chunk = c;
      gather.seconds = cc.carriedGather;
      carried[c] = g.add(gather);
    }
    for (int i = 0; i < static_cast<int>(orders[s].size()); ++i) {
      const PipelineSlot &slot = orders[s][i];
      const ChunkCosts &c = spec.stages[s].chunks[slot.chunk];
      int vs = virtualStage(s, slot.chunk);
      Task t;
      t.rank = s;
      t.stream = Stream::Compute;
      t.stage = s;
      t.microbatch = slot.microbatch;
      t.chunk = slot.chunk;
      switch (slot.pass) {
      case PassKind::Forward:
        t.name = absl::StrCat("F", slot.microbatch);
        t.category = "forward";
        t.seconds = c.forward;
        t.flops = t.hwFlops = c.forwardFlops;
        break;
      case PassKind::Backward:
        t.name = absl::StrCat("B", slot.microbatch);
        t.category = "backward";
        t.seconds = split ? c.backward - c.weightGrad : c.backward;
        t.flops = c.backwardFlops;
        t.hwFlops = c.backwardFlops + c.recomputeFlops;
        if (split) {
          // Split FLOPs in proportion to the split time.
          double share = c.backward > 0 ? t.seconds / c.backward : 1.0;
          t.flops *= share;
          t.hwFlops *= share;
        }
        break;
      case PassKind::WeightGrad:
        t.name = absl::StrCat("W", slot.microbatch);
        t.category = "wgrad";
        t.seconds = c.weightGrad;
        double share = c.backward > 0 ? c.weightGrad / c.backward : 0.0;
        t.flops = c.backwardFlops * share;
        t.hwFlops = (c.backwardFlops + c.recomputeFlops) * share;
        break;
      }
      if (v > 1)
        t.name += absl::StrCat(".", slot.chunk);
      if (i == starting[slot.chunk] && carried[slot.chunk] >= 0) {
        // Its layers read the gathered parameters one after another: all
        // but the last may run before the gather ends (beside compute);
        // or the pass follows the gather.
        int first = -1, last;
        if (c.carriedBeside && c.carriedLayers > 1) {
          Task head = t;
          double share = 1.0 / c.carriedLayers;
          head.seconds = t.seconds * (1 - share);
          head.flops = t.flops * (1 - share);
          head.hwFlops = t.hwFlops * (1 - share);
          first = g.add(head);
          t.name += " part 2";
          t.seconds *= share;
          t.flops *= share;
          t.hwFlops *= share;
          t.deps = {first};
        }
        t.deps.push_back(carried[slot.chunk]);
        last = g.add(t);
        ids[key(slot.pass, slot.microbatch, vs)] = last;
        pending.push_back({first >= 0 ? first : last, slot, s});
        addSend(last, slot, vs);
        continue;
      }
      if (finishing[slot.chunk] != i || c.gradReduce <= 0) {
        int id = g.add(t);
        ids[key(slot.pass, slot.microbatch, vs)] = id;
        pending.push_back({id, slot, s});
        addSend(id, slot, vs);
        continue;
      }
      // The layers finish one after another: `buckets` slices of the pass,
      // each releasing one bucket to the data-parallel stream. Dependencies
      // of other stages attach to the first slice (the pass's start) and,
      // through `ids`, wait for the last one.
      int buckets = std::max(1, c.gradBuckets);
      Task slice = t;
      slice.seconds = t.seconds / buckets;
      slice.flops = t.flops / buckets;
      slice.hwFlops = t.hwFlops / buckets;
      int first = -1, prev = -1;
      for (int b = 0; b < buckets; ++b) {
        Task part = slice;
        if (b > 0)
          part.name += absl::StrCat(" part ", b + 1);
        if (prev >= 0)
          part.deps = {prev};
        prev = g.add(part);
        if (first < 0)
          first = prev;
        Task reduce;
        reduce.name = absl::StrCat("grad reduce ", b + 1, "/", buckets);
        reduce.category = "grad-reduce";
        reduce.rank = s;
        reduce.stream = Stream::DataParallelComm;
        reduce.stage = s;
        reduce.chunk = slot.chunk;
        reduce.seconds = c.gradReduce / buckets;
        reduce.deps = {prev};
        reductions[s].push_back(g.add(reduce));
      }
      ids[key(slot.pass, slot.microbatch, vs)] = prev;
      pending.push_back({first, slot, s});
      addSend(prev, slot, vs);
    }
  }

  // Cross-stage dependencies go through the producer's send.
  for (const Pending &pd : pending) {
    int vs = virtualStage(pd.stage, pd.slot.chunk);
    int mb = pd.slot.microbatch;
    switch (pd.slot.pass) {
    case PassKind::Forward:
      if (vs > 0)
        g[pd.task].deps.push_back(existing(sends, key(PassKind::Forward, mb, vs - 1)));
      break;
    case PassKind::Backward:
      if (vs + 1 < numVirtual)
        g[pd.task].deps.push_back(
            existing(sends, key(PassKind::Backward, mb, vs + 1)));
      else
        g[pd.task].deps.push_back(existing(ids, key(PassKind::Forward, mb, vs)));
      break;
    case PassKind::WeightGrad:
      g[pd.task].deps.push_back(existing(ids, key(PassKind::Backward, mb, vs)));
      break;
    }
  }

  // Per stage: the optimizer once its reductions are done, then, under
  // ZeRO-1 and 2, the gather of the updated shards (unless carried into
  // the next step, above).
  for (int s = 0; s < p; ++s) {
    int opt = stageTask(s, "optimizer", "optimizer", Stream::Compute,
                        spec.stages[s].optimizer, reductions[s]);
    if (spec.stages[s].paramGather > 0)
      stageTask(s, "parameter gather", "param-gather",
                Stream::DataParallelComm, spec.stages[s].paramGather, {opt});
  }
  return g;
}

} // namespace cleave::cost
