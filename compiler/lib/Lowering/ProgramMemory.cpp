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

#include "cleave/runtime/executor/Fusion.h"

namespace cleave::lowering::detail {

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
        if (t.kind() != plan::TensorDecl::TRANSIENT &&
            t.kind() != plan::TensorDecl::STASH)
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
      if (inst.op() == "comm.send" && inst.attrs().count("buffered")) {
        plan::TensorDecl &t = *program.mutable_tensors(inst.inputs(0));
        if (t.kind() == plan::TensorDecl::TRANSIENT)
          t.set_kind(plan::TensorDecl::COMM_BUFFER);
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
  auto batchReduce = [](const executor::FusedGroup &g, const plan::Segment &) {
    return g.kind == executor::Fusion::MatmulBatchReduce;
  };
  for (int s = 0; s < program.segments_size(); ++s)
    for (const executor::FusedGroup &g :
         executor::findFusions(program, s, batchReduce))
      for (int32_t id : g.dropped)
        if (program.tensors(id).kind() == plan::TensorDecl::TRANSIENT)
          program.mutable_tensors(id)->set_fused_away(true);
  for (plan::TensorDecl &t : *program.mutable_tensors()) {
    BufferRequest r;
    r.bytes = t.fused_away() ? 0 : t.bytes();
    switch (t.kind()) {
    case plan::TensorDecl::STASH:
    case plan::TensorDecl::INPUT: {
      // Framed schedules: a chunk's stash and inputs live in the run's
      // frame (a microbatch's inputs may be read long after later ones
      // were loaded, by a deferred W).
      int seg = t.kind() == plan::TensorDecl::STASH ? segmentOf[t.id()]
                                                    : inputSegment[t.id()];
      if (numFrames > 0 && seg >= 0 && t.input_name() != "step" &&
          !llvm::is_contained(program.output_tensors(), t.id())) {
        // What the W reads stays until the W: made by the forward (or an
        // input) in pool 1, by the B in pool 2.
        int pool = !readByWeight[t.id()]    ? 0
                   : seg % perChunk == kBackward ? 2
                                                 : 1;
        t.set_slots(pool == 0   ? numFrames
                    : pool == 1 ? numWeightFrames
                                : numGradientFrames);
        t.set_frame_pool(pool);
        r.frameGroup = chunkOfSegment(seg);
        r.framePool = pool;
        break;
      }
      t.set_slots(t.input_name() == "step" ? 1 : slots);
      if (llvm::is_contained(program.output_tensors(), t.id()))
        t.set_slots(ctx.microbatches);
      break;
    }
    case plan::TensorDecl::COMM_BUFFER:
      // A slot per microbatch in flight: the runtime completes a send
      // before the slot is written again, and by then the receiving stage
      // has taken it (1F1B keeps at most this many microbatches between
      // neighbours; GPipe all of them). Interleaved chunks share the
      // neighbours, so all the stage's microbatches in flight count.
      t.set_slots(std::min<int64_t>(ctx.microbatches, slots));
      break;
    case plan::TensorDecl::TRANSIENT:
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
