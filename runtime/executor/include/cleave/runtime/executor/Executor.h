//===- Executor.h - Run a rank's program of a plan --------------*- C++ -*-===//
//
// One Executor per rank: it allocates the program's arena once, views every
// tensor at its planned offset, initialises parameters deterministically,
// and runs training steps by walking Program.schedule, dispatching each
// instruction to the kernel registry (OpContext.h) and comm ops to a
// Communicator. Nothing is allocated per step except the scratch some
// kernels take and the staging buffers of packed collectives.
//
// Errors never crash the process: a kernel exception or a malformed
// instruction comes back as a Status naming the rank, program, segment,
// instruction index, op and location.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_EXECUTOR_EXECUTOR_H
#define CLEAVE_RUNTIME_EXECUTOR_EXECUTOR_H

#include "cleave/runtime/comm/Communicator.h"
#include "cleave/runtime/executor/Backend.h"
#include "cleave/runtime/executor/Initialization.h"
#include "cleave/runtime/executor/OpContext.h"
#include "cleave/runtime/plan/plan.pb.h"

#include "absl/status/statusor.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <ostream>
#include <memory>
#include <optional>
#include <string>
#include <set>
#include <vector>

namespace cleave::executor {

struct ExecutorOptions {
  /// Overrides TrainingConfig.seed.
  std::optional<uint64_t> seed;
  /// A uint16 token file (nanoGPT format); empty: synthetic data.
  std::string dataPath;
  /// input_name -> a raw file of that input's global batch (the worker's
  /// `--input NAME=FILE`), the same every step; see cutInputRows.
  std::map<std::string, std::string> inputFiles;
  /// Synthetic masks (TensorDecl.SYNTH_ONES inputs) are right-padded:
  /// DataSource::create.
  bool paddedMasks = false;
  /// Record trace events (traceEvents()). On an asynchronous backend each
  /// instruction is then waited for, so that its time is its own.
  bool trace = false;
  /// Where the arena lives and the kernels run; not owned, must outlive
  /// the executor. Null: the CPU backend.
  Backend *backend = nullptr;
  /// Run the groups of instructions the backend fuses (Fusion.h) as one
  /// kernel each; off: every instruction alone (for comparisons).
  bool fuse = true;
};

/// What a rank is doing, for the watchdog (read from another thread).
/// segment -1 is the end of a step: instruction -2 completing buffered
/// sends, -1 reducing the loss; -3 is finishSteps.
struct Progress {
  /// steady_clock nanoseconds when the current instruction started, 0 when
  /// none runs.
  std::atomic<int64_t> startedNs{0};
  std::atomic<int32_t> segment{-1};
  std::atomic<int32_t> instruction{-1};
  /// Work outside the plan's instructions that waits on peers (the
  /// worker's own collectives, a checkpoint's commit), named for the
  /// watchdog: WatchedPhase. Null while an instruction runs.
  std::atomic<const char *> phase{nullptr};
};

/// One complete event ("X") of a Chrome trace.
struct TraceEvent {
  std::string name;
  std::string category;
  /// 0: segments, 1: compute instructions, 2: communication.
  int thread = 0;
  /// steady_clock microseconds.
  double startUs = 0;
  double durationUs = 0;
  int32_t microbatch = -1;
};

struct StepResult {
  /// Mean loss over microbatches and the ranks holding it (the same on
  /// every rank); NaN when no program computes a loss (inference plans).
  double loss = 0;
  double seconds = 0;
  /// Loss scaling (TrainingConfig.loss_scaling): the scale this step's
  /// loss was seeded with, and whether its gradients overflowed, so that
  /// every rank skipped its updates.
  double lossScale = 1;
  bool skipped = false;
};

/// The state loss scaling carries from step to step (and a checkpoint
/// keeps): the scale, the steps since the last overflow, and the optimizer
/// updates applied (AdamW's step count, which a skipped step does not
/// advance).
struct LossScaleState {
  double scale = 1;
  int64_t goodSteps = 0;
  int64_t updates = 0;
};

class Executor {
public:
  /// Validates the rank's program (known ops, tensors inside the arena,
  /// aligned views), allocates the arena and initialises it. The plan is
  /// copied; `comm` must outlive the executor; its mesh gives this rank's
  /// coordinates.
  static absl::StatusOr<std::unique_ptr<Executor>>
  create(const plan::Plan &plan, int rank, comm::Communicator &comm,
         ExecutorOptions options = {});
  ~Executor();

  /// Runs training step `step` (1-based): or, for an inference plan (only
  /// forward segments, no loss), one forward pass of the global batch whose
  /// results are left in Program.output_tensors (outputBytes). Every rank
  /// must call it: the loss is reduced over all ranks at the end.
  absl::StatusOr<StepResult> runStep(int64_t step);

  /// Completes the collectives the last step started for the next one
  /// (`carried`: ZeRO-1/2's gathers of the updated parameter blocks, which
  /// a step waits for before its forward pass reads them). Call it after
  /// the last step, before reading parameters; every rank must.
  absl::Status finishSteps();

  int rank() const { return rank_; }
  /// The seed of the initialisation and synthetic data (the options' or
  /// the plan's).
  uint64_t seed() const { return seed_; }
  const plan::Program &program() const { return *program_; }
  /// The view of tensor `id` for microbatch `microbatch` (slot m % slots,
  /// or for a stash the running step's frame when the schedule gives one).
  TensorView tensor(int32_t id, int64_t microbatch = 0) const;
  /// The raw bytes of tensor `id` (any dtype), copied out of the backend's
  /// memory.
  std::string tensorBytes(int32_t id, int64_t microbatch = 0) const;
  /// Local values of a PARAMETER (or any f32 or bf16) tensor, as floats
  /// (copied out of the backend's memory); empty for other dtypes.
  std::vector<float> tensorValues(int32_t id, int64_t microbatch = 0) const;
  /// Overwrites tensor `id` (slot 0) with `bytes` raw bytes of its dtype,
  /// copied into the backend's memory (a checkpoint or weights loaded
  /// between steps). Throws std::invalid_argument when `bytes` is not the
  /// tensor's size.
  void writeTensorBytes(int32_t id, const void *data, int64_t bytes);
  /// Copies tensor `id` (slot 0) into `out`, a buffer the caller keeps
  /// across calls (a checkpoint's staging, so a save touches no fresh
  /// memory). Throws std::invalid_argument when `bytes` is not its size.
  void readTensorBytes(int32_t id, void *out, int64_t bytes) const;
  /// Number of microbatches of a step (Knobs.num_microbatches, at least 1).
  int64_t numMicrobatches() const;
  /// The raw little-endian contents (of the tensor's dtype) of output
  /// `index` (Program.output_tensors[index]) for `microbatch` of the last
  /// step: its slot, [this rank's rows of the microbatch, ...].
  std::string outputBytes(int index, int64_t microbatch) const;
  /// Replaces input `name`'s values from the next step on by `global`, its
  /// whole global batch (as a `--input` file would hold it): generation
  /// sets each step's tokens, positions and cache slots so.
  void setInput(const std::string &name, std::string global);
  const Progress &progress() const { return progress_; }
  Progress &progress() { return progress_; }
  /// Loss scaling's state after the last step (at creation: the plan's
  /// initial scale, no update applied); restore one from a checkpoint
  /// before the next step.
  const LossScaleState &lossScaleState() const { return lossScale_; }
  void setLossScaleState(const LossScaleState &state) { lossScale_ = state; }
  /// Whether the plan scales its loss (TrainingConfig.loss_scaling).
  bool scalesLoss() const;
  const std::vector<TraceEvent> &traceEvents() const { return trace_; }

private:
  Executor(const plan::Plan &plan, int rank, comm::Communicator &comm,
           ExecutorOptions options);
  absl::Status prepare();
  absl::Status initialize();
  void boundIds(const plan::Instruction &inst);
  absl::Status runSegment(int32_t segment, int64_t microbatch, int64_t step);
  /// Views of instruction `index` of `segment` for `microbatch`, its
  /// inputs filled first.
  absl::StatusOr<OpContext> contextFor(int32_t segment, int index,
                                       int64_t microbatch, int64_t step);
  absl::Status fillInputs(const plan::Instruction &inst, int64_t step,
                          int64_t microbatch);
  absl::Status instructionError(int32_t segment, int index,
                                const std::string &message) const;
  void record(std::string name, std::string category, int thread,
              int64_t startNs, int64_t endNs, int64_t microbatch);

  /// A copy: callers need not keep theirs. What only initialisation reads
  /// (initial values) and the debugging payloads are dropped after it.
  plan::Plan plan_;
  const plan::Program *program_ = nullptr;
  int rank_;
  comm::Communicator &comm_;
  ExecutorOptions options_;
  uint64_t seed_ = 0;
  std::unique_ptr<DataSource> data_;

  /// Reads `bytes` of backend memory at `data` into host memory.
  std::string readBytes(const void *data, int64_t bytes) const;

  std::unique_ptr<Backend> ownedBackend_;
  Backend *backend_ = nullptr;
  /// Runs fp32 kernels on the tensors a bf16 plan stores in 16 bits
  /// (src/Widening.h).
  std::unique_ptr<class Widening> widening_;
  /// The program's arena in backend memory, and a few bytes of backend
  /// scratch for the loss reduction (a device collective needs device
  /// buffers).
  char *arena_ = nullptr;
  float *scratch_ = nullptr;
  /// Host staging (Backend::allocateHost): per forward schedule step the
  /// loss it copies out, and per INPUT tensor a slot per microbatch that
  /// the data source fills before it is copied in (only when backend
  /// memory is not host memory).
  float *lossStaging_ = nullptr;
  std::vector<void *> inputStaging_;
  /// The stash frame of the schedule step running (ScheduleStep.slot), or
  /// -1: stashes then use their microbatch's slot.
  /// The frames of the schedule step running, per TensorDecl.frame_pool
  /// (ScheduleStep.slot, weight_slot, gradient_slot), or -1: stashes then
  /// use their microbatch's slot.
  int64_t frames_[3] = {-1, -1, -1};
  std::vector<KernelFn> kernels_;  // per instruction, flattened
  std::vector<size_t> firstKernel_; // per segment, index into kernels_
  /// Per instruction (flattened like kernels_): the fused group starting
  /// there, an index into fused_, or -1.
  std::vector<int32_t> fusedAt_;
  std::vector<std::pair<FusedGroup, FusedKernelFn>> fused_;
  /// Per segment: does it write the loss tensor?
  std::vector<bool> writesLoss_;
  /// Per segment: the microbatch of its last run in the schedule, where
  /// `last_microbatch` instructions run (under ZB-H1 the first stage's
  /// last W is a deferred early microbatch's: microbatch p - 2's).
  std::vector<int64_t> lastRunMicrobatch_;
  /// Per segment: the microbatch of its first run in the schedule, the
  /// only run of its `first_microbatch` instructions.
  std::vector<int64_t> firstRunMicrobatch_;
  /// Async handles of `carried` instructions, which stay in flight from
  /// one step into the next.
  std::set<int32_t> carriedHandles_;
  /// Per INPUT tensor: the ids its gather tables and cross-entropy logits
  /// accept (0: no bound), when smaller than its vocab (a plan may give
  /// every integer input the model's vocab, BERT's token types too).
  std::vector<int64_t> idBound_;
  /// Per tensor: the INPUT it is a copy or slice of (-1: none).
  std::vector<int32_t> inputOf_;
  /// Input tensors filled this step, per (tensor, microbatch).
  std::vector<std::vector<int64_t>> filledFor_;
  LossScaleState lossScale_;
  /// This step's all-reduced overflow flag, once an instruction with
  /// `unless` has read it: -1 not yet read, 0 clear, 1 set (the updates
  /// are skipped).
  int skipUpdates_ = -1;
  PendingRequests pending_;
  DeferredRequests deferred_;
  Progress progress_;
  std::vector<TraceEvent> trace_;
};

/// A Chrome trace in the shape of the simulator's (cost_model
/// Simulator.cpp writeChromeTrace): header, then per rank its names (one
/// process per rank, threads "segments", "compute" and "comm") and its
/// events, times in microseconds from `originUs`, then the footer. `first`
/// tracks the separators across calls, so that ranks can be written one
/// after another (the worker merges per-rank files this way).
void writeChromeTraceEvents(const std::vector<TraceEvent> &events, int rank,
                            double originUs, std::ostream &os, bool &first);
void writeChromeTraceHeader(std::ostream &os);
void writeChromeTraceRankNames(int rank, std::ostream &os, bool &first);
void writeChromeTraceFooter(std::ostream &os);

/// A thread that ends the job when one instruction runs longer than
/// `timeoutSeconds`: it prints "rank R: timed out on program P segment S
/// instruction I (op, location)" to stderr and calls `onTimeout` (which
/// should not return: MPI_Abort).
///
/// With a `heartbeatPath`, the thread also rewrites that file at every poll
/// with the process id, the wall-clock time and what the rank is doing
/// (one line: "pid=P time_ms=T where=TEXT"): a rank whose file stops
/// changing is stopped or dead as a whole (a hung instruction leaves the
/// thread beating and times out by itself), which the launcher reads to
/// name it when the others time out waiting on it.
class Watchdog {
public:
  Watchdog(const Executor &executor, double timeoutSeconds,
           std::function<void()> onTimeout,
           std::string heartbeatPath = std::string());
  ~Watchdog();

private:
  struct State;
  std::unique_ptr<State> state_;
};

/// Marks work outside the plan's instructions that waits on peers for the
/// watchdog while it lasts: it times out like an instruction and is named
/// by `what` ("saving checkpoint step 5"). `what` must outlive the guard.
class WatchedPhase {
public:
  WatchedPhase(Executor &executor, const char *what);
  ~WatchedPhase();
  WatchedPhase(const WatchedPhase &) = delete;
  WatchedPhase &operator=(const WatchedPhase &) = delete;

private:
  Progress &progress_;
};

} // namespace cleave::executor

#endif // CLEAVE_RUNTIME_EXECUTOR_EXECUTOR_H
