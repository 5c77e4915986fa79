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
#include "cleave/Lowering/ProgramEmitter.h"

#include "cleave/Dialect/Graph/IR/GraphOps.h"
#include "cleave/runtime/plan/PlanIO.h"

#include "llvm/ADT/DenseMap.h"

#include <map>
#include <string>
#include <vector>

namespace cleave::lowering::detail {

using namespace mlir;
namespace gr = cleave::graph;

enum Phase { kForward = 0, kBackward = 1, kOptimizer = 2 };

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
        plan(plan), segments(2 * chunks.size() + 1) {}

  FailureOr<plan::Program> run();

private:
  int addTensor(Value v, const std::string &name,
                plan::TensorDecl::Kind kind, Type type);
  int paramIndex(gr::ParamOp param);
  void setParamDims(plan::TensorDecl &t, int index);
  LogicalResult declareSource(Operation *op);
  LogicalResult emitInstruction(Operation *op, Phase phase);
  plan::Instruction &append(Phase phase, const std::string &name);
  LogicalResult emitOptimizer(ArrayRef<Operation *> updates);
  void exchangeTiedGradient(gr::ParamOp param, int g);
  void emitGradientBuckets(ArrayRef<int> grads, const Replicas &replicas);
  void shardOverReplicas(plan::TensorDecl &t, int64_t dim,
                         const Replicas &replicas);
  plan::Instruction &collective(const char *name, int input, int output,
                                int64_t dim, const Replicas &replicas);
  void planMemory();
  LogicalResult buildSchedule();
  /// The segment of `phase` for the chunk being emitted: chunk c's forward
  /// and backward are segments 2c and 2c + 1, the optimizer is the last.
  int segmentIndex(Phase phase) const;
  int numChunks() const { return static_cast<int>(chunks.size()); }

  SmallVector<func::FuncOp> chunks;
  /// The chunk being emitted (errors without an op are reported at it).
  func::FuncOp step;
  int chunk = 0;
  const ProgramContext &ctx;
  plan::Plan &plan;
  plan::Program program;
  llvm::DenseMap<Value, int> ids;
  std::vector<BufferRequest> requests;
  std::vector<std::vector<plan::Instruction>> segments;
  /// Per tensor: the segment and instruction interval it is live in.
  std::vector<int64_t> firstUse, lastUse;
  std::vector<int> segmentOf;
  int64_t slots = 1;
  /// Microbatches in flight per model chunk (slots of its stashes).
  std::vector<int64_t> chunkSlots;
  /// Interleaved: stash frames shared by the chunks (ScheduleStep.slot).
  int64_t numFrames = 0;
  /// Gradient buckets: tensor id -> the first and last gradient it views.
  std::map<int, std::pair<int, int>> bucketOf;
  int numBuckets = 0;
};

} // namespace cleave::lowering::detail

#endif // CLEAVE_LOWERING_EMITTERIMPL_H
