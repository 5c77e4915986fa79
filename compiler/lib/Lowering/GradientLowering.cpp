//===- GradientLowering.cpp - Gradients to the optimizer, per program -----===//
//
// Each microbatch's parameter gradients are accumulated into GRADIENT
// tensors; after the last one, the gradients of a tied parameter are summed
// between the stages holding it, then reduced over the data-parallel
// replicas (in buckets, or by ZeRO's reduce-scatter), and the optimizer
// updates the parameters and their state in place.
//
//===----------------------------------------------------------------------===//

#include "EmitterImpl.h"

using namespace mlir;
namespace gr = cleave::graph;

namespace cleave::lowering::detail {

namespace {

/// The bytes of gradients reduced as one collective (PyTorch DDP's
/// default bucket).
constexpr int64_t kBucketBytes = kOverlapWindowBytes;

/// The dimension ZeRO splits a tensor of `shape` along over `n` replicas:
/// the first that divides evenly (-1: none, the tensor stays whole).
int64_t zeroDim(llvm::ArrayRef<int64_t> shape, int64_t n) {
  for (auto [d, size] : llvm::enumerate(shape))
    if (size >= n && size % n == 0)
      return d;
  return -1;
}

plan::Instruction collectiveInstruction(const char *name, int input,
                                        int output, int64_t dim,
                                        const Replicas &replicas) {
  plan::Instruction i;
  i.set_op(name);
  i.add_inputs(input);
  i.add_outputs(output);
  for (const std::string &axis : replicas.axes)
    (*i.mutable_attrs())["axes"].mutable_strings()->add_values(axis);
  if (dim >= 0)
    (*i.mutable_attrs())["dim"].set_i(dim);
  return i;
}

} // namespace

void Emitter::shardOverReplicas(plan::TensorDecl &t, int64_t dim,
                                const Replicas &replicas) {
  t.set_shape(dim, t.shape(dim) / replicas.count);
  t.set_bytes(t.bytes() / replicas.count);
  for (const std::string &axis : replicas.axes)
    t.mutable_dims(dim)->add_axes(axis);
}

plan::Instruction &Emitter::collective(const char *name, int input, int output,
                                       int64_t dim, const Replicas &replicas) {
  segments.back().push_back(
      collectiveInstruction(name, input, output, dim, replicas));
  return segments.back().back();
}

/// Tags of the tied-gradient exchanges: above any microbatch's activation
/// tag, one per tied parameter.
constexpr int64_t kTiedGradientTag = int64_t(1) << 20;

void Emitter::exchangeTiedGradients(
    ArrayRef<std::pair<Operation *, int>> gradTensors) {
  // Each stage walks the tied parameters in one order (by name) and gives
  // each its own tag, so that no stage waits on one parameter while its
  // peer sends another (blocking sends would deadlock; one tag for all
  // would pair the wrong messages).
  std::map<std::string, std::pair<gr::ParamOp, int>> held;
  for (auto [update, g] : gradTensors) {
    auto param = cast<gr::ParamOp>(update->getOperand(0).getDefiningOp());
    held[param.getName().str()] = {param, g};
  }
  int64_t index = 0;
  for (const auto &[name, stages] : ctx.paramStages) {
    std::vector<int> holders(stages.begin(), stages.end());
    llvm::sort(holders);
    holders.erase(std::unique(holders.begin(), holders.end()), holders.end());
    if (holders.size() < 2)
      continue;
    int64_t tag = kTiedGradientTag + index++;
    auto it = held.find(name);
    if (it != held.end())
      exchangeTiedGradient(it->second.first, it->second.second, holders, tag);
  }
}

void Emitter::exchangeTiedGradient(gr::ParamOp param, int g,
                                   ArrayRef<int> holders, int64_t tag) {
  // A parameter used on several stages (a tied embedding, an initializer
  // the exporter shared between layers) sums the gradients of exactly the
  // stages that hold it. Every pair exchanges its own stage's gradient,
  // pairs in ascending order (the lower stage sends first, the higher
  // receives first: no cycle of blocking sends), then every holder adds
  // the gradients in stage order, so all hold the same bits.
  std::map<int, int> gradientOf;
  gradientOf[ctx.stage] = g;
  for (int other : holders) {
    if (other == ctx.stage)
      continue;
    int peer = addTensor(Value(),
                         param.getName().str() + ".grad_of_stage" +
                             std::to_string(other),
                         plan::TensorDecl::TRANSIENT, param.getType());
    gradientOf[other] = peer;
    auto p2p = [&](const char *name, int tensor, bool out) {
      plan::Instruction &i = append(kOptimizer, name);
      if (out)
        i.add_outputs(tensor);
      else
        i.add_inputs(tensor);
      (*i.mutable_attrs())["axis"].set_s("pp");
      (*i.mutable_attrs())["offset"].set_i(other - ctx.stage);
      (*i.mutable_attrs())["tag"].set_i(tag);
    };
    if (ctx.stage < other) {
      p2p("comm.send", g, false);
      p2p("comm.recv", peer, true);
    } else {
      p2p("comm.recv", peer, true);
      p2p("comm.send", g, false);
    }
  }
  int sum = gradientOf[holders.front()];
  for (int h : holders.drop_front()) {
    plan::Instruction &acc = append(kOptimizer, "runtime.accumulate");
    acc.add_inputs(gradientOf[h]);
    acc.add_outputs(sum);
  }
  if (sum != g) {
    plan::Instruction &copy = append(kOptimizer, "runtime.copy");
    copy.add_inputs(sum);
    copy.add_outputs(g);
  }
}

void Emitter::emitGradientBuckets(ArrayRef<int> grads,
                                  const Replicas &replicas) {
  // Replicas sum their gradients (the loss scale divided by their count
  // already). Gradients are laid out one after another in the arena, so
  // runs of them up to kBucketBytes are reduced as one tensor that views
  // their bytes (and the alignment padding between them), as PyTorch DDP
  // buckets them: one collective instead of one per parameter.
  size_t begin = 0;
  while (begin < grads.size()) {
    size_t end = begin;
    int64_t bytes = 0;
    while (end < grads.size() &&
           (end == begin || bytes + program.tensors(grads[end]).bytes() <=
                                kBucketBytes) &&
           (end == begin || grads[end] == grads[end - 1] + 1)) {
      bytes += program.tensors(grads[end]).bytes();
      ++end;
    }
    int first = grads[begin], last = grads[end - 1];
    int bucket = first;
    if (end - begin > 1) {
      bucket = addTensor(Value(), "grad_bucket" + std::to_string(numBuckets++),
                         plan::TensorDecl::GRADIENT,
                         RankedTensorType::get(
                             {1}, Float32Type::get(step.getContext())));
      bucketOf[bucket] = {first, last};
      // It starts at the first gradient's parameter (for the validator and
      // readers: a bucket's name says what it is).
      program.mutable_tensors(bucket)->set_param_index(
          program.tensors(first).param_index());
    }
    plan::Instruction ar;
    ar.set_op("comm.all_reduce");
    ar.add_inputs(bucket);
    ar.add_outputs(bucket);
    for (const std::string &axis : replicas.axes)
      (*ar.mutable_attrs())["axes"].mutable_strings()->add_values(axis);
    (*ar.mutable_attrs())["reduction"].set_s("sum");
    // Overlap with the backward pass (PyTorch DDP's and Megatron's
    // bucketed reduction): start the bucket's all-reduce as soon as the
    // last microbatch's backward has written all its gradients, and wait
    // for it before the optimizer. A tied gradient is summed between the
    // stages first, in the optimizer segment, so its bucket waits there.
    SmallVector<int> members;
    for (int g = first; g <= last; ++g)
      members.push_back(g);
    bool tied =
        llvm::any_of(members, [&](int g) { return tiedGradients.count(g); });
    if (tied || !ctx.knobs.overlapGradReduce || failed(placeInBackward(ar, members)))
      segments.back().push_back(std::move(ar));
    begin = end;
  }
}

LogicalResult Emitter::placeInBackward(const plan::Instruction &collective,
                                       ArrayRef<int> written) {
  plan::Instruction inst = collective;
  // The segment among those writing the tensors whose last run comes last
  // in the schedule, after its last write of them.
  std::vector<int> lastRun(segments.size(), -1);
  for (auto [i, st] : llvm::enumerate(program.schedule()))
    lastRun[st.segment()] = static_cast<int>(i);
  int seg = -1;
  size_t at = 0;
  for (size_t s = 0; s + 1 < segments.size(); ++s) {
    if (s % perChunk == kForward)
      continue;
    for (auto [i, other] : llvm::enumerate(segments[s]))
      for (int out : other.outputs())
        if (llvm::is_contained(written, out)) {
          if (seg < 0 || lastRun[s] > lastRun[seg]) {
            seg = static_cast<int>(s);
            at = i + 1;
          } else if (static_cast<int>(s) == seg) {
            at = std::max(at, i + 1);
          }
        }
  }
  if (seg < 0 || lastRun[seg] < 0)
    return failure();
  int handle = numAsyncHandles++;
  inst.set_async_handle(handle);
  (*inst.mutable_attrs())["last_microbatch"].set_b(true);
  segments[seg].insert(segments[seg].begin() + at, std::move(inst));
  plan::Instruction wait;
  wait.set_op("comm.wait");
  (*wait.mutable_attrs())["handle"].set_i(handle);
  pendingWaits.push_back(std::move(wait));
  return success();
}

int64_t Emitter::zeroDimOf(gr::ParamOp param) const {
  // A ZeRO-3 parameter is already a shard whose gradient the backward
  // pass reduce-scattered (the all-gather's gradient).
  int64_t n = zeroReplicas(param).count;
  if (ctx.knobs.zero < 1 || n <= 1 || param->hasAttr("cleave.zero_sharded"))
    return -1;
  return zeroDim(cast<RankedTensorType>(param.getType()).getShape(), n);
}

Type Emitter::halfTypeOf(gr::ParamOp param) const {
  // A key/value cache read only through a cast to 16 bits into its
  // graph.cache_write (mixed precision's activations) is stored in 16 bits:
  // the cast is the cache itself, written in place.
  if (!param.isTrainable() && !param->use_empty() &&
      llvm::all_of(param->getUses(), [](OpOperand &use) {
        auto castOp = dyn_cast<gr::CastOp>(use.getOwner());
        return castOp && castOp->hasOneUse() &&
               isa<gr::CacheWriteOp>(*castOp->user_begin()) &&
               castOp->use_begin()->getOperandNumber() == 1;
      })) {
    Type element = cast<RankedTensorType>(
                       (*param->user_begin())->getResult(0).getType())
                       .getElementType();
    if (element.isBF16() || element.isF16())
      return element;
  }
  if (!cast<RankedTensorType>(param.getType()).getElementType().isF32())
    return Type();
  // An inference plan (nothing updates the weights) in 16-bit precision:
  // a weight read only through casts to one 16-bit type is stored in it,
  // with no fp32 copy beside it, as the serving cost model prices it (a
  // Llama 3 70B replica at tp=8 held 33 GiB of fp32 weights a device).
  if (ctx.inference) {
    Type half;
    bool onlyCasts =
        !param->use_empty() &&
        llvm::all_of(param->getUses(), [&](OpOperand &use) {
          auto castOp = dyn_cast<gr::CastOp>(use.getOwner());
          if (!castOp)
            return false;
          Type element =
              cast<RankedTensorType>(castOp.getType()).getElementType();
          if ((!element.isBF16() && !element.isF16()) ||
              (half && half != element))
            return false;
          half = element;
          return true;
        });
    return onlyCasts ? half : Type();
  }
  if (!ctx.halfParameters || zeroDimOf(param) < 0)
    return Type();
  // A tied parameter's copies are exchanged between stages in fp32.
  auto holders = ctx.paramStages.find(param.getName().str());
  if (holders != ctx.paramStages.end() && holders->second.size() > 1)
    return Type();
  Type half;
  bool onlyHalfCasts = llvm::all_of(param->getUses(), [&](OpOperand &use) {
    Operation *user = use.getOwner();
    if (isa<gr::SgdUpdateOp, gr::AdamwUpdateOp>(user))
      return use.getOperandNumber() == 0;
    auto castOp = dyn_cast<gr::CastOp>(user);
    if (!castOp)
      return false;
    Type element = cast<RankedTensorType>(castOp.getType()).getElementType();
    if (!element.isBF16() && !element.isF16())
      return false;
    if (half && half != element)
      return false;
    half = element;
    return true;
  });
  return onlyHalfCasts ? half : Type();
}

LogicalResult Emitter::emitOptimizer(ArrayRef<Operation *> updates) {
  // The dimension ZeRO splits each parameter's update along (-1: the
  // update is not split).
  SmallVector<int64_t> zeroDims;
  for (Operation *update : updates)
    zeroDims.push_back(
        zeroDimOf(cast<gr::ParamOp>(update->getOperand(0).getDefiningOp())));

  // Gradients: each microbatch's is accumulated into the GRADIENT tensor
  // right after the backward pass writes it, so that it dies there rather
  // than at the end of the segment (a whole stage's gradients would
  // otherwise be live at once). ZeRO-2 keeps only this replica's block of
  // the accumulated gradient: each microbatch's gradient is reduce-
  // scattered over the replicas first (DeepSpeed does the same under
  // gradient accumulation), trading (microbatches - 1) more reduce-
  // scatters for gradient memory / dp. Those reduce-scatters run beside
  // the rest of the backward pass (overlapCollectives, CollectiveOverlap.h).
  std::vector<std::pair<Operation *, int>> gradTensors;
  llvm::DenseMap<int, SmallVector<plan::Instruction>> afterWriterOf;
  SmallVector<bool> gradSharded;
  for (auto [update, dim] : llvm::zip(updates, zeroDims)) {
    auto paramOp = cast<gr::ParamOp>(update->getOperand(0).getDefiningOp());
    Value param = update->getOperand(0), grad = update->getOperand(1);
    int paramId = ids.lookup(param);
    const plan::TensorDecl &p = program.tensors(paramId);
    int g = addTensor(Value(), p.name() + ".grad", plan::TensorDecl::GRADIENT,
                      param.getType());
    setParamDims(*program.mutable_tensors(g), p.param_index());
    gradTensors.push_back({update, g});
    auto holders = ctx.paramStages.find(paramOp.getName().str());
    bool tied = holders != ctx.paramStages.end() && holders->second.size() > 1;
    bool shardGrad = ctx.knobs.zero == 2 && dim >= 0 && !tied;
    gradSharded.push_back(shardGrad);
    Replicas replicas = zeroReplicas(paramOp);
    if (shardGrad)
      shardOverReplicas(*program.mutable_tensors(g), dim, replicas);
    // A parameter the loss does not reach has a zero gradient: nothing to
    // accumulate.
    if (grad.getDefiningOp<gr::ConstantOp>())
      continue;
    auto it = ids.find(grad);
    if (it == ids.end())
      return update->emitOpError("gradient is not computed by the backward "
                                 "pass");
    SmallVector<plan::Instruction> &pending = afterWriterOf[it->second];
    int from = it->second;
    if (shardGrad) {
      const plan::TensorDecl &gd = program.tensors(g);
      SmallVector<int64_t> shape(gd.shape().begin(), gd.shape().end());
      int block = addTensor(
          Value(), paramOp.getName().str() + ".grad_block",
          plan::TensorDecl::TRANSIENT,
          cast<RankedTensorType>(param.getType()).clone(shape));
      plan::Instruction rs = collectiveInstruction(
          "comm.reduce_scatter", from, block, dim, replicas);
      (*rs.mutable_attrs())["reduction"].set_s("sum");
      pending.push_back(std::move(rs));
      from = block;
    }
    plan::Instruction acc;
    acc.set_op("runtime.accumulate");
    acc.add_inputs(from);
    acc.add_outputs(g);
    pending.push_back(std::move(acc));
  }
  // The backward segment (of its model chunk) and the instruction that
  // writes each gradient last; one that none writes goes at the end of
  // the last chunk's backward.
  llvm::DenseMap<int, std::pair<int, size_t>> lastWriter;
  std::map<int, std::vector<std::vector<plan::Instruction>>> inserted;
  for (int c = 0; c < numChunks(); ++c)
    for (Phase phase : {kBackward, kWeight}) {
      if (phase == kWeight && perChunk < 3)
        continue;
      int seg = segmentIndex(phase, c);
      for (auto [i, inst] : llvm::enumerate(segments[seg]))
        for (int out : inst.outputs())
          lastWriter[out] = {seg, i};
      inserted[seg].resize(segments[seg].size() + 1);
    }
  for (auto &[gradId, pending] : afterWriterOf) {
    int last = segmentIndex(perChunk == 3 ? kWeight : kBackward,
                            numChunks() - 1);
    auto [seg, at] = lastWriter.lookup_or(
        gradId, std::make_pair(last, segments[last].size()));
    for (plan::Instruction &inst : pending)
      inserted[seg][at].push_back(std::move(inst));
  }
  for (auto &[seg, after] : inserted) {
    std::vector<plan::Instruction> &backward = segments[seg], merged;
    for (size_t i = 0; i <= backward.size(); ++i) {
      if (i < backward.size())
        merged.push_back(std::move(backward[i]));
      for (plan::Instruction &inst : after[i])
        merged.push_back(std::move(inst));
    }
    backward = std::move(merged);
  }

  // Tied gradients are summed between stages and all-reduced over the
  // replicas before any update reads them.
  // Buckets by the replicas that share the parameters (expert weights are
  // reduced over fewer of them).
  std::map<std::string, std::pair<Replicas, SmallVector<int>>> bucketed;
  exchangeTiedGradients(gradTensors);
  for (auto [entry, dim] : llvm::zip(gradTensors, zeroDims)) {
    auto [update, g] = entry;
    auto param = cast<gr::ParamOp>(update->getOperand(0).getDefiningOp());
    Replicas replicas = replicasOf(param, ctx);
    // A gradient the backward pass left partial over "cp" or "tp" is
    // summed over those ranks in the same bucket.
    auto sum = update->getOperand(1).getDefiningOp<gr::AllReduceOp>();
    if (sum && foldsIntoBuckets(sum)) {
      replicas.axes.push_back(
          cast<StringAttr>(sum.getAxes()[0]).getValue().str());
      replicas.count *= sum.getGroupSize();
    }
    if (replicas.count > 1 && !param->hasAttr("cleave.zero_sharded") &&
        dim < 0) {
      auto &bucket = bucketed[replicas.joined()];
      bucket.first = replicas;
      bucket.second.push_back(g);
    }
  }
  for (auto &[update, g] : gradTensors) {
    auto paramOp = cast<gr::ParamOp>(update->getOperand(0).getDefiningOp());
    auto holders = ctx.paramStages.find(paramOp.getName().str());
    if (holders != ctx.paramStages.end() && holders->second.size() > 1)
      tiedGradients.insert(g);
  }
  for (auto &[key, bucket] : bucketed)
    emitGradientBuckets(bucket.second, bucket.first);
  // ZeRO-1: each accumulated gradient is reduce-scattered into the block
  // this replica updates as soon as the last microbatch's backward pass
  // has written it, beside the rest of that pass (Megatron's distributed
  // optimizer and DeepSpeed overlap it so). The block outlives the
  // backward segment, so it is a GRADIENT tensor of 1/dp of the gradient;
  // a tied gradient is summed between its stages first, in the optimizer
  // segment, and is reduce-scattered there.
  SmallVector<int> gradShards(gradTensors.size(), -1);
  for (auto [i, entry] : llvm::enumerate(gradTensors)) {
    auto [update, g] = entry;
    int64_t dim = zeroDims[i];
    if (dim < 0 || gradSharded[i])
      continue;
    auto param = cast<gr::ParamOp>(update->getOperand(0).getDefiningOp());
    Replicas replicas = zeroReplicas(param);
    int shard = addTensor(Value(), param.getName().str() + ".grad_shard",
                          plan::TensorDecl::GRADIENT, param.getType());
    plan::TensorDecl &decl = *program.mutable_tensors(shard);
    setParamDims(decl, program.tensors(g).param_index());
    shardOverReplicas(decl, dim, replicas);
    gradShards[i] = shard;
    plan::Instruction rs =
        collectiveInstruction("comm.reduce_scatter", g, shard, dim, replicas);
    (*rs.mutable_attrs())["reduction"].set_s("sum");
    if (tiedGradients.count(g) || !ctx.knobs.overlapGradReduce ||
        failed(placeInBackward(rs, {g})))
      segments.back().push_back(std::move(rs));
  }
  // The overlapped reductions complete before any update reads them.
  segments.back().insert(segments.back().begin(), pendingWaits.begin(),
                         pendingWaits.end());
  int overflowFlag = ctx.scaledLoss ? unscaleGradients(gradTensors, zeroDims,
                                                       gradSharded, gradShards)
                                    : -1;
  for (auto [i, entry] : llvm::enumerate(gradTensors)) {
    auto [update, g] = entry;
    auto param = cast<gr::ParamOp>(update->getOperand(0).getDefiningOp());
    int paramId = ids.lookup(param);
    int64_t dim = zeroDims[i];
    Replicas replicas =
        dim >= 0 ? zeroReplicas(param) : replicasOf(param, ctx);
    SmallVector<int> states;
    for (unsigned k = 2; k < update->getNumOperands(); ++k)
      if (update->getOperand(k).getDefiningOp<gr::OptimizerStateOp>())
        states.push_back(ids.lookup(update->getOperand(k)));
    int paramIn = paramId, gradIn = g;
    // This replica's block of the parameter, kept with the optimizer
    // state as `state`.
    auto replicaBlock = [&](const char *state, Type type) {
      int id = addTensor(Value(), param.getName().str() + "." + state,
                         plan::TensorDecl::OPTIMIZER_STATE, type);
      plan::TensorDecl &block = *program.mutable_tensors(id);
      setParamDims(block, program.tensors(paramId).param_index());
      block.set_state(state);
      shardOverReplicas(block, dim, replicas);
      return id;
    };
    if (dim >= 0) {
      // ZeRO-1/2: each replica reduces, updates and keeps the optimizer
      // state of one block of the parameter, then the blocks are gathered.
      plan.mutable_parameters(program.tensors(paramId).param_index())
          ->set_zero_axis(replicas.joined());
      for (int s : states)
        shardOverReplicas(*program.mutable_tensors(s), dim, replicas);
      if (!gradSharded[i])
        gradIn = gradShards[i];
      plan::DType paramDtype = program.tensors(paramId).dtype();
      if (paramDtype == plan::BF16 || paramDtype == plan::F16) {
        // The fp32 master weights of this replica's block: the update's
        // parameter, kept and checkpointed with the optimizer state (the
        // runtime fills it from the parameter's initial values; it is
        // never sliced from the 16-bit parameter, which would round it).
        paramIn = replicaBlock("master", param.getType());
      } else {
        // The updated block outlives the step: its gather runs beside the
        // next step's forward pass (carryParameterGathers,
        // CollectiveOverlap.h), so the block is kept with the optimizer
        // state. Sliced from the gathered parameter every step, it needs
        // no initial value of its own.
        paramIn = replicaBlock("shard", param.getType());
        collective("comm.shard_slice", paramId, paramIn, dim, replicas);
      }
    }

    // The update runs in place: its results alias the parameter (block)
    // and state tensors.
    plan::Instruction &inst = append(kOptimizer, instructionName(update));
    if (overflowFlag >= 0)
      inst.set_unless(overflowFlag);
    inst.add_inputs(paramIn);
    inst.add_inputs(gradIn);
    for (unsigned k = 2; k < update->getNumOperands(); ++k)
      inst.add_inputs(ids.lookup(update->getOperand(k)));
    inst.add_outputs(paramIn);
    for (int s : states)
      inst.add_outputs(s);
    if (auto props = dyn_cast_or_null<DictionaryAttr>(
            update->getPropertiesAsAttribute()))
      for (NamedAttribute a : props) {
        plan::Attr value;
        if (toPlanAttr(a.getValue(), value))
          (*inst.mutable_attrs())[a.getName().str()] = value;
      }
    if (Type half = halfTypeOf(param); dim >= 0 && half) {
      // The updated master block rounded to 16 bits, which the gather
      // (carried into the next step's forward pass) reads: kept like
      // ZeRO's fp32 ".shard" block, at half its bytes.
      auto type = cast<RankedTensorType>(param.getType());
      int block = replicaBlock("shard", type.clone(half));
      plan::Instruction &narrow = append(kOptimizer, "graph.cast");
      narrow.add_inputs(paramIn);
      narrow.add_outputs(block);
      collective("comm.all_gather", block, paramId, dim, replicas);
    } else if (dim >= 0) {
      collective("comm.all_gather", paramIn, paramId, dim, replicas);
    }
  }
  return success();
}

int Emitter::unscaleGradients(
    ArrayRef<std::pair<Operation *, int>> gradTensors,
    ArrayRef<int64_t> zeroDims, ArrayRef<bool> gradSharded,
    ArrayRef<int> gradShards) {
  Builder b(step.getContext());
  auto scalar = RankedTensorType::get({}, b.getF32Type());
  // The scale: the loss seed's input on the last stage, the same input
  // declared here on the others.
  int scale = -1;
  for (const plan::TensorDecl &t : program.tensors())
    if (t.kind() == plan::TensorDecl::INPUT && t.input_name() == "loss_scale")
      scale = t.id();
  if (scale < 0) {
    scale = addTensor(Value(), "loss_scale", plan::TensorDecl::INPUT, scalar);
    program.mutable_tensors(scale)->set_input_name("loss_scale");
  }
  int flag = addTensor(Value(), "overflow", plan::TensorDecl::TRANSIENT,
                       scalar);
  // What each update reads: the reduced gradient, or this replica's block
  // of it under ZeRO (the same choice as the update loop below).
  plan::Instruction &unscale = append(kOptimizer, "runtime.unscale");
  unscale.add_inputs(scale);
  unscale.add_outputs(flag);
  llvm::SmallDenseSet<int> seen;
  for (auto [i, entry] : llvm::enumerate(gradTensors)) {
    int grad = entry.second;
    if (zeroDims[i] >= 0 && !gradSharded[i])
      grad = gradShards[i];
    if (!seen.insert(grad).second)
      continue;
    unscale.add_inputs(grad);
    unscale.add_outputs(grad);
  }
  // Every rank skips or applies its updates together: the flag's maximum
  // over the whole mesh (each rank checked only the gradients it holds).
  Replicas world;
  for (const plan::MeshAxis &axis : plan.mesh().axes()) {
    world.axes.push_back(axis.name());
    world.count *= axis.size();
  }
  plan::Instruction &any =
      collective("comm.all_reduce", flag, flag, /*dim=*/-1, world);
  (*any.mutable_attrs())["reduction"].set_s("max");
  return flag;
}

} // namespace cleave::lowering::detail
