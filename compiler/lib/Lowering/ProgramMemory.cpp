//===- ProgramMemory.cpp - Tensor kinds and the arena of a program --------===//
//
// Liveness decides a value's kind: read only within its segment run it is
// transient, read by a later segment of its microbatch it is stashed (a
// slot per microbatch in flight), sent to another stage it keeps a slot
// until the send completes. BufferPlan then lays out one arena.
//
// A batched weight gradient's per-sequence products take no memory at all
// (TensorDecl.fused_away): the runtime contracts them and their sum in one
// GEMM. The pairs are found with the runtime's own matcher (executor
// Fusion.h), so that the two agree on every one.
//
//===----------------------------------------------------------------------===//

#include "EmitterImpl.h"

#include "cleave/cost_model/PipelineSchedule.h"
#include "cleave/runtime/fusion/FusionMatch.h"

#include "llvm/Support/MathExtras.h"

#include <numeric>
#include <set>

namespace cleave::lowering::detail {

namespace {

/// The inputs the runtime fills with one value a step (AdamW's count, loss
/// scaling's scale), not per microbatch from the data.
bool isRuntimeInput(const plan::TensorDecl &t) {
  return t.input_name() == "step" || t.input_name() == "loss_scale";
}

} // namespace

void Emitter::assignStashFrames(ArrayRef<int64_t> stashBytes) {
  int v = numChunks();
  stashClass.assign(v, 0);
  stashFrames.assign(1, numFrames);
  if (v == 1 || perChunk != 2 || numFrames == 0)
    return;
  // The stash steps in order (the schedule's forwards and backwards), and
  // the classes of chunks the cost model prices (cost::planStashFrames).
  std::vector<cost::PipelineSlot> order;
  for (const plan::ScheduleStep &st : program.schedule()) {
    int seg = st.segment();
    if (seg + 1 >= static_cast<int>(segments.size()))
      continue;
    order.push_back({seg % perChunk == kForward ? cost::PassKind::Forward
                                                : cost::PassKind::Backward,
                     static_cast<int>(st.microbatch()), chunkOfSegment(seg)});
  }
  cost::StashFrames planned = cost::planStashFrames(
      order, std::vector<double>(stashBytes.begin(), stashBytes.end()));
  stashClass = planned.classOf;
  stashFrames = planned.frames;
  // Frames again, each class its own: a forward takes the class's lowest
  // free frame, its backward gives it back.
  std::vector<std::set<int>> free(stashFrames.size());
  std::vector<int> used(stashFrames.size(), 0);
  std::map<std::pair<int, int64_t>, int> frameOf;
  for (plan::ScheduleStep &st : *program.mutable_schedule()) {
    int seg = st.segment();
    if (seg + 1 >= static_cast<int>(segments.size()))
      continue;
    int c = chunkOfSegment(seg);
    int k = stashClass[c];
    std::pair<int, int64_t> key{c, st.microbatch()};
    if (seg % perChunk == kForward) {
      int f = used[k];
      if (!free[k].empty()) {
        f = *free[k].begin();
        free[k].erase(free[k].begin());
      } else {
        ++used[k];
      }
      frameOf[key] = f;
      st.set_slot(f);
    } else {
      auto it = frameOf.find(key);
      if (it == frameOf.end())
        continue;
      st.set_slot(it->second);
      free[k].insert(it->second);
      frameOf.erase(it);
    }
  }
}

void Emitter::planMemory() {
  // The segment that first reads each input (its chunk's frames hold it).
  std::vector<int> inputSegment(program.tensors_size(), -1);
  // Zero-bubble: the tensors a W reads (held in the weight frames).
  std::vector<bool> readByWeight(program.tensors_size(), false);
  // Liveness within segments, and the kinds that follow from it.
  for (int s = 0; s < static_cast<int>(segments.size()); ++s)
    for (size_t i = 0; i < segments[s].size(); ++i) {
      const plan::Instruction &inst = segments[s][i];
      auto touch = [&](int id) {
        if (id < 0)
          return;
        plan::TensorDecl &t = *program.mutable_tensors(id);
        if (t.kind() == plan::TensorDecl::INPUT && inputSegment[id] < 0)
          inputSegment[id] = s;
        if (perChunk == 3 && s % perChunk == kWeight &&
            s < static_cast<int>(segments.size()) - 1)
          readByWeight[id] = true;
        // A sent value read again by a later segment is stashed (its two
        // send slots would not outlive the microbatches in flight).
        if (t.kind() != plan::TensorDecl::TRANSIENT &&
            t.kind() != plan::TensorDecl::STASH &&
            t.kind() != plan::TensorDecl::COMM_BUFFER)
          return;
        if (segmentOf[id] == -1) {
          segmentOf[id] = s;
          firstUse[id] = i;
        } else if (segmentOf[id] != s) {
          t.set_kind(plan::TensorDecl::STASH);
        }
        lastUse[id] = std::max<int64_t>(lastUse[id], i);
      };
      for (int id : inst.outputs())
        touch(id);
      for (int id : inst.inputs())
        touch(id);
      // Loss scaling's overflow flag is read by every update it guards.
      if (inst.has_unless())
        touch(inst.unless());
      if (inst.op() == "comm.send" && inst.attrs().count("buffered")) {
        plan::TensorDecl &t = *program.mutable_tensors(inst.inputs(0));
        if (t.kind() == plan::TensorDecl::TRANSIENT) {
          t.set_kind(plan::TensorDecl::COMM_BUFFER);
          sendSegment[t.id()] = s;
        }
      }
    }
  // A GEMM's operands stay live through the next instruction when that
  // one consumes the product (a bias add, an activation gradient, a sum
  // over the batch): a backend may run the pair as one GEMM with an
  // epilogue (runtime Fusion.h), which reads the operands while it writes
  // the second result.
  for (int s = 0; s < static_cast<int>(segments.size()); ++s)
    for (size_t i = 0; i + 1 < segments[s].size(); ++i) {
      const auto &segment = segments[s];
      const plan::Instruction &mm = segment[i];
      if (mm.op() != "graph.matmul" || mm.outputs_size() != 1 ||
          !llvm::is_contained(segment[i + 1].inputs(), mm.outputs(0)))
        continue;
      for (int id : mm.inputs())
        if (id >= 0 && segmentOf[id] == s &&
            lastUse[id] == static_cast<int64_t>(i))
          lastUse[id] = i + 1;
    }
  // The per-sequence products of batched weight gradients (B times the
  // weight each: 2.9 GiB for BERT-Base's decoder at microbatch 32).
  auto batchReduce = [](const fusion::FusedGroup &g, const plan::Segment &) {
    return g.kind == fusion::Fusion::MatmulBatchReduce;
  };
  for (int s = 0; s < program.segments_size(); ++s)
    for (const fusion::FusedGroup &g :
         fusion::findFusions(program, s, batchReduce))
      for (int32_t id : g.dropped)
        if (program.tensors(id).kind() == plan::TensorDecl::TRANSIENT)
          program.mutable_tensors(id)->set_fused_away(true);
  // Reshapes that are views: a reshape keeps the bytes and their order, so
  // the result of one whose operand and result are read only within its
  // segment takes the operand's place (the operand then lives until the
  // result's last read, a chain of reshapes on its first operand's) and
  // the runtime's copy finds nothing to move (its kernels skip a copy
  // onto itself). Not where an instruction writes either one in place.
  std::vector<int32_t> viewOf(program.tensors_size(), -1);
  std::vector<bool> inPlace(program.tensors_size(), false);
  for (const std::vector<plan::Instruction> &segment : segments)
    for (const plan::Instruction &inst : segment)
      for (int id : inst.outputs())
        if (id >= 0 && llvm::is_contained(inst.inputs(), id))
          inPlace[id] = true;
  for (int s = 0; s < static_cast<int>(segments.size()); ++s)
    for (const plan::Instruction &inst : segments[s]) {
      if (inst.op() != "graph.reshape" || inst.inputs_size() != 1 ||
          inst.outputs_size() != 1)
        continue;
      int in = inst.inputs(0), out = inst.outputs(0);
      auto local = [&](int id) {
        if (id < 0 || id >= program.tensors_size())
          return false;
        const plan::TensorDecl &t = program.tensors(id);
        return t.kind() == plan::TensorDecl::TRANSIENT && !t.fused_away() &&
               segmentOf[id] == s && !inPlace[id] &&
               !llvm::is_contained(program.output_tensors(), id);
      };
      if (!local(in) || !local(out) || in == out ||
          program.tensors(in).bytes() != program.tensors(out).bytes())
        continue;
      int root = viewOf[in] >= 0 ? viewOf[in] : in;
      viewOf[out] = root;
      lastUse[root] = std::max(lastUse[root], lastUse[out]);
    }
  // Framed schedules: a chunk's stash and inputs live in the run's frame
  // (a microbatch's inputs may be read long after later ones were loaded,
  // by a deferred W). The segment that makes each, -1 for the others.
  auto framedSegment = [&](const plan::TensorDecl &t) {
    if (t.kind() != plan::TensorDecl::STASH &&
        t.kind() != plan::TensorDecl::INPUT)
      return -1;
    int seg = t.kind() == plan::TensorDecl::STASH ? segmentOf[t.id()]
                                                  : inputSegment[t.id()];
    if (numFrames > 0 && seg >= 0 && !isRuntimeInput(t) &&
        !llvm::is_contained(program.output_tensors(), t.id()))
      return seg;
    return -1;
  };
  // What the W reads stays until the W: made by the forward (or an input)
  // in pool 1, by the B in pool 2; the rest in pool 0.
  auto poolOf = [&](const plan::TensorDecl &t, int seg) {
    return !readByWeight[t.id()]           ? 0
           : seg % perChunk == kBackward ? 2
                                         : 1;
  };
  std::vector<int64_t> stashBytes(numChunks(), 0);
  for (const plan::TensorDecl &t : program.tensors())
    if (int seg = framedSegment(t); seg >= 0 && poolOf(t, seg) == 0)
      stashBytes[chunkOfSegment(seg)] +=
          llvm::alignTo(t.fused_away() ? 0 : t.bytes(), 64);
  assignStashFrames(stashBytes);
  for (plan::TensorDecl &t : *program.mutable_tensors()) {
    BufferRequest r;
    r.bytes = t.fused_away() ? 0 : t.bytes();
    switch (t.kind()) {
    case plan::TensorDecl::STASH:
    case plan::TensorDecl::INPUT: {
      if (int seg = framedSegment(t); seg >= 0) {
        int pool = poolOf(t, seg);
        int c = chunkOfSegment(seg);
        t.set_slots(pool == 0   ? stashFrames[stashClass[c]]
                    : pool == 1 ? numWeightFrames
                                : numGradientFrames);
        t.set_frame_pool(pool);
        r.frameGroup = c;
        // Each class of chunks has frames of its own size: a region of
        // the arena apart (the runtime still reads the frame of pool 0).
        r.framePool = pool == 0 && stashClass[c] > 0 ? 2 + stashClass[c]
                                                     : pool;
        break;
      }
      t.set_slots(isRuntimeInput(t) ? 1 : slots);
      if (llvm::is_contained(program.output_tensors(), t.id()))
        t.set_slots(ctx.microbatches);
      break;
    }
    case plan::TensorDecl::COMM_BUFFER: {
      // The runtime completes a send before its slot is written again.
      // The fewest slots with which no stage waits on a neighbour that
      // waits on it (cost::minimalSendSlots) is one for every schedule so
      // far; a second lets the sender run a microbatch ahead (GPipe on 4
      // CPU ranks with one core taken by another process: one slot 5-8%
      // slower than one per microbatch in flight, two as fast; on a quiet
      // machine all three alike).
      int seg = sendSegment.count(t.id()) ? sendSegment[t.id()] : -1;
      int k = 1;
      if (seg >= 0 && !sendSlots.slots.empty())
        k = sendSlots.at(ctx.stage, chunkOfSegment(seg),
                         seg % perChunk != kForward);
      int64_t ahead = std::min<int64_t>(ctx.microbatches, slots) > 1 ? 2 : 1;
      t.set_slots(std::max<int64_t>(k, ahead));
      break;
    }
    case plan::TensorDecl::TRANSIENT:
      if (viewOf[t.id()] >= 0) {
        r.aliasOf = viewOf[t.id()]; // placed with its operand
        break;
      }
      r.transient = true;
      r.segment = std::max(segmentOf[t.id()], 0);
      r.first = firstUse[t.id()];
      r.last = lastUse[t.id()];
      break;
    default:
      break;
    }
    r.slots = t.slots();
    if (auto it = bucketOf.find(t.id()); it != bucketOf.end())
      r.aliasOf = it->second.first;
    requests.push_back(r);
  }
  BufferAssignment a = planBuffers(requests);
  // A bucket spans its gradients, padding included.
  for (auto [bucket, range] : bucketOf) {
    plan::TensorDecl &b = *program.mutable_tensors(bucket);
    const plan::TensorDecl &last = program.tensors(range.second);
    int64_t bytes = a.offsets[range.second] + last.bytes() -
                    a.offsets[range.first];
    b.set_bytes(bytes);
    b.set_shape(0, bytes / 4);
  }
  std::map<plan::TensorDecl::Kind, int64_t> byKind;
  for (plan::TensorDecl &t : *program.mutable_tensors()) {
    t.set_offset(t.fused_away() ? 0 : a.offsets[t.id()]);
    t.set_slot_stride(a.slotStrides[t.id()]);
    if (t.kind() != plan::TensorDecl::TRANSIENT && !bucketOf.count(t.id()))
      byKind[t.kind()] += t.bytes() * std::max<int64_t>(1, t.slots());
  }
  byKind[plan::TensorDecl::TRANSIENT] = a.transientBytes;
  for (auto [kind, bytes] : byKind) {
    plan::KindBytes *k = program.add_memory();
    k->set_kind(kind);
    k->set_bytes(bytes);
  }
  program.set_arena_bytes(a.totalBytes);
}

} // namespace cleave::lowering::detail
