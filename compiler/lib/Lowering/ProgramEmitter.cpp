//===- ProgramEmitter.cpp - A stage's training step to a plan program -----===//
//
// The walk: sources (parameters, optimizer state, inputs, constants) become
// declared tensors; every other op becomes one instruction of the segment
// its `cleave.phase` names; the stage's schedule expands the pipeline
// order. The gradients and optimizer are GradientLowering.cpp's, the
// tensor kinds and arena ProgramMemory.cpp's.
//
//===----------------------------------------------------------------------===//

#include "EmitterImpl.h"

#include <cmath>

#include "cleave/cost_model/PipelineSchedule.h"

#include "cleave/Analysis/InputSynthesis.h"
#include "cleave/Dialect/Graph/IR/TensorValues.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringSwitch.h"

#include <map>
#include <set>

using namespace mlir;
namespace gr = cleave::graph;

namespace cleave::lowering {

namespace detail {

namespace {

Phase phaseOf(Operation *op) {
  auto attr = op->getAttrOfType<StringAttr>("cleave.phase");
  if (!attr)
    return kForward;
  return attr.getValue() == "optimizer" ? kOptimizer : kBackward;
}

plan::DType dtypeOf(Type type) {
  Type e = cast<RankedTensorType>(type).getElementType();
  if (e.isF32())
    return plan::F32;
  if (e.isBF16())
    return plan::BF16;
  if (e.isF16())
    return plan::F16;
  if (auto integer = dyn_cast<IntegerType>(e)) {
    bool u = integer.isUnsigned();
    switch (integer.getWidth()) {
    case 1:
      return plan::BOOL;
    case 8:
      return u ? plan::U8 : plan::I8;
    case 16:
      return u ? plan::U16 : plan::I16;
    case 32:
      return u ? plan::U32 : plan::I32;
    default:
      return u ? plan::U64 : plan::I64;
    }
  }
  return plan::F32;
}

/// How the plan stores a tensor of `dtype`.
gr::ElementStorage storageOf(plan::DType dtype) {
  switch (dtype) {
  case plan::BF16:
    return gr::ElementStorage::BF16;
  case plan::F16:
    return gr::ElementStorage::F16;
  case plan::BOOL:
    return gr::ElementStorage::Bool;
  case plan::I8:
  case plan::U8:
    return gr::ElementStorage::Int8;
  case plan::I16:
  case plan::U16:
    return gr::ElementStorage::Int16;
  case plan::I32:
  case plan::U32:
    return gr::ElementStorage::Int32;
  case plan::I64:
  case plan::U64:
    return gr::ElementStorage::Int64;
  default:
    return gr::ElementStorage::F32;
  }
}

/// Raw little-endian bytes of `op`'s constant `attr` in the plan's dtype;
/// an error at `op` when the values cannot be read.
FailureOr<std::string> rawBytes(Operation *op, ElementsAttr attr,
                                plan::DType dtype) {
  return gr::readElementBytes(attr, storageOf(dtype),
                              [&] { return op->emitOpError(); });
}

/// Initialisation by the parameter's role, as GPT-2 and BERT do: biases
/// zero, normalisation scales one, every other weight N(0, 0.02).
plan::InitSpec initFor(StringRef name, RankedTensorType type) {
  plan::InitSpec init;
  bool norm = name.contains("ln") || name.contains("norm");
  // Batch-norm statistics (frozen parameters of imported models): a
  // variance drawn from a normal could be negative, and its square root NaN.
  if (name.ends_with("running_var")) {
    init.set_kind(plan::InitSpec::ONES);
  } else if (name.ends_with("bias") || name.ends_with("running_mean")) {
    init.set_kind(plan::InitSpec::ZEROS);
  } else if (norm && type.getRank() == 1) {
    init.set_kind(plan::InitSpec::ONES);
  } else if (type.getRank() == 4) {
    // Convolution filters [out, in / groups, kh, kw]: LeCun's normal,
    // 1 / sqrt(fan-in), so that a deep CNN's activations keep their scale
    // (at 0.02 a 50-layer MobileNet's output is a constant).
    int64_t fanIn = type.getDimSize(1) * type.getDimSize(2) * type.getDimSize(3);
    init.set_kind(plan::InitSpec::NORMAL);
    init.set_std(1.0 / std::sqrt(double(std::max<int64_t>(1, fanIn))));
  } else {
    init.set_kind(plan::InitSpec::NORMAL);
    init.set_std(0.02);
  }
  return init;
}

} // namespace

std::string instructionName(Operation *op) {
  if (isa<gr::CopyToGroupOp>(op))
    return "runtime.copy";
  if (isa<gr::AllReduceOp, gr::AllGatherOp, gr::ReduceScatterOp,
          gr::AllToAllOp, gr::ShardSliceOp, gr::SendOp, gr::RecvOp>(op))
    return ("comm." + op->getName().stripDialect()).str();
  return op->getName().getStringRef().str();
}

bool toPlanAttr(Attribute attr, plan::Attr &out) {
  if (auto b = dyn_cast<BoolAttr>(attr)) {
    out.set_b(b.getValue());
  } else if (auto i = dyn_cast<IntegerAttr>(attr)) {
    out.set_i(i.getValue().getSExtValue());
  } else if (auto f = dyn_cast<FloatAttr>(attr)) {
    out.set_f(f.getValueAsDouble());
  } else if (isa<UnitAttr>(attr)) {
    out.set_b(true);
  } else if (auto s = dyn_cast<StringAttr>(attr)) {
    out.set_s(s.getValue().str());
  } else if (auto a = dyn_cast<DenseI64ArrayAttr>(attr)) {
    for (int64_t v : a.asArrayRef())
      out.mutable_ints()->add_values(v);
  } else if (auto a = dyn_cast<DenseF64ArrayAttr>(attr)) {
    for (double v : a.asArrayRef())
      out.mutable_floats()->add_values(v);
  } else if (auto a = dyn_cast<ArrayAttr>(attr)) {
    for (Attribute e : a) {
      if (auto s = dyn_cast<StringAttr>(e))
        out.mutable_strings()->add_values(s.getValue().str());
      else if (auto i = dyn_cast<IntegerAttr>(e))
        out.mutable_ints()->add_values(i.getValue().getSExtValue());
      else
        return false;
    }
    if (a.empty())
      out.mutable_ints();
  } else {
    return false;
  }
  return true;
}

int Emitter::addTensor(Value v, const std::string &name,
                       plan::TensorDecl::Kind kind, Type type) {
  int id = program.tensors_size();
  plan::TensorDecl *t = program.add_tensors();
  t->set_id(id);
  t->set_name(name);
  t->set_kind(kind);
  t->set_dtype(dtypeOf(type));
  t->set_seq_dim(-1);
  t->set_batch_dim(-1);
  auto ranked = cast<RankedTensorType>(type);
  for (int64_t d : ranked.getShape())
    t->add_shape(d);
  t->set_bytes(gr::numElements(ranked) * plan::dtypeBytes(t->dtype()));
  t->set_slots(1);
  t->set_param_index(-1);
  if (v)
    ids[v] = id;
  firstUse.push_back(-1);
  lastUse.push_back(-1);
  segmentOf.push_back(-1);
  return id;
}

FailureOr<int> Emitter::paramIndex(gr::ParamOp param) {
  std::string name = param.getName().str();
  for (int i = 0; i < plan.parameters_size(); ++i)
    if (plan.parameters(i).name() == name) {
      plan::ParameterSharding *p = plan.mutable_parameters(i);
      if (!llvm::is_contained(p->stages(), ctx.stage))
        p->add_stages(ctx.stage);
      return i;
    }
  plan::ParameterSharding *p = plan.add_parameters();
  p->set_name(name);
  auto local = cast<RankedTensorType>(param.getType());
  SmallVector<int64_t> global(local.getShape());
  if (auto g = param->getAttrOfType<DenseI64ArrayAttr>("cleave.global_shape"))
    global.assign(g.asArrayRef().begin(), g.asArrayRef().end());
  for (int64_t d : global)
    p->add_global_shape(d);
  auto axes = param->getAttrOfType<ArrayAttr>("cleave.shard_axes");
  for (int64_t d = 0; d < local.getRank(); ++d) {
    plan::DimSharding *dim = p->add_dims();
    if (axes && d < int64_t(axes.size()))
      if (auto s = dyn_cast<StringAttr>(axes[d]); s && !s.getValue().empty()) {
        // "tp,dp": split over tp, each block again over dp (major first).
        SmallVector<StringRef> names;
        s.getValue().split(names, ',');
        for (StringRef name : names)
          dim->add_axes(name.str());
      }
  }
  if (auto axes = param->getAttrOfType<StringAttr>("cleave.zero_axes"))
    p->set_zero_axis(axes.getValue().str());
  if (ArrayAttr aliases = param.getAliasesAttr())
    for (Attribute a : aliases)
      p->add_aliases(cast<StringAttr>(a).str());
  p->add_stages(ctx.stage);
  *p->mutable_init() = initFor(name, local.clone(global));
  ElementsAttr value = param.getValueAttr();
  if (!value)
    value = param->getAttrOfType<ElementsAttr>("cleave.global_value");
  if (value) {
    FailureOr<std::string> bytes = rawBytes(param, value, plan::F32);
    if (failed(bytes))
      return failure();
    p->set_initial_value(std::move(*bytes));
  }
  return plan.parameters_size() - 1;
}

void Emitter::setParamDims(plan::TensorDecl &t, int index) {
  t.set_param_index(index);
  *t.mutable_dims() = plan.parameters(index).dims();
}

FailureOr<bool> Emitter::declareSource(Operation *op) {
  if (auto param = dyn_cast<gr::ParamOp>(op)) {
    Type type = param.getType();
    if (Type half = halfTypeOf(param))
      type = cast<RankedTensorType>(type).clone(half);
    FailureOr<int> index = paramIndex(param);
    if (failed(index))
      return failure();
    int id = addTensor(param, param.getName().str(), plan::TensorDecl::PARAMETER,
                       type);
    setParamDims(*program.mutable_tensors(id), *index);
    return true;
  }
  if (auto state = dyn_cast<gr::OptimizerStateOp>(op)) {
    StringRef name = state.getName();
    auto [owner, which] = name.rsplit('.');
    int index = -1;
    for (int i = 0; i < plan.parameters_size(); ++i)
      if (plan.parameters(i).name() == owner)
        index = i;
    if (index < 0)
      return op->emitOpError("optimizer state of an unknown parameter '")
             << owner << "'";
    int id = addTensor(state, name.str(), plan::TensorDecl::OPTIMIZER_STATE,
                       state.getType());
    setParamDims(*program.mutable_tensors(id), index);
    program.mutable_tensors(id)->set_state(which.str());
    return true;
  }
  if (auto input = dyn_cast<gr::InputOp>(op)) {
    int id = addTensor(input, input.getName().str(), plan::TensorDecl::INPUT,
                       input.getType());
    plan::TensorDecl &t = *program.mutable_tensors(id);
    t.set_input_name(input.getName().str());
    auto type = cast<RankedTensorType>(input.getType());
    if (input.getName() != "step" && type.getRank() > 0 &&
        type.getDimSize(0) == ctx.knobs.microbatchSize)
      t.set_batch_dim(0);
    // What the model's graph says the ids may be (InputSynthesis.h), else
    // the vocabulary of the model's shape.
    if (auto vocab = input->getAttrOfType<IntegerAttr>(kInputVocabAttr))
      t.set_vocab(vocab.getInt());
    else if (!isa<FloatType>(type.getElementType()) && ctx.vocab > 0)
      t.set_vocab(ctx.vocab);
    if (auto s = input->getAttrOfType<StringAttr>(kInputSynthesisAttr))
      if (std::optional<InputSynthesis> kind = parseInputSynthesis(s.getValue()))
        t.set_synthesis(*kind == InputSynthesis::Ones ? plan::TensorDecl::SYNTH_ONES
                        : *kind == InputSynthesis::Zeros
                            ? plan::TensorDecl::SYNTH_ZEROS
                        : *kind == InputSynthesis::Positions
                            ? plan::TensorDecl::SYNTH_POSITIONS
                            : plan::TensorDecl::SYNTH_RANDOM);
    return true;
  }
  if (auto constant = dyn_cast<gr::ConstantOp>(op)) {
    int id = addTensor(constant, "constant", plan::TensorDecl::CONSTANT,
                       constant.getType());
    plan::TensorDecl &t = *program.mutable_tensors(id);
    FailureOr<std::string> bytes = rawBytes(op, constant.getValue(), t.dtype());
    if (failed(bytes))
      return failure();
    t.set_constant_value(std::move(*bytes));
    return true;
  }
  return false;
}

int Emitter::segmentIndex(Phase phase, int c) const {
  if (phase == kOptimizer)
    return perChunk * numChunks();
  return perChunk * (c < 0 ? chunk : c) + phase;
}

llvm::DenseSet<Operation *> Emitter::weightGradientOps() {
  // B: the backward ops the gradients sent to the previous stage depend on
  // (found backwards from the sends), and every receive (messages of one
  // tag match in order, so they must arrive in B's microbatch order); W:
  // the rest of the backward.
  llvm::DenseSet<Operation *> needed;
  SmallVector<Operation *> work;
  for (Operation &op : step.front())
    if (isa<gr::SendOp, gr::RecvOp>(op) && phaseOf(&op) == kBackward)
      work.push_back(&op);
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    if (!needed.insert(op).second)
      continue;
    for (Value v : op->getOperands())
      if (Operation *def = v.getDefiningOp();
          def && phaseOf(def) == kBackward)
        work.push_back(def);
  }
  // A chunk that sends no gradient back (the first) has no upstream stage
  // waiting on its B: deferring its backward would only idle it while it
  // waits for the next gradient and hold the microbatch's whole stash
  // until the deferred W. Its backward is all B, as under 1F1B.
  bool sendsBack = llvm::any_of(step.front(), [](Operation &op) {
    return isa<gr::SendOp>(op) && phaseOf(&op) == kBackward;
  });
  llvm::DenseSet<Operation *> weight;
  if (!sendsBack)
    return weight;
  for (Operation &op : step.front())
    if (phaseOf(&op) == kBackward && !needed.contains(&op))
      weight.insert(&op);
  return weight;
}

plan::Instruction &Emitter::append(Phase phase, const std::string &name) {
  std::vector<plan::Instruction> &segment = segments[segmentIndex(phase)];
  segment.emplace_back();
  plan::Instruction &inst = segment.back();
  inst.set_op(name);
  return inst;
}

/// The one update whose gradient `sum` is, directly or through one cast
/// (mixed precision widens the 16-bit gradient), or null.
static Operation *updateReadingSum(gr::AllReduceOp sum) {
  if (!sum->hasOneUse())
    return nullptr;
  OpOperand &use = *sum->getUses().begin();
  Operation *user = use.getOwner();
  if (isa<gr::CastOp>(user)) {
    if (!user->hasOneUse())
      return nullptr;
    OpOperand &widened = *user->getUses().begin();
    user = widened.getOwner();
    if (widened.getOperandNumber() != 1)
      return nullptr;
  } else if (use.getOperandNumber() != 1) {
    return nullptr;
  }
  return isa<gr::SgdUpdateOp, gr::AdamwUpdateOp>(user) ? user : nullptr;
}

bool Emitter::foldsIntoBuckets(gr::AllReduceOp sum) const {
  if (sum.getAxes().size() != 1 || sum.getReduction() != "sum")
    return false;
  // Two sums of a parameter's partial gradients over one axis: over "cp",
  // marked by autodiff (the parameter's copy into the context-parallel
  // group); over "tp", the partitioner's, where a replicated parameter
  // met activations split over the sequence (sequence parallelism's norms
  // and row-parallel biases: five small all-reduces a layer and microbatch
  // otherwise).
  StringRef axis = cast<StringAttr>(sum.getAxes()[0]).getValue();
  bool cp = axis == "cp" && ctx.knobs.cp > 1 &&
            sum->hasAttr("cleave.parameter_gradient");
  // Under ZeRO only the sum over "cp", into the reduce-scatter over
  // dp x cp of a parameter ZeRO splits (zeroReplicasOf).
  if (ctx.knobs.zero != 0 && !cp)
    return false;
  // Not yet with a separate weight-gradient pass (zero-bubble schedules):
  // a GPT at tp2 pp2 under ZB-H1 diverged at step 2 (relative 4.6e-5).
  if (!cp && (axis != "tp" || perChunk == 3))
    return false;
  // Only a gradient that goes straight to its update: added to another
  // contribution first, the partial sum would be mixed with whole ones.
  if (ctx.knobs.zero == 0)
    return !sum->use_empty() &&
           llvm::all_of(sum->getUses(), [](OpOperand &use) {
             return isa<gr::SgdUpdateOp, gr::AdamwUpdateOp>(use.getOwner()) &&
                    use.getOperandNumber() == 1;
           });
  // Under ZeRO, into the reduce-scatter over dp x cp of the parameter
  // (widened to fp32 first under mixed precision, as it is then reduced).
  Operation *update = updateReadingSum(sum);
  auto param =
      update ? update->getOperand(0).getDefiningOp<gr::ParamOp>() : nullptr;
  return param && gradientPartialOverCp(param) && zeroDimOf(param) >= 0;
}

LogicalResult Emitter::emitInstruction(Operation *op, Phase phase) {
  // A parameter's copy into a group (context parallelism: its gradient is
  // summed over the group) is the parameter itself in the forward pass:
  // the result names the parameter's tensor, and nothing is copied or
  // stashed (a copy would keep every weight a second time until the
  // backward pass reads it).
  if (auto copy = dyn_cast<gr::CopyToGroupOp>(op)) {
    auto it = ids.find(copy.getInput());
    if (it != ids.end() && program.tensors(it->second).kind() ==
                               plan::TensorDecl::PARAMETER) {
      ids[copy.getResult()] = it->second;
      return success();
    }
  }
  // A 16-bit parameter's cast to its type (ProgramContext::halfParameters) is
  // the parameter itself.
  if (auto castOp = dyn_cast<gr::CastOp>(op)) {
    auto it = ids.find(castOp.getInput());
    if (it != ids.end()) {
      const plan::TensorDecl &in = program.tensors(it->second);
      if (in.kind() == plan::TensorDecl::PARAMETER &&
          in.dtype() == dtypeOf(castOp.getType())) {
        ids[castOp.getResult()] = it->second;
        return success();
      }
    }
  }
  // A key/value cache is state that outlives the step, like a parameter:
  // graph.cache_write's result is the cache's own tensor, written in place
  // (the executor skips the copy when its output is its cache input).
  if (auto write = dyn_cast<gr::CacheWriteOp>(op)) {
    auto cache = ids.find(write.getCache());
    if (cache == ids.end() || program.tensors(cache->second).kind() !=
                                  plan::TensorDecl::PARAMETER)
      return op->emitOpError("writes a cache that is not a parameter of the "
                             "stage: it would not outlive the step");
    auto rows = ids.find(write.getRows()), slots = ids.find(write.getSlots());
    if (rows == ids.end() || slots == ids.end())
      return op->emitOpError("reads a value the lowering has not placed");
    plan::Instruction &inst = append(phase, instructionName(op));
    inst.add_inputs(rows->second);
    inst.add_inputs(cache->second);
    inst.add_inputs(slots->second);
    inst.add_outputs(cache->second);
    std::string loc;
    llvm::raw_string_ostream os(loc);
    op->getLoc().print(os);
    inst.set_location(loc);
    ids[write.getResult()] = cache->second;
    return success();
  }
  // A parameter's gradient summed over "cp" or "tp" in every microbatch:
  // without ZeRO the sum joins the step's bucketed reduction instead
  // (GradientLowering), so the backward pass passes the partial gradient
  // on.
  if (auto sum = dyn_cast<gr::AllReduceOp>(op);
      sum && foldsIntoBuckets(sum)) {
    auto it = ids.find(sum.getInput());
    if (it != ids.end()) {
      ids[sum.getResult()] = it->second;
      return success();
    }
  }
  plan::Instruction &inst = append(phase, instructionName(op));
  // Optional operands absent from a segment show as -1.
  SmallVector<int32_t> sizes;
  bool segmented = false;
  if (auto segs =
          dyn_cast_or_null<DenseI32ArrayAttr>(op->getInherentAttr(
                                                   "operandSegmentSizes")
                                                   .value_or(Attribute()))) {
    sizes.assign(segs.asArrayRef().begin(), segs.asArrayRef().end());
    segmented = true;
  } else {
    sizes.push_back(op->getNumOperands());
  }
  unsigned next = 0;
  for (int32_t size : sizes) {
    if (size == 0 && segmented) {
      inst.add_inputs(-1);
      continue;
    }
    for (int32_t k = 0; k < size; ++k) {
      Value v = op->getOperand(next++);
      auto it = ids.find(v);
      if (it == ids.end())
        return op->emitOpError("reads a value the lowering has not placed");
      inst.add_inputs(it->second);
    }
  }
  for (Value r : op->getResults()) {
    std::string name = "%" + std::to_string(program.tensors_size());
    inst.add_outputs(
        addTensor(r, name, plan::TensorDecl::TRANSIENT, r.getType()));
  }
  auto addAttrs = [&](DictionaryAttr dict) {
    for (NamedAttribute a : dict) {
      StringRef name = a.getName().getValue();
      if (name.starts_with("cleave.") || name == "operandSegmentSizes" ||
          name == "resultSegmentSizes")
        continue;
      plan::Attr value;
      if (toPlanAttr(a.getValue(), value))
        (*inst.mutable_attrs())[name.str()] = value;
    }
  };
  if (auto props = dyn_cast_or_null<DictionaryAttr>(op->getPropertiesAsAttribute()))
    addAttrs(props);
  addAttrs(op->getDiscardableAttrDictionary());
  if (isa<gr::ReduceScatterOp>(op))
    (*inst.mutable_attrs())["reduction"].set_s("sum");
  // Shown by `inspect --rank`; the runtime runs it like any other op.
  if (op->hasAttr("cleave.recomputed"))
    (*inst.mutable_attrs())["recomputed"].set_b(true);
  // A pipeline send returns at once; the runtime completes it before its
  // slot is written again or the step ends.
  if (isa<gr::SendOp>(op))
    (*inst.mutable_attrs())["buffered"].set_b(true);
  std::string loc;
  llvm::raw_string_ostream os(loc);
  op->getLoc().print(os);
  inst.set_location(loc);
  return success();
}

LogicalResult Emitter::buildSchedule() {
  bool interleaved = ctx.knobs.schedule == cost::ScheduleKind::Interleaved;
  if (interleaved != (numChunks() > 1))
    return step.emitOpError("the interleaved schedule runs several model "
                            "chunks per stage, the others one; this stage "
                            "has ")
           << numChunks();
  if (ctx.inference) {
    for (int64_t m = 0; m < ctx.microbatches; ++m) {
      plan::ScheduleStep *st = program.add_schedule();
      st->set_segment(kForward);
      st->set_microbatch(m);
    }
    return success();
  }
  auto order = cost::pipelineOrder(ctx.knobs.schedule, ctx.knobs.pp, ctx.stage,
                                   static_cast<int>(ctx.microbatches),
                                   numChunks());
  if (!order.ok())
    return step.emitOpError(std::string(order.status().message()));
  absl::StatusOr<cost::SendSlots> sends = cost::minimalSendSlots(
      ctx.knobs.schedule, ctx.knobs.pp, static_cast<int>(ctx.microbatches), numChunks());
  if (!sends.ok())
    return step.emitOpError(std::string(sends.status().message()));
  sendSlots = *std::move(sends);
  // The stage's peak of microbatches whose stash is held, from the
  // forward to the last pass that reads it (the backward, or with W split
  // off, the W): on unframed schedules (where microbatch m uses slot
  // m % slots), the slots of stashes and inputs.
  cost::PassKind last = perChunk == 3 ? cost::PassKind::WeightGrad
                                      : cost::PassKind::Backward;
  int64_t held = 0;
  slots = 1;
  for (const cost::PipelineSlot &s : *order) {
    held += s.pass == cost::PassKind::Forward ? 1 : s.pass == last ? -1 : 0;
    slots = std::max(slots, held);
  }
  // Interleaved: the chunks' in-flight microbatches peak at different
  // times, so their stashes share frames; zero-bubble: a W may run long
  // after later microbatches' forwards, so microbatch m cannot simply take
  // slot m % slots. A forward takes the lowest free frame and the last pass
  // reading its stash (the backward, or the W) gives it back.
  bool framed = numChunks() > 1 || perChunk == 3;
  // Two pools under zero-bubble: what only the forward and B read is freed
  // by the B, what the W reads (the weight GEMMs' inputs) by the W.
  struct Pool {
    std::map<std::pair<int, int>, int> frameOf;
    std::set<int> free;
    int64_t *count;
    int take() {
      if (free.empty())
        return static_cast<int>((*count)++);
      int f = *free.begin();
      free.erase(free.begin());
      return f;
    }
  };
  Pool stashPool{{}, {}, &numFrames}, weightPool{{}, {}, &numWeightFrames},
      gradientPool{{}, {}, &numGradientFrames};
  for (const cost::PipelineSlot &s : *order) {
    plan::ScheduleStep *st = program.add_schedule();
    bool forward = s.pass == cost::PassKind::Forward;
    bool weight = s.pass == cost::PassKind::WeightGrad;
    st->set_segment(segmentIndex(forward  ? kForward
                                 : weight ? kWeight
                                          : kBackward,
                                 s.chunk));
    st->set_microbatch(s.microbatch);
    if (!framed)
      continue;
    std::pair<int, int> key{s.chunk, s.microbatch};
    if (forward) {
      stashPool.frameOf[key] = stashPool.take();
      if (perChunk == 3)
        weightPool.frameOf[key] = weightPool.take();
    }
    if (!weight)
      if (auto it = stashPool.frameOf.find(key);
          it != stashPool.frameOf.end()) {
        st->set_slot(it->second);
        if (!forward) { // the backward ends the stash's life
          stashPool.free.insert(it->second);
          stashPool.frameOf.erase(it);
        }
      }
    if (perChunk == 3) {
      if (auto it = weightPool.frameOf.find(key);
          it != weightPool.frameOf.end()) {
        st->set_weight_slot(it->second);
        if (weight) {
          weightPool.free.insert(it->second);
          weightPool.frameOf.erase(it);
        }
      }
      if (!forward && !weight)
        gradientPool.frameOf[key] = gradientPool.take();
      if (auto it = gradientPool.frameOf.find(key);
          it != gradientPool.frameOf.end()) {
        st->set_gradient_slot(it->second);
        if (weight) {
          gradientPool.free.insert(it->second);
          gradientPool.frameOf.erase(it);
        }
      }
    }
  }

  plan::ScheduleStep *opt = program.add_schedule();
  opt->set_segment(segmentIndex(kOptimizer));
  opt->set_microbatch(-1);
  return success();
}

FailureOr<plan::Program> Emitter::run() {
  program.set_stage(ctx.stage);
  program.set_name("stage" + std::to_string(ctx.stage));
  if (failed(buildSchedule()))
    return failure();
  SmallVector<Operation *> updates;
  for (chunk = 0; chunk < numChunks(); ++chunk) {
    step = chunks[chunk];
    if (perChunk == 3)
      weightOps = weightGradientOps();
    func::ReturnOp ret;
    // Parameters first: the optimizer state built at the top of the block
    // refers to them.
    for (Operation &op : step.front())
      if (isa<gr::ParamOp>(op) && failed(declareSource(&op)))
        return failure();
    for (Operation &op : step.front()) {
      if (isa<gr::ParamOp>(op))
        continue;
      if (auto r = dyn_cast<func::ReturnOp>(op)) {
        ret = r;
        continue;
      }
      FailureOr<bool> source = declareSource(&op);
      if (failed(source))
        return failure();
      if (*source)
        continue;
      if (op.getNumRegions())
        return op.emitOpError("has regions; the lowering handles flat graphs");
      if (isa<gr::SgdUpdateOp, gr::AdamwUpdateOp>(op)) {
        updates.push_back(&op);
        continue;
      }
      Phase phase = phaseOf(&op);
      if (phase == kBackward && weightOps.contains(&op))
        phase = kWeight;
      if (failed(emitInstruction(&op, phase)))
        return failure();
    }
    // An inference plan's results are kept, one slot per microbatch.
    if (ctx.inference && ret) {
      for (Value v : ret.getOperands()) {
        int id = ids.lookup(v);
        if (program.tensors(id).kind() != plan::TensorDecl::TRANSIENT) {
          // A result the pass does not compute (a constant, an input or a
          // parameter returned as it is) is copied into its own slots.
          int out = addTensor(Value(), "%" + std::to_string(program.tensors_size()),
                              plan::TensorDecl::TRANSIENT, v.getType());
          plan::Instruction &copy = append(kForward, "runtime.copy");
          copy.add_inputs(id);
          copy.add_outputs(out);
          id = out;
        }
        program.mutable_tensors(id)->set_kind(plan::TensorDecl::STASH);
        program.add_output_tensors(id);
      }
    }
    // The loss (a result without an update tag) is read after each forward
    // run, so it keeps a slot.
    if (!ctx.inference && ret && ret.getNumOperands() > 0 &&
        !step.getResultAttr(0, "cleave.update") &&
        !step.getResultAttr(0, "cleave.grad")) {
      int id = ids.lookup(ret.getOperand(0));
      program.mutable_tensors(id)->set_kind(plan::TensorDecl::STASH);
      program.set_loss_tensor(id);
    }
  }
  chunk = numChunks() - 1;
  step = chunks.back();
  if (failed(emitOptimizer(updates)))
    return failure();
  // ZeRO's gathers and reduce-scatters inside the passes run beside their
  // compute (CollectiveOverlap.h).
  for (size_t s = 0; ctx.knobs.overlapGradReduce && s + 1 < segments.size(); ++s)
    overlapCollectives(segments[s], program, numAsyncHandles);
  // ZeRO-1/2's gathers of the updated blocks run beside the next step's
  // forward pass.
  if (ctx.knobs.overlapGradReduce)
    carryParameterGathers(segments, program, numAsyncHandles);
  for (std::vector<plan::Instruction> &segment : segments)
    joinEpilogues(segment);
  for (size_t s = 0; s < segments.size(); ++s) {
    plan::Segment *seg = program.add_segments();
    bool optimizer = s + 1 == segments.size();
    int c = chunkOfSegment(static_cast<int>(s));
    std::string suffix = numChunks() > 1 ? std::to_string(c) : "";
    if (optimizer) {
      seg->set_name("optimizer");
      seg->set_kind(plan::Segment::OPTIMIZER);
    } else if (s % perChunk == kForward) {
      seg->set_name("forward" + suffix);
      seg->set_kind(plan::Segment::FORWARD);
      seg->set_chunk(c);
    } else if (s % perChunk == kBackward) {
      seg->set_name("backward" + suffix);
      seg->set_kind(plan::Segment::BACKWARD);
      seg->set_chunk(c);
    } else {
      seg->set_name("weight_grad" + suffix);
      seg->set_kind(plan::Segment::WEIGHT_GRAD);
      seg->set_chunk(c);
    }
    for (plan::Instruction &inst : segments[s])
      *seg->add_instructions() = std::move(inst);
  }
  // Segments moved out; liveness reads them back from the program.
  for (size_t s = 0; s < segments.size(); ++s)
    segments[s].assign(program.segments(s).instructions().begin(),
                       program.segments(s).instructions().end());
  planMemory();
  return program;
}

} // namespace detail

std::string Replicas::joined() const {
  std::string out;
  for (const std::string &a : axes)
    out += (out.empty() ? "" : ",") + a;
  return out;
}

Replicas replicasOf(Operation *param, int64_t dp, int64_t ep) {
  bool expert = false;
  if (auto axes = param->getAttrOfType<ArrayAttr>("cleave.shard_axes"))
    for (Attribute a : axes)
    {
      SmallVector<StringRef> names;
      cast<StringAttr>(a).getValue().split(names, ',');
      expert |= llvm::is_contained(names, "ep");
    }
  Replicas r;
  r.axes.push_back("dp");
  r.count = dp;
  if (ep > 1) {
    if (expert)
      r.count = dp / ep;
    else
      r.axes.push_back("ep");
  }
  return r;
}

namespace detail {

bool Emitter::gradientPartialOverCp(gr::ParamOp param) const {
  if (ctx.knobs.cp <= 1)
    return false;
  for (Operation *user : param->getUsers()) {
    if (!isa<gr::SgdUpdateOp, gr::AdamwUpdateOp>(user) ||
        user->getOperand(0) != param.getResult())
      continue;
    Value grad = user->getOperand(1);
    if (auto widen = grad.getDefiningOp<gr::CastOp>())
      grad = widen.getInput();
    auto sum = grad.getDefiningOp<gr::AllReduceOp>();
    return sum && sum.getAxes().size() == 1 &&
           cast<StringAttr>(sum.getAxes()[0]).getValue() == "cp" &&
           sum.getReduction() == "sum" &&
           sum->hasAttr("cleave.parameter_gradient") &&
           updateReadingSum(sum) == user;
  }
  return false;
}

Replicas Emitter::zeroReplicas(gr::ParamOp param) const {
  return zeroReplicasOf(param, ctx.knobs.dp, ctx.knobs.ep,
                        ctx.knobs.zero >= 1 && gradientPartialOverCp(param)
                            ? ctx.knobs.cp
                            : 1);
}

} // namespace detail

Replicas replicasOf(Operation *param, const ProgramContext &context) {
  return replicasOf(param, context.knobs.dp, context.knobs.ep);
}

Replicas zeroReplicasOf(Operation *param, int64_t dp, int64_t ep,
                        int64_t cp) {
  Replicas r = replicasOf(param, dp, ep);
  if (cp > 1) {
    r.axes.push_back("cp");
    r.count *= cp;
  }
  return r;
}


FailureOr<plan::Program> emitProgram(ArrayRef<func::FuncOp> chunks,
                                     const ProgramContext &context,
                                     plan::Plan &plan) {
  return detail::Emitter(chunks, context, plan).run();
}

} // namespace cleave::lowering
