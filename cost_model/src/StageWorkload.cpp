//===- StageWorkload.cpp - Pipeline plans scored from their chunks' work --===//
//
// Ranks are laid out as Megatron-LM does: tensor-parallel ranks fastest
// (inside a node), then context, then data parallel, then pipeline stages:
//   rank = ((stage * dp + d) * cp + c) * tp + t.
// Every rank of a stage runs the same timeline, so one rank stands for
// each stage; its groups stand for every stage's.
//
//===----------------------------------------------------------------------===//

#include "cleave/cost_model/StageWorkload.h"

#include "AssignOrReturn.h"
#include "GroupCollectives.h"
#include "cleave/cost_model/Collectives.h"
#include "cleave/cost_model/Memory.h"
#include "cleave/cost_model/OperatorCost.h"
#include "cleave/cost_model/PipelineSimulation.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace cleave::cost {

double workspaceBytes(double largestIntermediate, double largestParam) {
  return std::max(3 * largestIntermediate, largestParam + largestIntermediate);
}

namespace {

/// Whether two task graphs list the same tasks in the same order.
bool sameTasks(const TaskGraph &a, const TaskGraph &b) {
  if (a.size() != b.size())
    return false;
  for (int i = 0; i < a.size(); ++i) {
    const Task &x = a.tasks()[i], &y = b.tasks()[i];
    if (x.name != y.name || x.rank != y.rank || x.stream != y.stream)
      return false;
  }
  return true;
}

/// A stage's stashes walked through its schedule (a forward adds its
/// chunk's; the backward frees it, or under zero-bubble trades it for
/// what the W reads, which the W frees), its send buffers and workspace.
absl::StatusOr<MemoryBreakdown>
walkedStageMemory(const StageWorkload &work, const ParallelConfig &plan,
                  int64_t s, double stageParamBytes) {
  int64_t p = plan.pp, n = static_cast<int64_t>(work.chunks.size());
  int64_t v = n / p, m = work.microbatches;
  bool zeroBubble = plan.schedule == ScheduleKind::ZeroBubbleH1;
  std::vector<double> stash(v), pendingW(v);
  double largestParams = 0, largestParam = 0, largest = 0;
  double recomputedWork = 0, sendBuffers = 0;
  for (int64_t local = 0; local < v; ++local) {
    const ChunkWorkload &chunk = work.chunks[local * p + s];
    largestParams = std::max(largestParams, chunk.largestParams);
    largestParam = std::max(largestParam, chunk.largestParam);
    largest = std::max(largest, chunk.largestIntermediate);
    recomputedWork = std::max(recomputedWork, chunk.recomputedWork);
    // The value a cut sends is what the next block reads again in its
    // backward pass: the training step counted it with its producer, but
    // the chunk that receives it keeps it (per microbatch in flight). A
    // recomputing chunk's last block keeps its output as well (a block
    // keeps its input and output). The first chunk keeps the graph's
    // inputs (the images) until its backward pass.
    bool recomputing = plan.recomputeOf(s) == Recompute::Full;
    stash[local] =
        chunk.activationBytes + chunk.inBytes + chunk.inputBytes -
        (recomputing ? 0 : std::min(chunk.outBytes, chunk.activationBytes));
    // The first chunk sends no gradient back: it defers no W.
    pendingW[local] = local * p + s > 0 ? chunk.weightGradBytes : 0;
    sendBuffers += chunk.outBytes + chunk.inBytes;
  }
  MemoryBreakdown mem;
  // ZeRO-2 reduce-scatters each microbatch's gradients in place of the
  // shard it keeps; ZeRO-3 gathers a piece's parameters where it runs;
  // both keep a window of those collectives in flight beside compute.
  double gathered = plan.zero >= 3 ? largestParams : 0;
  double window = zeroWindowBytes(plan.zero, stageParamBytes);
  mem.workspace = workspaceBytes(largest, largestParam);
  // GPipe runs every forward before any backward: m stashes at once.
  if (plan.schedule == ScheduleKind::GPipe) {
    double live = 0;
    for (int64_t mb = 0; mb < m; ++mb)
      for (double bytes : stash)
        live += bytes;
    mem.activations = live + recomputedWork;
    mem.commBuffers = (m > 1 ? 2 : 1) * sendBuffers + gathered + window;
    return mem;
  }
  // The other schedules hold a bounded number of microbatches: past the
  // warm-up their pattern of stashes repeats, so the first 2 p (v + 1)
  // microbatches (a multiple of p, as interleaving needs) reach the peak
  // of any more. A search walks tens of thousands of plans of thousands of
  // microbatches (ResNet-50 on 1024 GPUs at a batch of 262,144);
  // StageWorkloadTest checks the shortcut against the whole walk.
  int64_t steady = (2 * p * (v + 1) + p - 1) / p * p;
  absl::StatusOr<std::vector<PipelineSlot>> order =
      pipelineOrder(plan.schedule, static_cast<int>(p), static_cast<int>(s),
                    static_cast<int>(std::min(m, steady)),
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
  // Each send keeps two slots once more than one microbatch is in flight.
  double slots = peakInFlight(*order) > 1 ? 2 : 1;
  mem.activations = peak + recomputedWork;
  mem.commBuffers = slots * sendBuffers + gathered + window;
  return mem;
}

} // namespace

absl::StatusOr<PlanPrediction>
scoreStages(const StageWorkload &work, const Cluster &cluster,
            const ParallelConfig &p, const Profile *profile,
            const ScoreOptions &options) {
  const int64_t n = static_cast<int64_t>(work.chunks.size());
  if (p.pp < 1 || n % p.pp != 0)
    return absl::InvalidArgumentError(absl::StrCat(
        n, " pipeline chunks do not divide over ", p.pp, " stages"));
  if (!work.stageMemory.empty() &&
      static_cast<int64_t>(work.stageMemory.size()) != p.pp)
    return absl::InvalidArgumentError(
        absl::StrCat("the workload models the memory of ",
                     work.stageMemory.size(), " stages, the plan has ", p.pp));
  const int64_t v = n / p.pp, microbatches = work.microbatches;
  GroupCollectives price(cluster, profile);
  // A memory pass (nothing simulated) reports no collectives.
  price.counting = options.simulateBelow >= 0;
  const double e = dtypeBytes(p.precision);
  // Bytes of a weight gradient: fp32 under 16-bit storage
  // (cleave-mixed-precision keeps weight gradients and their reductions in
  // fp32, as Megatron-Core does: accumulate_allreduce_grads_in_fp32)
  // unless grad-reduce=half (Megatron-LM's fp16 runs of 2021), the storage
  // type otherwise.
  const bool halfStorage =
      p.precision == DType::Bf16 || p.precision == DType::Fp16;
  const double gradE = halfStorage && !p.halfGradReduce ? 4.0 : e;
  const double states = work.optimizerStates;

  // Groups of stage 0 (every stage's groups are placed alike).
  const int64_t ranksPerStage = p.dp * p.cp * p.tp;
  Group dpGroup = Group::strided(0, p.dp, p.cp * p.tp);
  // ZeRO's collectives run over the data- and context-parallel ranks
  // together (ParallelConfig::zeroReplicas), one group per tensor rank.
  const int64_t zeroReplicas = p.zeroReplicas();
  Group zeroGroup = Group::strided(0, zeroReplicas, p.tp);
  const int64_t zeroConcurrent = p.tp;
  Group ppPair = p.pp > 1 ? Group{{0, ranksPerStage}} : Group{{0}};
  // Every tensor- and context-parallel rank runs its own data-parallel
  // reduction at the same time, sharing the links.
  const int64_t dpConcurrent = p.tp * p.cp;

  PipelineSpec spec;
  spec.schedule = p.schedule;
  spec.microbatches = static_cast<int>(microbatches);
  spec.overlapTransfers = p.overlapTransfers;
  PlanPrediction out;
  out.plan = p;
  out.numMicrobatches = microbatches;
  out.layersPerStage.assign(p.pp, 0);
  for (int64_t c = 0; c < n; ++c)
    out.layersPerChunk.push_back(work.chunks[c].blocks);
  // A pipeline sends the same activation at most cuts: each size is priced
  // once (the search scores thousands of plans of dozens of chunks).
  std::vector<std::pair<double, double>> sendSeconds;
  auto send = [&](double bytes) -> absl::StatusOr<double> {
    for (auto [known, seconds] : sendSeconds)
      if (known == bytes)
        return seconds;
    CLEAVE_ASSIGN(seconds,
                  price.collective(Collective::SendRecv, bytes, ppPair));
    sendSeconds.emplace_back(bytes, seconds);
    return seconds;
  };
  out.pipelineSendSeconds = 0;
  if (n > 1) {
    CLEAVE_ASSIGN(first, send(work.chunks[0].outBytes));
    out.pipelineSendSeconds = first;
  }
  std::vector<double> stageParams(p.pp, 0), stageTensors(p.pp, 0);
  std::vector<double> stageExpertParams(p.pp, 0);
  // One collective per parameter tensor (ZeRO): the bytes of all of them,
  // plus the latency of every call after the first (the time of a
  // collective of a few bytes over the group). Priced instead each at its
  // own size, where the curves give 1-4 MiB collectives more bandwidth
  // than one of all the bytes (caches), a dp4 mb1 z3 backward's would
  // come to 35 ms on 4 CPU ranks, against 84-105 ms measured in their
  // starts and waits: there, between compute, they mostly wait for the
  // slowest time-sliced rank, which isolated curves do not see.
  std::map<Collective, double> callSeconds; // per kind, priced once
  auto perTensor = [&](Collective kind, double bytes,
                       double tensors) -> absl::StatusOr<double> {
    CLEAVE_ASSIGN(all,
                  price.collective(kind, bytes, zeroGroup, zeroConcurrent));
    auto call = callSeconds.find(kind);
    if (call == callSeconds.end()) {
      CLEAVE_ASSIGN(one, price.collective(kind, 4.0 * zeroReplicas,
                                          zeroGroup, zeroConcurrent));
      call = callSeconds.emplace(kind, one).first;
    }
    return all + std::max(0.0, tensors - 1) * call->second;
  };

  for (int64_t st = 0; st < p.pp; ++st) {
    StageCosts stage;
    CollectiveTally stageComm;
    for (int64_t c = 0; c < v; ++c) {
      int64_t chunk = c * p.pp + st;
      const ChunkWorkload &w = work.chunks[chunk];
      ChunkCosts cc;
      double params = w.params, tensors = w.paramTensors;
      stageTensors[st] += tensors;
      if (price.counting)
        stageComm += w.collectives;
      if (p.zeroBucketElements > 0) {
        // Parameters packed in buckets: one collective per bucket.
        double buckets =
            std::max(1.0, std::ceil(params / double(p.zeroBucketElements)));
        stageTensors[st] += buckets - tensors;
        tensors = buckets;
      }
      cc.forward = w.forwardSeconds;
      cc.backward = w.backwardSeconds;
      // The first chunk sends no gradient back: the lowering runs its whole
      // backward as B and defers nothing to a W.
      cc.weightGrad = chunk == 0 ? 0 : w.weightGradSeconds;
      cc.forwardFlops = w.forwardFlops;
      cc.backwardFlops = w.backwardFlops;
      cc.recomputeFlops = w.recomputedFlops;
      CLEAVE_ASSIGN(sendOut, send(w.outBytes));
      CLEAVE_ASSIGN(sendIn, send(w.inBytes));
      cc.sendForward = sendOut;
      cc.sendBackward = sendIn;
      // Activations out and their gradients back in, to the next chunk;
      // the reverse with the previous one.
      price.count(stageComm, Collective::SendRecv, w.outBytes, ppPair,
                  2.0 * double(microbatches));
      price.count(stageComm, Collective::SendRecv, w.inBytes, ppPair,
                  2.0 * double(microbatches));
      // Data-parallel gradient reduction of the chunk's parameters in
      // buckets; ZeRO's reduce-scatter plus all-gather moves the same
      // bytes as an all-reduce. Under context parallelism the gradients
      // are also partial over "cp": they join the reduction over the
      // dp x cp ranks (the buckets without ZeRO, ZeRO's reduce-scatters
      // with it), as the lowering does.
      Group reduceGroup = p.cp > 1 ? zeroGroup : dpGroup;
      int64_t reduceConcurrent = p.cp > 1 ? zeroConcurrent : dpConcurrent;
      CLEAVE_ASSIGN(reduce,
                    price.collective(Collective::AllReduce, params * gradE,
                                     reduceGroup, reduceConcurrent));
      cc.gradReduce = reduce;
      // Overlapped in buckets (one per piece the gradients come out of, at
      // most 8) where the device's communication runs beside its compute;
      // otherwise at once after the backward pass.
      cc.gradBuckets = p.overlapGradReduce && cluster.commOverlapsCompute
                           ? static_cast<int>(std::max<int64_t>(
                                 1, std::min<int64_t>(w.gradientPieces, 8)))
                           : 1;
      bool zeroSharded = p.zero >= 1 && zeroReplicas > 1;
      if (!zeroSharded)
        price.count(stageComm, Collective::AllReduce,
                    params * gradE / cc.gradBuckets, reduceGroup,
                    cc.gradBuckets);
      // ZeRO's collectives, one per parameter tensor (perTensor).
      double tensorBytes = tensors > 0 ? params * e / tensors : 0;
      double tensorGradBytes = tensors > 0 ? params * gradE / tensors : 0;
      if (zeroSharded) {
        // ZeRO-1 reduce-scatters each accumulated gradient once, as the
        // last backward pass finishes it: beside the backward pass where
        // the device overlaps communication, as the ZeRO-0 buckets (the
        // lowering starts each reduce-scatter there). ZeRO-2 and 3 keep
        // only a block of the accumulated gradient, so every microbatch's
        // gradient is reduce-scattered in its backward pass (DeepSpeed
        // does the same under gradient accumulation; the lowering places
        // it there too). ZeRO-3 also gathers each block's parameters
        // before its forward and again before its backward, for every
        // microbatch. ZeRO-1 and 2 gather the updated blocks after the
        // optimizer step (StageCosts::paramGather), carried into the next
        // step's first forward pass where overlap-grad is on.
        CLEAVE_ASSIGN(scatter, perTensor(Collective::ReduceScatter,
                                         params * gradE, tensors));
        double gather = 0;
        if (p.zero == 3) {
          CLEAVE_ASSIGN(g,
                        perTensor(Collective::AllGather, params * e, tensors));
          gather = g;
        }
        if (p.zero <= 2 && p.overlapGradReduce) {
          // The gather of the updated blocks is carried into the next
          // step, beside the chunk's first forward pass (the lowering's
          // carryParameterGathers, CollectiveOverlap.h).
          CLEAVE_ASSIGN(carried, perTensor(Collective::AllGather, params * e,
                                           tensors));
          cc.carriedGather = carried;
          cc.carriedLayers = static_cast<int>(std::max<int64_t>(1, w.blocks));
          cc.carriedBeside = cluster.commOverlapsCompute;
        }
        double perMicrobatch = double(microbatches);
        price.count(stageComm, Collective::ReduceScatter, tensorGradBytes,
                    zeroGroup, tensors * (p.zero == 1 ? 1 : perMicrobatch));
        if (p.zero == 3)
          price.count(stageComm, Collective::AllGather, tensorBytes, zeroGroup,
                      2 * tensors * perMicrobatch);
        if (p.zero <= 2 && p.overlapGradReduce)
          price.count(stageComm, Collective::AllGather, tensorBytes, zeroGroup,
                      tensors);
        if (p.zero == 1) {
          cc.gradReduce = scatter;
        } else {
          // Where the device overlaps communication, the lowering keeps a
          // window of these collectives in flight beside the pass
          // (CollectiveOverlap.h): what outlasts the pass, and the share
          // of one block that cannot start before it or must end after
          // it, extend it. Elsewhere the forward pass's gathers stall it,
          // and of the backward pass's window, each collective waited for
          // blocks later, the compute hides the share the profile
          // measured (collectiveWindowHidden; MPI on CPU ranks moves a
          // collective only inside MPI calls). Measured on 4 CPU ranks (2
          // cores), dp4 mb1 z3 (cleave run --trace, 5 launches): the
          // backward's compute took 178-201 ms and its collectives' starts
          // and waits 84-105 ms, against 193 and 100 priced; the profile
          // measured 0-5% of such a window hidden.
          bool beside = cc.gradBuckets > 1;
          double backwardHidden =
              beside ? 1.0
                     : (p.overlapGradReduce
                            ? collectiveWindowHidden(cluster, profile)
                            : 0.0);
          double blocks = static_cast<double>(w.blocks);
          double forwardPass = cc.forward, backwardPass = cc.backward;
          cc.forward += collectivesBesidePass(forwardPass, gather, blocks,
                                              beside ? 1.0 : 0.0);
          cc.backward += collectivesBesidePass(backwardPass, scatter + gather,
                                               blocks, backwardHidden);
          cc.gradReduce = 0;
        }
      }
      stageParams[st] += params;
      stageExpertParams[st] += w.expertParams;
      out.layersPerStage[st] += w.blocks;
      stage.chunks.push_back(cc);
    }
    // The optimizer step per parameter, memory-bound: in fp32 (the CPU
    // runtime's adamwStep) it reads the weight, the gradient and the
    // states and writes the weight and the states (AdamW: 28 bytes).
    // Under 16-bit storage the mixed-precision step adds copying the
    // gradient to fp32 (2 + 4 bytes), unscaling it (8), its norm for
    // clipping (4) and writing the 16-bit weight (4 + 2): AdamW's 52
    // bytes. Priced at 52 in fp32, a 4-stage pipeline's optimizer steps
    // came to 18-29 ms against 2-6 ms measured.
    double optimizerBytes =
        (3.0 + 2.0 * states) * 4.0 + (p.precision == DType::Fp32 ? 0.0 : 24.0);
    double shard =
        p.zero >= 1 ? stageParams[st] / zeroReplicas : stageParams[st];
    GenericOp update;
    update.bytesRead = shard * e * (optimizerBytes / e) / 2;
    update.bytesWritten = shard * e * (optimizerBytes / e) / 2;
    update.flops = shard * 12;
    update.dtype = DType::Fp32;
    CLEAVE_ASSIGN(opt, estimateGeneric(update, cluster, profile));
    stage.optimizer = opt.seconds;
    if ((p.zero == 1 || p.zero == 2) && zeroReplicas > 1 &&
        !p.overlapGradReduce) {
      CLEAVE_ASSIGN(gather, perTensor(Collective::AllGather,
                                      stageParams[st] * e, stageTensors[st]));
      stage.paramGather = gather;
      price.count(stageComm, Collective::AllGather,
                  stageParams[st] * e / std::max(1.0, stageTensors[st]),
                  zeroGroup, stageTensors[st]);
    }
    spec.stages.push_back(stage);
    out.stageCollectives.push_back(std::move(stageComm));
  }

  // --- Memory of every stage ----------------------------------------------
  // 16-bit storage: without ZeRO (or replicas) the parameters are the fp32
  // master weights themselves, read through casts (cleave-mixed-precision);
  // under ZeRO 1-2 they are 16-bit and each replica keeps its block of fp32
  // master weights with the optimizer state (the lowering's
  // ProgramContext::bf16Parameters, Megatron's distributed optimizer);
  // under ZeRO-3 each replica's block is the fp32 master, cast to 16 bits
  // for the all-gather (FSDP's mixed precision).
  const bool fp32Masters =
      halfStorage && (p.zero == 0 || p.zero == 3 || zeroReplicas == 1);
  const double paramBytes = fp32Masters ? 4.0 : e;
  // The optimizer's fp32 states, and an fp32 master copy only when the
  // parameters themselves are 16-bit.
  const double optimizerStateBytes =
      states * 4.0 + (e >= 4 || fp32Masters ? 0.0 : 4.0);
  const double fragmentation = TransformerMemoryConfig{}.fragmentation;
  for (int64_t st = 0; st < p.pp; ++st) {
    MemoryBreakdown mb;
    if (work.stageMemory.empty()) {
      CLEAVE_ASSIGN(walked,
                    walkedStageMemory(work, p, st, stageParams[st] * gradE));
      mb = walked;
    } else {
      mb = work.stageMemory[st];
    }
    ModelStateBytes model =
        modelStateBytes(stageParams[st] - stageExpertParams[st], p.zero,
                        zeroReplicas, paramBytes, gradE, optimizerStateBytes);
    if (stageExpertParams[st] > 0) {
      ModelStateBytes experts =
          modelStateBytes(stageExpertParams[st], p.zero,
                          p.dp / p.ep * p.cp,
                          paramBytes, gradE, optimizerStateBytes);
      model.params += experts.params;
      model.grads += experts.grads;
      model.optimizer += experts.optimizer;
    }
    double others = mb.activations + mb.commBuffers + mb.workspace;
    mb.params = model.params;
    mb.grads = model.grads;
    mb.optimizer = model.optimizer;
    mb.fragmentation = fragmentation * (model.total() + others);
    mb.total = model.total() + others + mb.fragmentation;
    out.stageMemory.push_back(mb);
    if (mb.total > out.peakMemoryBytes) {
      out.peakMemoryBytes = mb.total;
      out.peakMemoryStage = st;
      out.memory = mb;
    }
  }
  double capacity = cluster.device.memoryBytes;
  if (capacity > 0 && out.peakMemoryBytes > capacity) {
    std::string breakdown;
    for (auto [name, value] : out.memory.items())
      absl::StrAppend(&breakdown, breakdown.empty() ? "" : ", ",
                      std::string(name), " ",
                      absl::StrFormat("%.2f", value / 1e9), " GB");
    return absl::ResourceExhaustedError(absl::StrCat(
        "out of memory: stage ", out.peakMemoryStage, " needs ",
        absl::StrFormat("%.2f", out.peakMemoryBytes / 1e9), " GB of the ",
        absl::StrFormat("%.2f", capacity / 1e9), " GB a device has (",
        breakdown,
        "); try a smaller microbatch, recomputation, ZeRO, or more tensor or "
        "pipeline parallelism"));
  }

  // A lower bound on the step: every stage's compute stream runs all its
  // passes (and, when transfers block, its sends). The search skips the
  // simulation of plans whose bound cannot beat the best plan found.
  for (const StageCosts &stage : spec.stages) {
    double busy = stage.optimizer + stage.paramGather;
    for (const ChunkCosts &c : stage.chunks)
      busy += (c.carriedBeside ? 0.0 : c.carriedGather) +
              microbatches * (c.forward + c.backward +
                              (p.overlapTransfers
                                   ? 0.0
                                   : c.sendForward + c.sendBackward));
    out.lowerBoundSeconds = std::max(out.lowerBoundSeconds, busy);
  }
  // The pipeline's fill and drain bound it too: stage s runs nothing
  // before the first microbatch's forward has passed the stages before it
  // (their first chunk's), and after its last backward the stages before
  // it still run theirs (not so under zero-bubble schedules, whose W
  // passes may come last). Between, it runs every microbatch's passes,
  // then its optimizer step. Sends are left out (on the path, but
  // possibly overlapped): the bound stays one, and the search simulates
  // the plans of deep pipelines it used to, a tenth of them.
  {
    bool drains = p.schedule != ScheduleKind::ZeroBubbleH1;
    double head = 0, tail = 0;
    for (const StageCosts &stage : spec.stages) {
      double busy = 0;
      for (const ChunkCosts &c : stage.chunks)
        busy += microbatches * (c.forward + c.backward +
                                (p.overlapTransfers
                                     ? 0.0
                                     : c.sendForward + c.sendBackward));
      out.lowerBoundSeconds =
          std::max({out.lowerBoundSeconds,
                    head + busy + stage.optimizer + stage.paramGather,
                    head + busy + (drains ? tail : 0.0)});
      if (stage.chunks.empty())
        break;
      head += stage.chunks.front().forward;
      tail += stage.chunks.front().backward;
    }
  }
  const std::vector<double> *taskScale = options.taskScale;
  if (taskScale && options.scaledGraph && !taskScale->empty())
    out.lowerBoundSeconds *=
        *std::min_element(taskScale->begin(), taskScale->end());
  if (out.lowerBoundSeconds > options.simulateBelow) {
    out.simulated = false;
    out.stepSeconds = out.lowerBoundSeconds;
    return out;
  }

  CLEAVE_ASSIGN(graph, buildPipelineTasks(spec));
  if (taskScale && options.scaledGraph &&
      sameTasks(graph, *options.scaledGraph) &&
      taskScale->size() == size_t(graph.size()))
    for (int i = 0; i < graph.size(); ++i)
      graph[i].seconds *= (*taskScale)[i];
  CLEAVE_ASSIGN(timeline, simulate(graph));

  // FLOPs of the whole step: each stage replica's tasks times the data-
  // and context-parallel replicas.
  for (const Task &task : graph.tasks()) {
    out.modelFlops += task.flops;
    out.hardwareFlops += task.hwFlops;
  }
  out.modelFlops *= p.dp * p.cp;
  out.hardwareFlops *= p.dp * p.cp;
  out.stepSeconds = timeline.makespan;
  double devices = cluster.numDevices();
  if (out.stepSeconds > 0) {
    out.tflopsPerDevice = out.modelFlops / out.stepSeconds / devices / 1e12;
    out.hwTflopsPerDevice =
        out.hardwareFlops / out.stepSeconds / devices / 1e12;
  }
  double peak = cluster.device.peakFlops(p.precision);
  out.mfu = peak > 0 ? out.tflopsPerDevice * 1e12 / peak : 0;
  out.bubbleFraction = timeline.bubbleFraction;
  out.gradReduceSeconds = spec.stages[0].chunks[0].gradReduce;

  if (options.graphOut)
    *options.graphOut = std::move(graph);
  if (options.timelineOut)
    *options.timelineOut = std::move(timeline);
  return out;
}

} // namespace cleave::cost
