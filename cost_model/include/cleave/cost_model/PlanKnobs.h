//===- PlanKnobs.h - Parse and print plans given as knobs -------*- C++ -*-===//

#ifndef CLEAVE_COST_MODEL_PLANKNOBS_H
#define CLEAVE_COST_MODEL_PLANKNOBS_H

#include "cleave/cost_model/TransformerPlan.h"

#include <bitset>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

namespace cleave::cost {

/// A knob of a plan, as `--fix` spells it (knobName).
enum class Knob : uint8_t {
  Dp,
  Tp,
  Pp,
  Cp,
  Ep,
  Sp,
  Zero,
  Microbatch,
  Schedule,
  Vpp,
  Recompute,
  RecomputeScope,
  Precision,
  OverlapGrad,
  OverlapP2p,
  Stages,
  Attention,
  OverlapTp,
  ZeroBucket,
  GradReduce,
};
inline constexpr size_t kNumKnobs = static_cast<size_t>(Knob::GradReduce) + 1;

/// "dp", "recompute-scope", ...
std::string_view knobName(Knob knob);
/// The knob `name` spells; none for an unknown name.
std::optional<Knob> knobNamed(std::string_view name);

/// A set of knobs: which ones `--fix` gave (the search holds them).
class KnobSet {
public:
  KnobSet() = default;
  KnobSet(std::initializer_list<Knob> knobs) {
    for (Knob k : knobs)
      insert(k);
  }
  bool contains(Knob k) const { return bits_.test(static_cast<size_t>(k)); }
  void insert(Knob k) { bits_.set(static_cast<size_t>(k)); }
  bool empty() const { return bits_.none(); }
  bool operator==(const KnobSet &other) const { return bits_ == other.bits_; }

private:
  std::bitset<kNumKnobs> bits_;
};

/// Applies `dp=8,tp=8,pp=16,microbatch=1,schedule=1f1b,recompute=full,...`
/// to `plan`. Knobs: dp, tp, pp, cp, ep (degrees), sp (on/off), zero (0-3),
/// microbatch (size), schedule (gpipe, 1f1b, interleaved, zb-h1), vpp
/// (chunks per stage; sets the interleaved schedule when > 1), recompute
/// (none, selective, full; or one per pipeline stage, `full/none/none`),
/// precision (fp32, tf32, bf16, fp16), and those that say how to price a
/// plan (overlap-grad, overlap-p2p, overlap-tp, zero-bucket, grad-reduce,
/// stages, recompute-scope, attention).
/// Errors name the knob. Returns the knobs given, so callers can fill the
/// rest.
absl::StatusOr<KnobSet> applyPlanKnobs(std::string_view knobs,
                                       ParallelConfig &plan);

/// Fills the data-parallel degree from the device count when it was not
/// given: dp = devices / (tp * pp * cp).
absl::Status inferDataParallel(int64_t devices, bool dpGiven,
                               ParallelConfig &plan);

/// "dp=8,tp=8,pp=16,cp=1,ep=1,sp=off,zero=0,microbatch=1,schedule=1f1b,..."
std::string planKnobsString(const ParallelConfig &plan);

std::string_view precisionName(DType dtype);

} // namespace cleave::cost

#endif // CLEAVE_COST_MODEL_PLANKNOBS_H
