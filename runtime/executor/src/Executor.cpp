//===- Executor.cpp - Run a rank's program of a plan ----------------------===//

#include "cleave/runtime/executor/Executor.h"

#include "cleave/runtime/comm/Bfloat16.h"
#include "cleave/runtime/comm/Float16.h"
#include "cleave/runtime/plan/PlanIO.h"

#include "Widening.h"

#include "absl/strings/str_cat.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace cleave::executor {

namespace {

using plan::TensorDecl;

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool slotted(const TensorDecl &t) {
  return t.kind() == TensorDecl::STASH || t.kind() == TensorDecl::COMM_BUFFER ||
         t.kind() == TensorDecl::INPUT;
}

int64_t numElements(const TensorDecl &t) {
  int64_t n = 1;
  for (int64_t d : t.shape())
    n *= d;
  return n;
}

constexpr int64_t kArenaAlignment = 64;

} // namespace

Executor::Executor(const plan::Plan &plan, int rank, comm::Communicator &comm,
                   ExecutorOptions options)
    : plan_(plan), rank_(rank), comm_(comm), options_(std::move(options)) {
  backend_ = options_.backend;
  if (!backend_) {
    ownedBackend_ = createCpuBackend();
    backend_ = ownedBackend_.get();
  }
  widening_ = std::make_unique<Widening>(*backend_);
}

Executor::~Executor() {
  // Nothing may still read or write the memory freed below.
  pending_.clear();
  deferred_.clear();
  try {
    backend_->synchronize();
  } catch (const std::exception &) {
  }
  widening_.reset();
  if (arena_)
    backend_->deallocate(arena_);
  if (scratch_)
    backend_->deallocate(scratch_);
  if (lossStaging_)
    backend_->freeHost(lossStaging_);
  for (void *staging : inputStaging_)
    if (staging)
      backend_->freeHost(staging);
}

absl::StatusOr<std::unique_ptr<Executor>>
Executor::create(const plan::Plan &plan, int rank, comm::Communicator &comm,
                 ExecutorOptions options) {
  if (rank < 0 || rank >= plan.ranks_size())
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", rank, " is not in the plan's ", plan.ranks_size(),
                     " ranks"));
  std::unique_ptr<Executor> executor(
      new Executor(plan, rank, comm, std::move(options)));
  if (absl::Status s = executor->prepare(); !s.ok())
    return s;
  if (absl::Status s = executor->initialize(); !s.ok())
    return s;
  plan::Plan &kept = executor->plan_;
  for (plan::ParameterSharding &param : *kept.mutable_parameters())
    param.clear_initial_value();
  kept.clear_partitioned_mlir();
  kept.clear_simulated_trace();
  return executor;
}

absl::Status Executor::prepare() {
  int programIndex = plan_.ranks(rank_).program();
  if (programIndex < 0 || programIndex >= plan_.programs_size())
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", rank_, " runs program ", programIndex, " of ",
                     plan_.programs_size()));
  program_ = &plan_.programs(programIndex);
  seed_ = options_.seed ? *options_.seed : plan_.training().seed();
  absl::StatusOr<DataSource> data =
      DataSource::create(plan_, comm_.mesh(), seed_, options_.dataPath,
                         options_.inputFiles, options_.paddedMasks);
  if (!data.ok())
    return data.status();
  data_ = std::make_unique<DataSource>(*std::move(data));

  if (scalesLoss()) {
    const plan::LossScaling &ls = plan_.training().loss_scaling();
    bool dynamic = ls.mode() == plan::LossScaling::DYNAMIC;
    std::string bad;
    if (!(ls.initial_scale() > 0 && std::isfinite(ls.initial_scale())))
      bad = absl::StrCat("initial_scale ", ls.initial_scale(),
                         " (a finite number above 0 expected)");
    else if (dynamic && !(ls.growth_factor() >= 1))
      bad = absl::StrCat("growth_factor ", ls.growth_factor(), " (1 or more)");
    else if (dynamic && !(ls.backoff_factor() > 0 && ls.backoff_factor() <= 1))
      bad = absl::StrCat("backoff_factor ", ls.backoff_factor(),
                         " (above 0, at most 1)");
    else if (dynamic && ls.growth_interval() < 1)
      bad = absl::StrCat("growth_interval ", ls.growth_interval(),
                         " (1 or more)");
    else if (dynamic && !(ls.min_scale() > 0))
      bad = absl::StrCat("min_scale ", ls.min_scale(), " (above 0)");
    if (!bad.empty())
      return absl::InvalidArgumentError(
          absl::StrCat("the plan's loss scaling has ", bad));
    lossScale_.scale = ls.initial_scale();
  }

  const plan::Program &p = *program_;
  auto where = [&](const TensorDecl &t) {
    return absl::StrCat("rank ", rank_, ", program ", p.id(), " (", p.name(),
                        "): tensor ", t.id(), " '", t.name(), "'");
  };
  for (const TensorDecl &t : p.tensors()) {
    int64_t elementBytes = plan::dtypeBytes(t.dtype());
    int64_t slots = slotted(t) ? std::max(1, t.slots()) : 1;
    if (numElements(t) * elementBytes > t.bytes())
      return absl::InvalidArgumentError(absl::StrCat(
          where(t), " needs ", numElements(t) * elementBytes,
          " bytes but has ", t.bytes()));
    if (t.offset() % elementBytes != 0 || t.slot_stride() % elementBytes != 0)
      return absl::InvalidArgumentError(
          absl::StrCat(where(t), " is not aligned to its element size"));
    if (t.offset() < 0 ||
        t.offset() + (slots - 1) * t.slot_stride() +
                (t.fused_away() ? 0 : t.bytes()) >
            p.arena_bytes())
      return absl::InvalidArgumentError(absl::StrCat(
          where(t), " lies outside the arena of ", p.arena_bytes(), " bytes"));
  }
  for (int s = 0; s < p.segments_size(); ++s) {
    const plan::Segment &segment = p.segments(s);
    firstKernel_.push_back(kernels_.size());
    bool writes = false;
    for (int i = 0; i < segment.instructions_size(); ++i) {
      const plan::Instruction &inst = segment.instructions(i);
      KernelFn fn = backend_->findKernel(inst.op());
      if (!fn)
        return instructionError(
            s, i,
            absl::StrCat("no kernel runs this op on the ", backend_->name(),
                         " backend"));
      for (int32_t id : inst.inputs())
        if (id < -1 || id >= p.tensors_size())
          return instructionError(s, i, absl::StrCat("input ", id,
                                                     " is not a tensor"));
      if (inst.has_unless() &&
          (inst.unless() < 0 || inst.unless() >= p.tensors_size() ||
           p.tensors(inst.unless()).dtype() != plan::F32 ||
           numElements(p.tensors(inst.unless())) != 1))
        return instructionError(
            s, i, absl::StrCat("unless ", inst.unless(),
                               " is not an f32 scalar tensor"));
      for (int32_t id : inst.outputs()) {
        if (id < -1 || id >= p.tensors_size())
          return instructionError(s, i, absl::StrCat("output ", id,
                                                      " is not a tensor"));
        if (p.has_loss_tensor() && id == p.loss_tensor())
          writes = true;
      }
      kernels_.push_back(fn);
    }
    writesLoss_.push_back(writes);
  }
  lastRunMicrobatch_.assign(p.segments_size(), -1);
  firstRunMicrobatch_.assign(p.segments_size(), -1);
  for (const plan::ScheduleStep &step : p.schedule())
    if (step.segment() >= 0 && step.segment() < p.segments_size()) {
      lastRunMicrobatch_[step.segment()] = step.microbatch();
      if (firstRunMicrobatch_[step.segment()] < 0)
        firstRunMicrobatch_[step.segment()] = step.microbatch();
    }
  for (const plan::Segment &segment : p.segments())
    for (const plan::Instruction &inst : segment.instructions())
      if (auto carried = inst.attrs().find("carried");
          carried != inst.attrs().end() && carried->second.b() &&
          inst.has_async_handle() && inst.async_handle() >= 0)
        carriedHandles_.insert(inst.async_handle());
  fusedAt_.assign(kernels_.size(), -1);
  // --no-fuse runs every instruction alone, but for the groups whose
  // intermediate the plan fused away (it has no memory to run op by op).
  auto dropsFusedAway = [&](const FusedGroup &g) {
    return std::any_of(g.dropped.begin(), g.dropped.end(), [&](int32_t id) {
      return id >= 0 && id < p.tensors_size() && p.tensors(id).fused_away();
    });
  };
  std::vector<bool> dropped(p.tensors_size(), false);
  for (int s = 0; s < p.segments_size(); ++s) {
    auto accepts = [&](const FusedGroup &g, const plan::Segment &seg) {
      return (options_.fuse || dropsFusedAway(g)) &&
             backend_->fusedKernel(g.kind) && backend_->fuses(g, seg);
    };
    for (FusedGroup &g : findFusions(p, s, accepts)) {
      g.fusedAway = dropsFusedAway(g);
      for (int32_t id : g.dropped)
        if (id >= 0 && id < p.tensors_size())
          dropped[id] = true;
      fusedAt_[firstKernel_[s] + g.first] =
          static_cast<int32_t>(fused_.size());
      FusedKernelFn fn = backend_->fusedKernel(g.kind);
      fused_.emplace_back(std::move(g), fn);
    }
  }
  for (const TensorDecl &t : p.tensors())
    if (t.fused_away() && !dropped[t.id()])
      return absl::InvalidArgumentError(absl::StrCat(
          where(t), " is fused away in the plan, but the ", backend_->name(),
          " backend does not run the instructions around it as one kernel; "
          "recompile the model with this cleave"));
  // Integer inputs reach their gathers through copies and slices
  // (copy_to_group, shard_slice): follow them back to the INPUT.
  inputOf_.assign(p.tensors_size(), -1);
  for (const TensorDecl &t : p.tensors())
    if (t.kind() == TensorDecl::INPUT)
      inputOf_[t.id()] = t.id();
  for (const plan::Segment &segment : p.segments())
    for (const plan::Instruction &inst : segment.instructions()) {
      const std::string &op = inst.op();
      bool passes = op == "runtime.copy" || op == "comm.shard_slice" ||
                    op == "graph.shard_slice" || op == "graph.reshape" ||
                    op == "comm.all_gather" || op == "graph.all_gather" ||
                    op == "comm.broadcast" || op == "graph.slice";
      if (passes && inst.inputs_size() >= 1 && inst.outputs_size() == 1 &&
          inst.inputs(0) >= 0 && inst.outputs(0) >= 0 &&
          inputOf_[inst.inputs(0)] >= 0)
        inputOf_[inst.outputs(0)] = inputOf_[inst.inputs(0)];
    }
  // A buffered send is still in flight when later microbatches run the
  // segment again: its tensor needs a slot per run, or they overwrite it.
  std::vector<int64_t> runs(p.segments_size(), 0);
  for (const plan::ScheduleStep &step : p.schedule())
    if (step.segment() >= 0 && step.segment() < p.segments_size())
      ++runs[step.segment()];
  for (int s = 0; s < p.segments_size(); ++s)
    for (int i = 0; i < p.segments(s).instructions_size(); ++i) {
      const plan::Instruction &inst = p.segments(s).instructions(i);
      auto buffered = inst.attrs().find("buffered");
      if (buffered == inst.attrs().end() || !buffered->second.b() ||
          inst.has_async_handle() || inst.inputs_size() < 1 ||
          inst.inputs(0) < 0)
        continue;
      const TensorDecl &t = p.tensors(inst.inputs(0));
      bool persistent = t.kind() == TensorDecl::PARAMETER ||
                        t.kind() == TensorDecl::CONSTANT;
      // Reusing a slot waits for its previous send, which is safe only
      // when the slot outlives the microbatches in flight; a tensor with no
      // slots at all (transient) would be overwritten within a run.
      if (!persistent && !slotted(t) && runs[s] > 1)
        return instructionError(
            s, i,
            absl::StrCat("tensor ", t.id(), " '", t.name(), "' (",
                         TensorDecl::Kind_Name(t.kind()),
                         ") is sent buffered by a segment that runs ",
                         runs[s], " times a step; it needs slots"));
    }

  idBound_.assign(p.tensors_size(), 0);
  for (const plan::Segment &segment : p.segments())
    for (const plan::Instruction &inst : segment.instructions())
      boundIds(inst);

  // Without a segment writing the loss (a plan that computes it elsewhere),
  // every forward segment's end is where it is read.
  bool any = false;
  for (bool w : writesLoss_)
    any = any || w;
  if (!any)
    for (int s = 0; s < p.segments_size(); ++s)
      writesLoss_[s] = p.segments(s).kind() == plan::Segment::FORWARD;
  for (const plan::ScheduleStep &step : p.schedule())
    if (step.segment() < 0 || step.segment() >= p.segments_size())
      return absl::InvalidArgumentError(
          absl::StrCat("rank ", rank_, ", program ", p.id(),
                       ": the schedule runs segment ", step.segment(), " of ",
                       p.segments_size()));
  if (p.has_loss_tensor() &&
      (p.loss_tensor() < 0 || p.loss_tensor() >= p.tensors_size() ||
       p.tensors(p.loss_tensor()).dtype() != plan::F32))
    return absl::InvalidArgumentError(absl::StrCat(
        "rank ", rank_, ", program ", p.id(), ": loss tensor ",
        p.loss_tensor(), " is not an f32 tensor"));
  // Model outputs (inference plans): one slot per microbatch, or later
  // microbatches overwrite the earlier ones' results.
  for (int32_t id : p.output_tensors()) {
    if (id < 0 || id >= p.tensors_size())
      return absl::InvalidArgumentError(
          absl::StrCat("rank ", rank_, ", program ", p.id(), ": output tensor ",
                       id, " is not a tensor"));
    const TensorDecl &t = p.tensors(id);
    int64_t slots = slotted(t) ? std::max(1, t.slots()) : 1;
    if (slots < numMicrobatches())
      return absl::InvalidArgumentError(absl::StrCat(
          "rank ", rank_, ", program ", p.id(), ": output tensor ", id, " '",
          t.name(), "' (", TensorDecl::Kind_Name(t.kind()), ", ", t.slots(),
          " slot(s)) needs a slot per microbatch (", numMicrobatches(), ")"));
  }
  return absl::OkStatus();
}

void Executor::boundIds(const plan::Instruction &inst) {
  const plan::Program &p = *program_;
  // (index operand, table operand or result, dimension of the table) of
  // the ops whose integer operand indexes a tensor.
  int indices = -1, table = -1, dim = -1;
  bool tableIsOutput = false;
  const std::string &op = inst.op();
  auto axisOf = [&](int rank) {
    auto it = inst.attrs().find("axis");
    int64_t axis = it == inst.attrs().end() ? 0 : it->second.i();
    return static_cast<int>(axis < 0 ? axis + rank : axis);
  };
  if (op == "graph.gather") {
    indices = 1;
    table = 0;
  } else if (op == "graph.gather_grad") {
    indices = 1;
    table = 0;
    tableIsOutput = true;
  } else if (op == "graph.cross_entropy" || op == "graph.cross_entropy_grad") {
    indices = 1;
    table = 0;
  } else {
    return;
  }
  if (inst.inputs_size() <= indices ||
      (tableIsOutput ? inst.outputs_size() : inst.inputs_size()) <= table)
    return;
  int32_t id = inst.inputs(indices);
  int32_t tableId = tableIsOutput ? inst.outputs(table) : inst.inputs(table);
  if (id < 0 || tableId < 0 || inputOf_[id] < 0)
    return;
  id = inputOf_[id];
  const TensorDecl &t = p.tensors(tableId);
  int rank = t.shape_size();
  dim = op.find("cross_entropy") != std::string::npos ? rank - 1
                                                       : axisOf(rank);
  if (dim < 0 || dim >= rank)
    return;
  int64_t bound = t.shape(dim);
  int64_t vocab = p.tensors(id).vocab();
  if ((vocab <= 0 || bound < vocab) &&
      (idBound_[id] == 0 || bound < idBound_[id]))
    idBound_[id] = bound;
}

absl::Status Executor::initialize() {
  const plan::Program &p = *program_;
  int64_t bytes = std::max<int64_t>(p.arena_bytes(), kArenaAlignment);
  bytes = (bytes + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
  try {
    arena_ = static_cast<char *>(backend_->allocate(bytes));
    scratch_ = static_cast<float *>(backend_->allocate(kArenaAlignment));
    int64_t forwardRuns = 0;
    for (const plan::ScheduleStep &step : p.schedule())
      forwardRuns += writesLoss_[step.segment()] ? 1 : 0;
    lossStaging_ = static_cast<float *>(backend_->allocateHost(
        std::max<int64_t>(1, forwardRuns) * sizeof(float)));
  } catch (const std::exception &e) {
    return absl::ResourceExhaustedError(
        absl::StrCat("rank ", rank_, ": cannot allocate an arena of ", bytes,
                     " bytes on the ", backend_->name(), " backend: ",
                     e.what()));
  }
  inputStaging_.assign(p.tensors_size(), nullptr);
  filledFor_.assign(p.tensors_size(), {});
  // Tensors that share arena bytes are initialised in declaration order;
  // persistent ones never share with each other.
  // Values are made in host memory and copied in, one tensor at a time
  // (a large model's parameters need not fit in host memory twice).
  std::vector<float> values;
  std::vector<uint16_t> halves;
  for (const TensorDecl &t : p.tensors()) {
    void *data = tensor(t.id()).data;
    // Parameters, and the fp32 master weights of a bf16 parameter (ZeRO's
    // block of it, optimizer state "master"), start from the parameter's
    // initial values; a bf16 parameter holds them rounded.
    bool master = t.kind() == TensorDecl::OPTIMIZER_STATE &&
                  t.state() == "master";
    if (t.kind() == TensorDecl::PARAMETER || master) {
      bool half = t.kind() == TensorDecl::PARAMETER &&
                  (t.dtype() == plan::BF16 || t.dtype() == plan::F16);
      if (t.dtype() != plan::F32 && !half)
        return absl::InvalidArgumentError(absl::StrCat(
            "rank ", rank_, ": parameter tensor '", t.name(), "' is ",
            plan::DType_Name(t.dtype()),
            " (parameters are f32, or bf16/f16 with f32 master weights)"));
      if (t.param_index() < 0 || t.param_index() >= plan_.parameters_size())
        return absl::InvalidArgumentError(absl::StrCat(
            "rank ", rank_, ": tensor '", t.name(),
            "' names no parameter of the plan"));
      values.assign(numElements(t), 0.0f);
      if (absl::Status s = initializeParameter(
              plan_.parameters(t.param_index()), t, comm_.mesh(), seed_,
              values.data());
          !s.ok())
        return absl::InvalidArgumentError(
            absl::StrCat("rank ", rank_, ": ", s.message()));
      if (half) {
        halves.resize(values.size());
        if (t.dtype() == plan::BF16)
          comm::floatsToBf16(values.data(), halves.data(),
                             static_cast<int64_t>(values.size()));
        else
          comm::floatsToF16(values.data(), halves.data(),
                            static_cast<int64_t>(values.size()));
        backend_->copyIn(data, halves.data(), halves.size() * 2);
      } else {
        backend_->copyIn(data, values.data(), values.size() * sizeof(float));
      }
      backend_->synchronize();
    } else if (t.kind() == TensorDecl::CONSTANT) {
      int64_t size = numElements(t) * plan::dtypeBytes(t.dtype());
      if (static_cast<int64_t>(t.constant_value().size()) != size)
        return absl::InvalidArgumentError(absl::StrCat(
            "rank ", rank_, ": constant '", t.name(), "' has ",
            t.constant_value().size(), " bytes of value for ", size));
      backend_->copyIn(data, t.constant_value().data(), size);
      backend_->synchronize();
    }
  }
  return absl::OkStatus();
}

TensorView Executor::tensor(int32_t id, int64_t microbatch) const {
  const TensorDecl &t = program_->tensors(id);
  int64_t offset = t.offset();
  // Under a framed schedule (interleaved, zero-bubble) stashes and inputs
  // live in the run's frame; other slotted tensors (send buffers, outputs)
  // in their microbatch's slot.
  int64_t frame = t.frame_pool() >= 0 && t.frame_pool() < 3
                      ? frames_[t.frame_pool()]
                      : -1;
  int64_t slot = frame >= 0 && (t.kind() == TensorDecl::STASH ||
                                t.kind() == TensorDecl::INPUT)
                     ? frame
                     : std::max<int64_t>(0, microbatch);
  if (slotted(t) && t.slots() > 1)
    offset += (slot % t.slots()) * t.slot_stride();
  TensorView view;
  view.data = arena_ + offset;
  view.shape.assign(t.shape().begin(), t.shape().end());
  view.dtype = t.dtype();
  view.id = id;
  return view;
}

int64_t Executor::numMicrobatches() const {
  return std::max<int64_t>(1, plan_.knobs().num_microbatches());
}

std::string Executor::readBytes(const void *data, int64_t bytes) const {
  std::string out(static_cast<size_t>(bytes), '\0');
  backend_->copyOut(out.data(), data, bytes);
  return out;
}

std::string Executor::tensorBytes(int32_t id, int64_t microbatch) const {
  TensorView view = tensor(id, microbatch);
  return readBytes(view.data, view.numBytes());
}

void Executor::writeTensorBytes(int32_t id, const void *data, int64_t bytes) {
  TensorView view = tensor(id);
  if (bytes != view.numBytes())
    throw std::invalid_argument(absl::StrCat(
        "tensor ", id, " '", program_->tensors(id).name(), "' takes ",
        view.numBytes(), " bytes, not ", bytes));
  backend_->copyIn(view.data, data, bytes);
  backend_->synchronize();
}

void Executor::readTensorBytes(int32_t id, void *out, int64_t bytes) const {
  TensorView view = tensor(id);
  if (bytes != view.numBytes())
    throw std::invalid_argument(absl::StrCat(
        "tensor ", id, " '", program_->tensors(id).name(), "' takes ",
        view.numBytes(), " bytes, not ", bytes));
  backend_->copyOut(out, view.data, bytes);
}

void Executor::setInput(const std::string &name, std::string global) {
  data_->setInput(name, std::move(global));
}

std::string Executor::outputBytes(int index, int64_t microbatch) const {
  TensorView view = tensor(program_->output_tensors(index), microbatch);
  return readBytes(view.data, view.numBytes());
}

std::vector<float> Executor::tensorValues(int32_t id,
                                          int64_t microbatch) const {
  TensorView view = tensor(id, microbatch);
  bool half = view.dtype == plan::BF16 || view.dtype == plan::F16;
  if (view.dtype != plan::F32 && !half)
    return {};
  std::vector<float> values(view.numElements());
  if (half) {
    std::vector<uint16_t> halves(values.size());
    backend_->copyOut(halves.data(), view.data, view.numBytes());
    if (view.dtype == plan::BF16)
      comm::bf16ToFloats(halves.data(), values.data(),
                         static_cast<int64_t>(values.size()));
    else
      comm::f16ToFloats(halves.data(), values.data(),
                        static_cast<int64_t>(values.size()));
    return values;
  }
  backend_->copyOut(values.data(), view.data, view.numBytes());
  return values;
}

absl::Status Executor::instructionError(int32_t segment, int index,
                                        const std::string &message) const {
  const plan::Segment &s = program_->segments(segment);
  const plan::Instruction &inst = s.instructions(index);
  std::string text = absl::StrCat(
      "rank ", rank_, ", program ", program_->id(), " (", program_->name(),
      "), segment ", segment, " '", s.name(), "', instruction ", index, " (",
      inst.op(), ")");
  if (!inst.location().empty())
    absl::StrAppend(&text, " at ", inst.location());
  return absl::InternalError(absl::StrCat(text, ": ", message));
}

void Executor::record(std::string name, std::string category, int thread,
                      int64_t startNs, int64_t endNs, int64_t microbatch) {
  TraceEvent e;
  e.name = std::move(name);
  e.category = std::move(category);
  e.thread = thread;
  e.startUs = startNs * 1e-3;
  e.durationUs = (endNs - startNs) * 1e-3;
  e.microbatch = static_cast<int32_t>(microbatch);
  trace_.push_back(std::move(e));
}

absl::Status Executor::fillInputs(const plan::Instruction &inst, int64_t step,
                                  int64_t microbatch) {
  for (int32_t id : inst.inputs()) {
    if (id < 0)
      continue;
    const TensorDecl &t = program_->tensors(id);
    if (t.kind() != TensorDecl::INPUT)
      continue;
    std::vector<int64_t> &filled = filledFor_[id];
    if (std::find(filled.begin(), filled.end(), microbatch) != filled.end())
      continue;
    filled.push_back(microbatch);
    TensorView view = tensor(id, microbatch);
    void *target = view.data;
    bool scale = t.input_name() == "loss_scale" && scalesLoss();
    if (scale && (t.dtype() != plan::F32 || view.numElements() != 1))
      return absl::InvalidArgumentError(
          absl::StrCat("rank ", rank_, ": input 'loss_scale' is not an f32 "
                                       "scalar"));
    if (!backend_->hostAddressable()) {
      // One staging slot per microbatch: copyIn may read it until the
      // step's end, when the executor synchronizes.
      if (!inputStaging_[id])
        inputStaging_[id] =
            backend_->allocateHost(view.numBytes() * numMicrobatches());
      // The optimizer's segment runs as microbatch -1 (AdamW's step).
      target = static_cast<char *>(inputStaging_[id]) +
               view.numBytes() *
                   (std::max<int64_t>(0, microbatch) % numMicrobatches());
    }
    // Under loss scaling AdamW counts the updates applied, not the steps.
    int64_t count = t.input_name() == "step" && scalesLoss()
                        ? lossScale_.updates + 1
                        : step;
    if (scale) {
      float value = static_cast<float>(lossScale_.scale);
      std::memcpy(target, &value, sizeof value);
    } else if (absl::Status s =
                   data_->fill(t, count, microbatch, target, idBound_[id]);
               !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("rank ", rank_, ": ", s.message()));
    }
    if (target != view.data)
      backend_->copyIn(view.data, target, view.numBytes());
  }
  return absl::OkStatus();
}

absl::StatusOr<OpContext> Executor::contextFor(int32_t segmentIndex,
                                               int index, int64_t microbatch,
                                               int64_t step) {
  const plan::Instruction &inst =
      program_->segments(segmentIndex).instructions(index);
  if (absl::Status s = fillInputs(inst, step, microbatch); !s.ok())
    return instructionError(segmentIndex, index, std::string(s.message()));
  std::vector<TensorView> inputs, outputs;
  for (int32_t id : inst.inputs())
    inputs.push_back(id < 0 ? TensorView{} : tensor(id, microbatch));
  for (int32_t id : inst.outputs())
    outputs.push_back(id < 0 ? TensorView{} : tensor(id, microbatch));
  return OpContext(inst, std::move(inputs), std::move(outputs), comm_,
                   pending_, deferred_);
}

absl::Status Executor::runSegment(int32_t segmentIndex, int64_t microbatch,
                                  int64_t step) {
  const plan::Segment &segment = program_->segments(segmentIndex);
  int64_t segmentStart = options_.trace ? nowNs() : 0;
  progress_.segment = segmentIndex;
  // A slot this run sends from may still be read by the send of an earlier
  // microbatch: complete that send before anything rewrites the slot. The
  // compiler gives a send a slot per microbatch in flight, so the receiver
  // has posted that receive by now (a wait here cannot close a cycle).
  for (int i = 0; i < segment.instructions_size(); ++i) {
    const plan::Instruction &inst = segment.instructions(i);
    auto buffered = inst.attrs().find("buffered");
    if (buffered == inst.attrs().end() || !buffered->second.b() ||
        inst.inputs_size() < 1 || inst.inputs(0) < 0)
      continue;
    auto it = deferred_.find(tensor(inst.inputs(0), microbatch).data);
    if (it == deferred_.end())
      continue;
    progress_.instruction = i;
    progress_.startedNs = nowNs();
    try {
      it->second->wait();
    } catch (const std::exception &e) {
      progress_.startedNs = 0;
      return instructionError(segmentIndex, i, e.what());
    }
    progress_.startedNs = 0;
    deferred_.erase(it);
  }
  auto runOne = [&](int i, OpContext &context) -> absl::Status {
    const plan::Instruction &inst = segment.instructions(i);
    int64_t start = nowNs();
    progress_.instruction = i;
    progress_.startedNs = start;
    bool widen = needsWidening(inst.op(), context) &&
                 !backend_->readsHalfStorage(inst.op());
    try {
      if (widen)
        widening_->widen(context);
      kernels_[firstKernel_[segmentIndex] + i](context);
      if (widen)
        widening_->narrow();
      if (options_.trace)
        backend_->synchronize();
    } catch (const std::exception &e) {
      progress_.startedNs = 0;
      if (widen)
        widening_->discard();
      return instructionError(segmentIndex, i, e.what());
    }
    progress_.startedNs = 0;
    if (options_.trace) {
      bool isComm = inst.op().compare(0, 5, "comm.") == 0;
      record(inst.op(), isComm ? "comm" : "compute", isComm ? 2 : 1, start,
             nowNs(), microbatch);
    }
    return absl::OkStatus();
  };
  for (int i = 0; i < segment.instructions_size(); ++i) {
    const plan::Instruction &inst = segment.instructions(i);
    // Once per step, in the segment's last run (a gradient reduction
    // started as soon as the last backward has written its bucket).
    if (auto last = inst.attrs().find("last_microbatch");
        last != inst.attrs().end() && last->second.b() &&
        microbatch != lastRunMicrobatch_[segmentIndex])
      continue;
    // Once per step, in the segment's first run (waiting for what the
    // previous step left in flight before the first read).
    if (auto first = inst.attrs().find("first_microbatch");
        first != inst.attrs().end() && first->second.b() &&
        microbatch != firstRunMicrobatch_[segmentIndex])
      continue;
    // Loss scaling: an update is skipped on every rank when the step's
    // gradients overflowed (the flag is the same everywhere, all-reduced
    // before the first update reads it).
    if (inst.has_unless()) {
      if (skipUpdates_ < 0) {
        float flag = 0;
        try {
          backend_->copyOut(&flag, tensor(inst.unless()).data, sizeof flag);
        } catch (const std::exception &e) {
          return instructionError(segmentIndex, i, e.what());
        }
        skipUpdates_ = flag != 0.0f ? 1 : 0;
      }
      if (skipUpdates_ == 1)
        continue;
    }
    int32_t fused = fusedAt_[firstKernel_[segmentIndex] + i];
    if (fused < 0) {
      absl::StatusOr<OpContext> context =
          contextFor(segmentIndex, i, microbatch, step);
      if (!context.ok())
        return context.status();
      if (absl::Status s = runOne(i, *context); !s.ok())
        return s;
      continue;
    }
    const auto &[group, kernel] = fused_[fused];
    std::vector<OpContext> contexts;
    contexts.reserve(group.count);
    for (int j = 0; j < group.count; ++j) {
      absl::StatusOr<OpContext> context =
          contextFor(segmentIndex, i + j, microbatch, step);
      if (!context.ok())
        return context.status();
      contexts.push_back(*std::move(context));
    }
    // A group on 16-bit tensors runs on fp32 copies of them, fused or op
    // by op, narrowed back once at its end.
    bool widen = false;
    for (int j = 0; j < group.count; ++j)
      widen |= needsWidening(segment.instructions(i + j).op(), contexts[j]);
    if (widen)
      for (OpContext &c : contexts)
        widening_->widen(c);
    int64_t start = nowNs();
    progress_.instruction = i;
    progress_.startedNs = start;
    bool ran = false;
    try {
      // The buffer plan may give a result the bytes of an operand that
      // dies at the first op; run op by op then. So too when the fused
      // kernel refuses the group or throws: the ops' own kernels then
      // report any error at the instruction it belongs to (the group's
      // writes overlap none of its reads, so running again is safe).
      ran = !fusedWritesOverlapReads(group, contexts) &&
            kernel(group, contexts);
      if (ran && options_.trace)
        backend_->synchronize();
    } catch (const std::exception &) {
      ran = false;
    }
    progress_.startedNs = 0;
    if (ran) {
      if (options_.trace)
        record(fusionName(group.kind), "compute", 1, start, nowNs(),
               microbatch);
    } else if (group.fusedAway) {
      return instructionError(
          segmentIndex, i,
          absl::StrCat("the fused ", fusionName(group.kind),
                       " kernel refused or failed, and its intermediate is "
                       "fused away in the plan (no memory to run the ops "
                       "one by one)"));
    } else {
      for (int j = 0; j < group.count; ++j)
        if (absl::Status s = runOne(i + j, contexts[j]); !s.ok()) {
          if (widen)
            widening_->discard();
          return s;
        }
    }
    if (widen)
      widening_->narrow();
    i += group.count - 1;
  }
  if (options_.trace)
    record(segment.name(), plan::Segment::Kind_Name(segment.kind()), 0,
           segmentStart, nowNs(), microbatch);
  return absl::OkStatus();
}

absl::Status Executor::finishSteps() {
  progress_.segment = -1;
  progress_.instruction = -3;
  progress_.startedNs = nowNs();
  try {
    while (!pending_.empty()) {
      std::unique_ptr<comm::Request> request =
          std::move(pending_.begin()->second);
      pending_.erase(pending_.begin());
      request->wait();
    }
    backend_->synchronize();
  } catch (const std::exception &e) {
    progress_.startedNs = 0;
    pending_.clear();
    return absl::InternalError(absl::StrCat(
        "rank ", rank_, ": completing the collectives the last step left in "
        "flight: ", e.what()));
  }
  progress_.startedNs = 0;
  return absl::OkStatus();
}

absl::StatusOr<StepResult> Executor::runStep(int64_t step) {
  const plan::Program &p = *program_;
  int64_t start = nowNs();
  for (const TensorDecl &t : p.tensors())
    if (t.kind() == TensorDecl::GRADIENT)
      backend_->fillZero(tensor(t.id()).data, t.bytes());
  for (std::vector<int64_t> &filled : filledFor_)
    filled.clear();
  skipUpdates_ = -1;
  double scaleUsed = lossScale_.scale;

  // Losses are copied out as their forward runs end and read once the
  // step's work is done (no wait per microbatch).
  int64_t lossCount = 0;
  for (const plan::ScheduleStep &s : p.schedule()) {
    frames_[0] = s.has_slot() ? s.slot() : -1;
    frames_[1] = s.has_weight_slot() ? s.weight_slot() : -1;
    frames_[2] = s.has_gradient_slot() ? s.gradient_slot() : -1;
    if (absl::Status st = runSegment(s.segment(), s.microbatch(), step);
        !st.ok())
      return st;
    if (p.has_loss_tensor() && writesLoss_[s.segment()] &&
        p.segments(s.segment()).kind() == plan::Segment::FORWARD) {
      backend_->copyOutAsync(lossStaging_ + lossCount,
                             tensor(p.loss_tensor(), s.microbatch()).data,
                             sizeof(float));
      ++lossCount;
    }
  }
  bool uncarried = false;
  for (auto &[handle, request] : pending_)
    uncarried |= !carriedHandles_.count(handle);
  if (uncarried) {
    std::string handles;
    for (auto &[handle, request] : pending_)
      if (!carriedHandles_.count(handle))
        absl::StrAppend(&handles, handles.empty() ? "" : ", ", handle);
    pending_.clear(); // waits for them
    return absl::InternalError(absl::StrCat(
        "rank ", rank_, ", program ", p.id(), ": async handles ", handles,
        " were never waited for in step ", step));
  }

  progress_.segment = -1;
  progress_.instruction = -2;
  progress_.startedNs = nowNs();
  try {
    for (auto &[buffer, request] : deferred_)
      request->wait();
    deferred_.clear();
  } catch (const std::exception &e) {
    progress_.startedNs = 0;
    deferred_.clear();
    return absl::InternalError(absl::StrCat("rank ", rank_,
                                            ": completing the sends of step ",
                                            step, ": ", e.what()));
  }
  try {
    backend_->synchronize();
  } catch (const std::exception &e) {
    progress_.startedNs = 0;
    return absl::InternalError(absl::StrCat(
        "rank ", rank_, ": finishing step ", step, " on the ",
        backend_->name(), " backend: ", e.what()));
  }
  progress_.startedNs = 0;
  double lossSum = 0;
  for (int64_t i = 0; i < lossCount; ++i)
    lossSum += lossStaging_[i];

  // Mean over the ranks holding a loss (the last stage's data-parallel
  // ranks, and its tensor-parallel peers, which hold the same value): one
  // sum over every rank of [loss, holds a loss].
  float reduced[2] = {
      lossCount ? static_cast<float>(lossSum / lossCount) : 0.0f,
      lossCount ? 1.0f : 0.0f};
  comm::CommTensor buffer{scratch_, {2}, comm::ElementType::F32};
  progress_.segment = -1;
  progress_.instruction = -1;
  progress_.startedNs = nowNs();
  try {
    backend_->copyIn(scratch_, reduced, sizeof(reduced));
    comm_.allReduce(comm_.mesh().axisNames, buffer, buffer,
                    comm::Reduction::Sum);
    backend_->copyOut(reduced, scratch_, sizeof(reduced));
  } catch (const std::exception &e) {
    progress_.startedNs = 0;
    return absl::InternalError(absl::StrCat(
        "rank ", rank_, ": reducing the loss of step ", step, ": ", e.what()));
  }
  progress_.startedNs = 0;
  StepResult result;
  result.loss = reduced[1] > 0 ? reduced[0] / reduced[1]
                               : std::numeric_limits<double>::quiet_NaN();
  result.seconds = (nowNs() - start) * 1e-9;
  result.lossScale = scaleUsed;
  result.skipped = skipUpdates_ == 1;
  if (scalesLoss()) {
    // GradScaler.update / Megatron's DynamicGradScaler: back off after an
    // overflow, grow after growth_interval clean steps.
    const plan::LossScaling &ls = plan_.training().loss_scaling();
    bool dynamic = ls.mode() == plan::LossScaling::DYNAMIC;
    if (result.skipped) {
      lossScale_.goodSteps = 0;
      if (dynamic)
        lossScale_.scale =
            std::max(lossScale_.scale * ls.backoff_factor(), ls.min_scale());
    } else {
      ++lossScale_.updates;
      if (dynamic && ++lossScale_.goodSteps >= ls.growth_interval()) {
        lossScale_.scale *= ls.growth_factor();
        lossScale_.goodSteps = 0;
      }
    }
  } else if (!result.skipped) {
    ++lossScale_.updates;
  }
  return result;
}

bool Executor::scalesLoss() const {
  return plan_.training().loss_scaling().mode() != plan::LossScaling::NONE;
}

} // namespace cleave::executor
