//===- EmitterImpl.h - The program emitter's state, shared by its files -*- C++ -*-===//
//
// Internal to compiler/lib/Lowering: ProgramEmitter.cpp walks a stage's
// step and emits its instructions, GradientLowering.cpp the gradient
// accumulation, reduction (buckets, ZeRO, tied parameters) and optimizer
// updates, ProgramMemory.cpp the tensor kinds and the arena layout.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_LOWERING_EMITTERIMPL_H
#define CLEAVE_LOWERING_EMITTERIMPL_H

#include "cleave/Lowering/BufferPlan.h"
#include "cleave/Lowering/CollectiveOverlap.h"
#include "cleave/Lowering/ProgramEmitter.h"

#include "cleave/Dialect/Graph/IR/GraphOps.h"
#include "cleave/cost_model/SendSlots.h"
#include "cleave/runtime/plan/PlanIO.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <map>
#include <string>
#include <vector>

namespace cleave::lowering::detail {

using namespace mlir;
namespace gr = cleave::graph;

/// Segments of a model chunk: forward, backward and (zero-bubble
/// schedules) the weight gradients split off the backward; then one
/// optimizer segment.
enum Phase { kForward = 0, kBackward = 1, kWeight = 2, kOptimizer = 3 };

/// The name an instruction carries: graph ops keep theirs, communication
/// becomes the runtime's comm.* vocabulary.
std::string instructionName(mlir::Operation *op);
/// An MLIR attribute as a plan attribute; false for kinds plans do not carry.
bool toPlanAttr(mlir::Attribute attr, plan::Attr &out);

class Emitter {
public:
  /// `chunks`: the stage's model chunks in order (one unless interleaved),
  /// each a training step.
  Emitter(ArrayRef<func::FuncOp> chunks, const ProgramContext &ctx,
          plan::Plan &plan)
      : chunks(chunks.begin(), chunks.end()), step(chunks.front()), ctx(ctx),
        plan(plan),
        perChunk(ctx.knobs.schedule == cost::ScheduleKind::ZeroBubbleH1 ? 3 : 2),
        segments(perChunk * chunks.size() + 1) {}

  FailureOr<plan::Program> run();

private:
  int addTensor(Value v, const std::string &name,
                plan::TensorDecl::Kind kind, Type type);
  FailureOr<int> paramIndex(gr::ParamOp param);
  void setParamDims(plan::TensorDecl &t, int index);
  /// Declares a source op's tensor: true when `op` is one, false when it
  /// is not, failure (with a diagnostic) when its value cannot be read.
  FailureOr<bool> declareSource(Operation *op);
  /// The dimension ZeRO splits `param`'s update along, -1 if it does not.
  int64_t zeroDimOf(gr::ParamOp param) const;
  /// Whether each context-parallel rank's gradient of `param` is partial,
  /// summed over "cp" (by an all-reduce autodiff marked as a parameter
  /// gradient) straight into its update.
  bool gradientPartialOverCp(gr::ParamOp param) const;
  /// The replicas ZeRO splits `param` over: its data-parallel replicas,
  /// and the context-parallel ranks where its gradient is partial over
  /// them (zeroReplicasOf).
  Replicas zeroReplicas(gr::ParamOp param) const;
  /// The 16-bit type (bf16, f16) `param` is held in with fp32 master
  /// blocks (ProgramContext::halfParameters), or null: ZeRO splits its
  /// update, one stage holds it, and it is read only through casts to
  /// that type and by its update.
  Type halfTypeOf(gr::ParamOp param) const;
  /// Whether the per-microbatch "cp" sum of a parameter's gradient is left
  /// to the step's buckets (see ProgramContext::cp).
  bool foldsIntoBuckets(graph::AllReduceOp sum) const;
  LogicalResult emitInstruction(Operation *op, Phase phase);
  plan::Instruction &append(Phase phase, const std::string &name);
  LogicalResult emitOptimizer(ArrayRef<Operation *> updates);
  /// Sums the gradients of every parameter several stages hold over those
  /// stages (GradientLowering.cpp says how).
  void exchangeTiedGradients(
      ArrayRef<std::pair<Operation *, int>> gradTensors);
  void exchangeTiedGradient(gr::ParamOp param, int g, ArrayRef<int> holders,
                            int64_t tag);
  /// Loss scaling: appends to the optimizer segment the unscale of the
  /// gradients the updates read (per update: the reduced gradient, or its
  /// ZeRO block) and the all-reduce (max, every rank) of its overflow
  /// flag; returns the flag's tensor, which the updates run `unless`.
  int unscaleGradients(ArrayRef<std::pair<Operation *, int>> gradTensors,
                       ArrayRef<int64_t> zeroDims, ArrayRef<bool> gradSharded,
                       ArrayRef<int> gradShards);
  void emitGradientBuckets(ArrayRef<int> grads, const Replicas &replicas);
  /// Puts `inst` (an asynchronous collective over the tensors `written`)
  /// in the backward segment that writes them last, run by the last
  /// microbatch only, and queues its comm.wait for the optimizer.
  LogicalResult placeInBackward(const plan::Instruction &collective,
                                ArrayRef<int> written);
  void shardOverReplicas(plan::TensorDecl &t, int64_t dim,
                         const Replicas &replicas);
  plan::Instruction &collective(const char *name, int input, int output,
                                int64_t dim, const Replicas &replicas);
  void planMemory();
  /// Interleaved: sorts the chunks into classes that share stash frames
  /// (the head's chunk, holding the logits, in one of its own when that
  /// takes fewer bytes), then gives each forward its class's frame.
  void assignStashFrames(ArrayRef<int64_t> stashBytes);
  LogicalResult buildSchedule();
  /// The segment of `phase` for chunk `c` (default: the chunk being
  /// emitted): chunk c's are perChunk * c + phase, the optimizer is last.
  int segmentIndex(Phase phase, int c = -1) const;
  /// The chunk a segment belongs to.
  int chunkOfSegment(int segment) const { return segment / perChunk; }
  /// Zero-bubble: the backward ops of `step` that only compute weight
  /// gradients (no gradient sent to the previous stage depends on them).
  llvm::DenseSet<Operation *> weightGradientOps();
  int numChunks() const { return static_cast<int>(chunks.size()); }

  SmallVector<func::FuncOp> chunks;
  /// The chunk being emitted (errors without an op are reported at it).
  func::FuncOp step;
  int chunk = 0;
  const ProgramContext &ctx;
  plan::Plan &plan;
  /// Segments per chunk: 2, or 3 when W is split off the backward.
  int perChunk;
  /// Backward ops of the chunk being emitted that go to its W segment.
  llvm::DenseSet<Operation *> weightOps;
  plan::Program program;
  llvm::DenseMap<Value, int> ids;
  std::vector<BufferRequest> requests;
  std::vector<std::vector<plan::Instruction>> segments;
  /// Per tensor: the segment and instruction interval it is live in.
  std::vector<int64_t> firstUse, lastUse;
  std::vector<int> segmentOf;
  int64_t slots = 1;
  /// Slots of the buffered pipeline sends, per chunk and direction
  /// (training plans; inference sends keep one).
  cost::SendSlots sendSlots;
  /// The segment that sends each COMM_BUFFER tensor.
  std::map<int, int> sendSegment;
  /// Interleaved: stash frames shared by the chunks (ScheduleStep.slot).
  int64_t numFrames = 0, numWeightFrames = 0, numGradientFrames = 0;
  /// Stash frames (pool 0) per class of chunks, and each chunk's class.
  std::vector<int64_t> stashFrames;
  std::vector<int> stashClass;
  /// Gradient buckets: tensor id -> the first and last gradient it views.
  std::map<int, std::pair<int, int>> bucketOf;
  int numBuckets = 0;
  int numAsyncHandles = 0;
  /// Gradients summed between stages (tied parameters) before reduction.
  llvm::DenseSet<int> tiedGradients;
  /// comm.wait of the reductions started in the backward pass.
  std::vector<plan::Instruction> pendingWaits;
};

} // namespace cleave::lowering::detail

#endif // CLEAVE_LOWERING_EMITTERIMPL_H
