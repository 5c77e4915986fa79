//===- StageWorkload.cpp - Pipeline plans scored from their chunks' work --===//

#include "cleave/cost_model/StageWorkload.h"

#include "cleave/cost_model/Collectives.h"
#include "cleave/cost_model/Memory.h"
#include "cleave/cost_model/OperatorCost.h"
#include "cleave/cost_model/PipelineSimulation.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

#include <algorithm>

namespace cleave::cost {

double besidePass(double pass, double comm, int64_t blocks, double hidden) {
  return collectivesBesidePass(pass, comm, static_cast<double>(blocks),
                               hidden);
}

double backwardWindowHidden(const Cluster &cluster, const Profile *profile,
                            const ParallelConfig &plan) {
  if (cluster.commOverlapsCompute)
    return 1.0;
  return plan.overlapGradReduce ? collectiveWindowHidden(cluster, profile)
                                : 0.0;
}

double workspaceBytes(double largestIntermediate, double largestParam) {
  return std::max(3 * largestIntermediate, largestParam + largestIntermediate);
}

absl::StatusOr<PlanPrediction>
scoreStages(const StageWorkload &work, const Cluster &cluster,
            const ParallelConfig &plan, const Profile *profile,
            TaskGraph *graphOut, Timeline *timelineOut) {
  int64_t devices = cluster.numDevices(), p = plan.pp;
  int64_t n = static_cast<int64_t>(work.chunks.size());
  if (p < 1 || n % p != 0)
    return absl::InvalidArgumentError(absl::StrCat(
        n, " pipeline chunks do not divide over ", p, " stages"));
  int64_t v = n / p, m = work.microbatches;
  double dp = static_cast<double>(plan.dp);
  double states = work.optimizerStates;
  bool zeroBubble = plan.schedule == ScheduleKind::ZeroBubbleH1;

  // Ranks are pp-major (the plan's mesh is pp x dp x tp): a replica's
  // tensor-parallel devices are neighbours, the stage's replicas tp apart,
  // and stage s sends to the ranks dp x tp further on.
  Group dpGroup = Group::strided(0, plan.dp, plan.tp);
  Group ppPair = Group::strided(0, 2, plan.dp * plan.tp);
  auto collective = [&](Collective kind, double bytes,
                        const Group &group) -> absl::StatusOr<double> {
    if (bytes <= 0 || group.ranks.size() < 2)
      return 0.0;
    absl::StatusOr<CollectiveCost> c =
        estimateCollective(kind, bytes, group, cluster, profile);
    if (!c.ok())
      return c.status();
    return c->seconds;
  };
  // ZeRO's collectives, one per parameter tensor: the bytes of all, plus
  // the latency of every further call (as TransformerPlan prices them).
  auto perTensor = [&](Collective kind, double bytes, const Group &group,
                       double tensors) -> absl::StatusOr<double> {
    absl::StatusOr<double> all = collective(kind, bytes, group);
    absl::StatusOr<double> call =
        collective(kind, 4.0 * double(group.ranks.size()), group);
    if (!all.ok() || !call.ok())
      return all.ok() ? call.status() : all.status();
    return *all + (bytes > 0 ? std::max(0.0, tensors - 1) * *call : 0.0);
  };

  PipelineSpec spec;
  spec.schedule = plan.schedule;
  spec.microbatches = static_cast<int>(m);
  PlanPrediction out;
  out.plan = plan;
  out.numMicrobatches = m;
  out.layersPerStage.assign(p, 0);
  for (int64_t c = 0; c < n; ++c) {
    // One chunk holds the whole model: no split for the lowering to follow.
    if (n > 1)
      out.layersPerChunk.push_back(work.chunks[c].blocks);
    out.layersPerStage[c % p] += work.chunks[c].blocks;
  }
  double capacity = cluster.device.memoryBytes;
  double exposedGathers = 0;
  // Recomputed forward FLOPs per microbatch, over the stages.
  double extraFlops = 0;
  bool overlaps = cluster.commOverlapsCompute;
  for (int64_t s = 0; s < p; ++s) {
    StageCosts sc;
    double stageParams = 0, stageParamBytes = 0, stageTensors = 0;
    double largestParams = 0, largestParam = 0, largest = 0;
    double recomputedWork = 0, sendBuffers = 0, stageSeconds = 0;
    // Per chunk of the stage: what a microbatch keeps from its forward to
    // its backward, and from its B to its W under zero-bubble.
    std::vector<double> stash(v), pendingW(v);
    for (int64_t local = 0; local < v; ++local) {
      const ChunkWorkload &chunk = work.chunks[local * p + s];
      stageParams += chunk.params;
      stageParamBytes += chunk.paramBytes;
      stageTensors += chunk.paramTensors;
      largestParams = std::max(largestParams, chunk.largestParams);
      largestParam = std::max(largestParam, chunk.largestParam);
      largest = std::max(largest, chunk.largestIntermediate);
      recomputedWork = std::max(recomputedWork, chunk.recomputedWork);
      extraFlops += chunk.recomputedFlops;

      ChunkCosts cc;
      cc.forward = chunk.forwardSeconds;
      cc.backward = chunk.backwardSeconds;
      // The first chunk sends no gradient back: the lowering runs its
      // whole backward as B, defers nothing and holds nothing for a W.
      bool sendsBack = local * p + s > 0;
      if (zeroBubble && sendsBack)
        cc.weightGrad = chunk.weightGradSeconds;
      absl::StatusOr<double> sendOut =
          collective(Collective::SendRecv, chunk.outBytes, ppPair);
      absl::StatusOr<double> sendIn =
          collective(Collective::SendRecv, chunk.inBytes, ppPair);
      absl::StatusOr<double> allReduce =
          collective(Collective::AllReduce, chunk.paramBytes, dpGroup);
      absl::StatusOr<double> scatter =
          perTensor(Collective::ReduceScatter, chunk.paramBytes, dpGroup,
                    chunk.paramTensors);
      absl::StatusOr<double> gather = perTensor(
          Collective::AllGather, chunk.paramBytes, dpGroup, chunk.paramTensors);
      for (const auto *c : {&sendOut, &sendIn, &allReduce, &scatter, &gather})
        if (!c->ok())
          return c->status();
      cc.sendForward = *sendOut;
      cc.sendBackward = *sendIn;
      // As on one stage (scoreGraphPlan): ZeRO 0 all-reduces the gradients
      // and ZeRO 1 reduce-scatters them as the last backward pass makes
      // them, beside that pass where the device's collectives progress
      // beside its compute (not CPU ranks over MPI); ZeRO 1 and 2 gather
      // the updated shards after the update. ZeRO 2 and 3 reduce-scatter
      // each microbatch's gradients, and ZeRO 3 gathers the parameters for
      // every pass of every microbatch: there the lowering keeps a window
      // of them in flight beside the pass, which what outlasts the pass
      // and one block's share extend (as TransformerPlan prices it);
      // elsewhere they stall it.
      cc.gradReduce = plan.zero == 0 ? *allReduce : *scatter;
      cc.gradBuckets = plan.zero <= 1 && overlaps ? 4 : 1;
      if (plan.zero >= 2 && plan.dp > 1) {
        double gathered = plan.zero == 3 ? *gather : 0;
        cc.forward += besidePass(cc.forward, gathered, chunk.blocks, overlaps);
        cc.backward +=
            besidePass(cc.backward, *scatter + gathered, chunk.blocks,
                       backwardWindowHidden(cluster, profile, plan));
        cc.gradReduce = 0;
      }
      // ZeRO 1 and 2's gather of the updated blocks: carried into the next
      // step beside its first forward pass where overlap-grad is on (the
      // lowering's carryParameterGathers), else after the update.
      if (plan.overlapGradReduce && plan.dp > 1 &&
          (plan.zero == 1 || plan.zero == 2)) {
        cc.carriedGather = *gather;
        cc.carriedLayers =
            static_cast<int>(std::max<int64_t>(1, chunk.blocks));
        cc.carriedBeside = overlaps;
      }
      stageSeconds += cc.forward + cc.backward;
      sc.chunks.push_back(cc);

      // The value a cut sends is what the next block reads again in its
      // backward pass: the training step counted it with its producer, but
      // the chunk that receives it keeps it (per microbatch in flight). A
      // recomputing chunk's last block keeps its output as well (a block
      // keeps its input and output). The first chunk keeps the graph's
      // inputs (the images) until its backward pass.
      bool recomputing = plan.recomputeOf(s) == Recompute::Full;
      stash[local] = chunk.activationBytes + chunk.inBytes + chunk.inputBytes -
                     (recomputing ? 0
                                  : std::min(chunk.outBytes, chunk.activationBytes));
      pendingW[local] = sendsBack ? chunk.weightGradBytes : 0;

      sendBuffers += chunk.outBytes + chunk.inBytes;
    }
    if ((plan.zero == 1 || plan.zero == 2) &&
        !(plan.overlapGradReduce && plan.dp > 1)) {
      absl::StatusOr<double> gather = perTensor(
          Collective::AllGather, stageParamBytes, dpGroup, stageTensors);
      if (!gather.ok())
        return gather.status();
      exposedGathers = std::max(exposedGathers, *gather);
    }
    double shard = plan.zero >= 1 ? dp : 1;
    GenericOp update;
    update.bytesRead = stageParamBytes * (2 + states) / shard;
    update.bytesWritten = stageParamBytes * (1 + states) / shard;
    update.flops = 10.0 * stageParams / shard;
    absl::StatusOr<OpCost> step =
        estimateGeneric(update, cluster, profile);
    sc.optimizer = step.ok() ? step->seconds : 0;
    spec.stages.push_back(sc);

    // Memory: the stashes the stage's schedule holds at once (a forward
    // adds its chunk's; the backward frees it, or under zero-bubble trades
    // it for what the W reads, which the W frees); each send keeps two
    // slots once more than one microbatch is in flight.
    absl::StatusOr<std::vector<PipelineSlot>> order =
        pipelineOrder(plan.schedule, static_cast<int>(p),
                            static_cast<int>(s), static_cast<int>(m),
                            static_cast<int>(v));
    if (!order.ok())
      return order.status();
    double live = 0, peak = 0;
    for (const PipelineSlot &slot : *order) {
      double kept = stash[slot.chunk], w = pendingW[slot.chunk];
      switch (slot.pass) {
      case PassKind::Forward:
        live += kept;
        break;
      case PassKind::Backward:
        live += zeroBubble ? w - kept : -kept;
        break;
      case PassKind::WeightGrad:
        live -= w;
        break;
      }
      peak = std::max(peak, live);
    }
    // Interleaved chunks of uneven stashes: the lowering keeps them in
    // frames by classes of chunks, which the same plan prices.
    if (v > 1 && !zeroBubble)
      peak = planStashFrames(*order, stash).bytes;
    double slots = peakInFlight(*order) > 1 ? 2 : 1;
    MemoryBreakdown mem;
    mem.params = stageParamBytes / (plan.zero >= 3 ? dp : 1);
    mem.grads =
        modelStateBytes(stageParamBytes, plan.zero, plan.dp, 1, 1, 0)
            .grads;
    mem.optimizer = modelStateBytes(stageParamBytes, plan.zero, plan.dp,
                                          1, 1, states)
                        .optimizer;
    mem.activations = peak + recomputedWork;
    // ZeRO-2 reduce-scatters each microbatch's gradients in place of the
    // shard it keeps; ZeRO-3 gathers a piece's parameters where it runs;
    // both keep a window of those collectives in flight beside compute.
    mem.commBuffers = slots * sendBuffers +
                      (plan.zero >= 3 ? largestParams : 0) +
                      zeroWindowBytes(plan.zero, stageParamBytes);
    mem.workspace = workspaceBytes(largest, largestParam);
    double allocated = mem.params + mem.grads + mem.optimizer +
                       mem.activations + mem.commBuffers + mem.workspace;
    mem.fragmentation =
        TransformerMemoryConfig{}.fragmentation * allocated;
    mem.total = allocated + mem.fragmentation;
    if (capacity > 0 && mem.total > capacity)
      return absl::ResourceExhaustedError(absl::StrFormat(
          "stage %d needs %.2f GB of %.2f GB (params %.2f, grads %.2f, "
          "optimizer %.2f, activations %.2f)",
          s, mem.total / 1e9, capacity / 1e9, mem.params / 1e9,
          mem.grads / 1e9, mem.optimizer / 1e9, mem.activations / 1e9));
    out.stageMemory.push_back(mem);
    if (mem.total > out.peakMemoryBytes) {
      out.peakMemoryBytes = mem.total;
      out.peakMemoryStage = s;
      out.memory = mem;
    }
    out.lowerBoundSeconds =
        std::max(out.lowerBoundSeconds, double(m) * stageSeconds);
  }
  absl::StatusOr<TaskGraph> graph = buildPipelineTasks(spec);
  if (!graph.ok())
    return graph.status();
  absl::StatusOr<Timeline> timeline = simulate(*graph);
  if (!timeline.ok())
    return timeline.status();
  if (graphOut)
    *graphOut = *graph;
  if (timelineOut)
    *timelineOut = *timeline;
  out.stepSeconds = timeline->makespan + exposedGathers;
  out.bubbleFraction = timeline->bubbleFraction;
  out.pipelineSendSeconds = spec.stages.front().chunks.front().sendForward;
  out.gradReduceSeconds = spec.stages.front().chunks.front().gradReduce;
  out.modelFlops = work.trainingFlops * double(m) * dp;
  out.hardwareFlops = out.modelFlops + extraFlops * double(m) * dp;
  out.tflopsPerDevice = out.stepSeconds > 0
                            ? out.modelFlops / double(devices) /
                                  out.stepSeconds / 1e12
                            : 0;
  out.hwTflopsPerDevice =
      out.stepSeconds > 0
          ? out.hardwareFlops / double(devices) / out.stepSeconds / 1e12
          : 0;
  double peak = cluster.device.peakFlops(plan.precision);
  out.mfu = peak > 0 ? out.tflopsPerDevice * 1e12 / peak : 0;
  return out;
}

} // namespace cleave::cost
