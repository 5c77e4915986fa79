//===- PlanDigest.h - What the inspect views compute from a plan -*- C++ -*-===//
//
// The text and JSON views show the same facts; this computes them once:
// parameters folded by layer, collectives counted from the instruction
// streams, memory per program, and the small formatting helpers both use.
// Internal to CleaveInspect.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_INSPECT_PLANDIGEST_H
#define CLEAVE_RUNTIME_INSPECT_PLANDIGEST_H

#include "cleave/runtime/plan/plan.pb.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace cleave::inspect {

/// Parameters that print as one block. A parameter whose name has no layer
/// index ("wte", "ln_f.weight") is a group of its own. Parameters named
/// "<prefix>.<layer>.<rest>" are grouped per prefix and sharding signature:
/// `params` are the parameters of `layer`, and `sameLayers` the other layers
/// whose parameters have the same names (after the index), global shapes,
/// dimension shardings and ZeRO axes. A 96-layer GPT so prints one layer.
struct ParameterGroup {
  std::string prefix; // "" for a parameter without a layer index
  int64_t layer = -1;
  std::vector<int> params; // indices into Plan.parameters
  std::vector<int64_t> sameLayers;
  /// Every parameter of the group's layers sits on the same pipeline
  /// stages (a ResNet's blocks, numbered by their structure rather than
  /// their names, say nothing of their stage by their index).
  bool sameStages = true;
};
std::vector<ParameterGroup> groupParameters(const plan::Plan &plan);

/// Collectives one device of a program runs in one training step, counted
/// from its schedule: every comm.* instruction except comm.wait of every
/// segment run. `bytes` is the larger of the first input's and the first
/// output's tensor bytes (the full buffer: an all-gather's output, a
/// reduce-scatter's input).
struct CollectiveCount {
  std::string kind; // "all_reduce", "send", ...
  std::string axes; // "tp", "dp,cp"; the axis of send/recv
  int64_t count = 0;
  double bytes = 0;
};
/// Per program, sorted by kind and axes.
std::vector<std::vector<CollectiveCount>> countCollectives(
    const plan::Plan &plan);

/// A stage whose programs run more collective bytes a step than the plan
/// was priced with: all-reduces, all-gathers, reduce-scatters and
/// all-to-alls, one device, counted (countCollectives; the largest of the
/// stage's programs) against the predicted tally of the same kinds
/// (Predicted.comm). Where they part, the search chose another layout
/// than the one the cost model priced, and the step will take longer than
/// predicted.
struct CollectiveExcess {
  int64_t stage = 0;
  double countedBytes = 0, predictedBytes = 0;
};
/// The stages whose counted bytes exceed `ratio` times the predicted and
/// the predicted by `minBytes`; none for a plan without a predicted
/// tally (a graph plan).
std::vector<CollectiveExcess> collectiveExcess(const plan::Plan &plan,
                                               double ratio = 1.5,
                                               double minBytes = 64 << 20);

/// One program's arena and what is in it, per tensor kind.
struct ProgramMemory {
  int64_t arenaBytes = 0;
  int64_t ranks = 0; // ranks running the program
  // Program.memory as the compiler planned it (empty if it wrote none).
  std::map<plan::TensorDecl::Kind, int64_t> planned;
  // Recomputed: bytes x slots of the tensors of each kind (fused-away ones
  // left out). Transients share space in the arena, so their sum can exceed
  // what the arena holds.
  std::map<plan::TensorDecl::Kind, int64_t> tensors;
};
std::vector<ProgramMemory> programMemory(const plan::Plan &plan);

// --- Formatting helpers ----------------------------------------------------

/// "parameter", "optimizer_state", ...
std::string kindName(plan::TensorDecl::Kind kind);
/// "forward", "backward", "optimizer", "step_begin".
std::string segmentKindName(plan::Segment::Kind kind);
/// "f32", "bf16", ...
std::string dtypeName(plan::DType dtype);
/// "64x256" ("scalar" for rank 0).
std::string formatShape(const google::protobuf::RepeatedField<int64_t> &shape);
/// "[-, tp]", "[(dp,tp), -]": per dimension its axes, "-" if not split.
std::string formatDims(
    const google::protobuf::RepeatedPtrField<plan::DimSharding> &dims,
    int rank);
/// "1.50 GiB".
std::string formatBytes(double bytes);
/// "1.23 T", "512 M": large counts with a metric suffix.
std::string formatCount(double count);
/// Sorted ranks or layers as ranges: "0-7, 16-23", "2, 4, ..., 94 (every
/// 2nd)". At most `maxRanges` ranges are listed before "...".
std::string formatRanges(std::vector<int64_t> values, int maxRanges = 8);
/// Comma-joined mesh axes of a comm instruction: attrs "axes" or "axis".
std::string instructionAxes(const plan::Instruction &inst);

/// Rows of cells printed with aligned columns, each line starting with
/// `indent`.
std::string renderTable(const std::vector<std::vector<std::string>> &rows,
                        const std::string &indent);

} // namespace cleave::inspect

#endif // CLEAVE_RUNTIME_INSPECT_PLANDIGEST_H
