//===- PlanKnobs.cpp - Parse and print plans given as knobs ---------------===//

#include "cleave/cost_model/PlanKnobs.h"

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

#include <algorithm>

namespace cleave::cost {

std::string_view precisionName(DType dtype) { return dtypeName(dtype); }

namespace {

constexpr std::string_view kKnobNames[kNumKnobs] = {
    "dp",         "tp",       "pp",          "cp",
    "ep",         "sp",       "zero",        "microbatch",
    "schedule",   "vpp",      "recompute",   "recompute-scope",
    "precision",  "overlap-grad", "overlap-p2p", "stages",
    "attention",  "overlap-tp", "zero-bucket", "grad-reduce"};

} // namespace

std::string_view knobName(Knob knob) {
  return kKnobNames[static_cast<size_t>(knob)];
}

std::optional<Knob> knobNamed(std::string_view name) {
  for (size_t i = 0; i < kNumKnobs; ++i)
    if (kKnobNames[i] == name)
      return static_cast<Knob>(i);
  return std::nullopt;
}

absl::StatusOr<KnobSet> applyPlanKnobs(std::string_view knobs,
                                       ParallelConfig &plan) {
  KnobSet given;
  if (absl::StripAsciiWhitespace(
          absl::string_view(knobs.data(), knobs.size())).empty())
    return given;
  // An empty item (",,", a trailing comma) is a typo, not a knob to skip:
  // "dp=4,,tp=2" most likely lost a knob.
  for (absl::string_view item :
       absl::StrSplit(absl::string_view(knobs.data(), knobs.size()), ',')) {
    if (absl::StripAsciiWhitespace(item).empty())
      return absl::InvalidArgumentError(absl::StrCat(
          "empty knob in '", absl::string_view(knobs.data(), knobs.size()),
          "' (knobs are knob=value, separated by single commas)"));
    std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(item, absl::MaxSplits('=', 1));
    std::string key(absl::StripAsciiWhitespace(kv.first));
    std::string value(absl::StripAsciiWhitespace(kv.second));
    if (key.empty() || value.empty())
      return absl::InvalidArgumentError(
          absl::StrCat("expected knob=value, got '", item, "'"));
    std::optional<Knob> knob = knobNamed(key);
    if (!knob)
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown knob '", key,
          "' (knobs: dp, tp, pp, cp, ep, sp, zero, microbatch, schedule, vpp, "
          "recompute, precision, overlap-grad, overlap-p2p, overlap-tp, "
          "zero-bucket, grad-reduce, stages, recompute-scope, attention)"));
    if (given.contains(*knob))
      return absl::InvalidArgumentError(
          absl::StrCat("knob '", key, "' is given twice"));
    auto integer = [&](int64_t &out, int64_t lo) -> absl::Status {
      if (!absl::SimpleAtoi(value, &out) || out < lo)
        return absl::InvalidArgumentError(absl::StrCat(
            "knob '", key, "' takes an integer >= ", lo, ", got '", value,
            "'"));
      return absl::OkStatus();
    };
    absl::Status status;
    if (*knob == Knob::Dp)
      status = integer(plan.dp, 1);
    else if (*knob == Knob::Tp)
      status = integer(plan.tp, 1);
    else if (*knob == Knob::Pp)
      status = integer(plan.pp, 1);
    else if (*knob == Knob::Cp)
      status = integer(plan.cp, 1);
    else if (*knob == Knob::Ep)
      status = integer(plan.ep, 1);
    else if (*knob == Knob::Microbatch)
      status = integer(plan.microbatchSize, 1);
    else if (*knob == Knob::Vpp) {
      status = integer(plan.chunks, 1);
      if (status.ok() && plan.chunks > 1)
        plan.schedule = ScheduleKind::Interleaved;
    } else if (*knob == Knob::Zero) {
      int64_t z;
      status = integer(z, 0);
      if (status.ok() && z > 3)
        status = absl::InvalidArgumentError(
            absl::StrCat("knob 'zero' takes 0, 1, 2 or 3, got ", z));
      plan.zero = static_cast<int>(z);
    } else if (*knob == Knob::Sp) {
      if (value == "on" || value == "true" || value == "1")
        plan.sequenceParallel = true;
      else if (value == "off" || value == "false" || value == "0")
        plan.sequenceParallel = false;
      else
        status = absl::InvalidArgumentError(
            absl::StrCat("knob 'sp' takes on or off, got '", value, "'"));
    } else if (*knob == Knob::OverlapGrad || *knob == Knob::OverlapP2p ||
               *knob == Knob::OverlapTp) {
      bool on = value == "on" || value == "true" || value == "1";
      if (!on && value != "off" && value != "false" && value != "0")
        status = absl::InvalidArgumentError(absl::StrCat(
            "knob '", key, "' takes on or off, got '", value, "'"));
      (*knob == Knob::OverlapGrad  ? plan.overlapGradReduce
       : *knob == Knob::OverlapP2p ? plan.overlapTransfers
                                   : plan.overlapTpComm) = on;
    } else if (*knob == Knob::ZeroBucket) {
      // "tensor", or a bucket size in millions of elements.
      int64_t millions = 0;
      if (value == "tensor")
        plan.zeroBucketElements = 0;
      else if ((status = integer(millions, 1)).ok())
        plan.zeroBucketElements = millions * 1000000;
      else
        status = absl::InvalidArgumentError(absl::StrCat(
            "knob 'zero-bucket' takes tensor or a bucket size in millions "
            "of elements (40), got '",
            value, "'"));
    } else if (*knob == Knob::GradReduce) {
      if (value == "fp32" || value == "half")
        plan.halfGradReduce = value == "half";
      else
        status = absl::InvalidArgumentError(absl::StrCat(
            "knob 'grad-reduce' takes fp32 or half, got '", value, "'"));
    } else if (*knob == Knob::RecomputeScope) {
      if (value == "needed" || value == "layer")
        plan.recomputeWholeLayer = value == "layer";
      else
        status = absl::InvalidArgumentError(absl::StrCat(
            "knob 'recompute-scope' takes needed or layer, got '", value,
            "'"));
    } else if (*knob == Knob::Attention) {
      if (value == "fused" || value == "unfused")
        plan.fusedAttention = value == "fused";
      else
        status = absl::InvalidArgumentError(absl::StrCat(
            "knob 'attention' takes fused or unfused, got '", value, "'"));
    } else if (*knob == Knob::Stages) {
      if (value == "balanced" || value == "even")
        plan.balanceStages = value == "balanced";
      else
        status = absl::InvalidArgumentError(absl::StrCat(
            "knob 'stages' takes balanced or even, got '", value, "'"));
    } else if (*knob == Knob::Schedule) {
      auto kind = parseSchedule(value);
      if (kind.ok())
        plan.schedule = *kind;
      status = kind.status();
    } else if (*knob == Knob::Recompute) {
      // One mode for every stage, or one per stage separated by '/'.
      std::vector<Recompute> modes;
      for (absl::string_view part : absl::StrSplit(value, '/')) {
        if (std::optional<Recompute> mode =
                parseRecompute(std::string_view(part.data(), part.size())))
          modes.push_back(*mode);
        else {
          status = absl::InvalidArgumentError(absl::StrCat(
              "knob 'recompute' takes none, selective or full, or one of "
              "them per pipeline stage separated by '/' "
              "(full/selective/none/none), got '",
              value, "'"));
          break;
        }
      }
      if (status.ok()) {
        plan.recompute = *std::max_element(modes.begin(), modes.end());
        plan.stageRecompute.clear();
        if (modes.size() > 1)
          plan.stageRecompute = modes;
      }
    } else if (*knob == Knob::Precision) {
      auto dtype = parseDType(value);
      if (dtype.ok())
        plan.precision = *dtype;
      status = dtype.status();
    }
    if (!status.ok())
      return status;
    given.insert(*knob);
  }
  return given;
}

absl::Status inferDataParallel(int64_t devices, bool dpGiven,
                               ParallelConfig &plan) {
  if (dpGiven)
    return absl::OkStatus();
  int64_t others = plan.tp * plan.pp * plan.cp;
  if (devices % others)
    return absl::InvalidArgumentError(absl::StrCat(
        "tp x pp x cp = ", others, " does not divide the ", devices,
        " devices"));
  plan.dp = devices / others;
  return absl::OkStatus();
}

std::string planKnobsString(const ParallelConfig &p) {
  std::string recompute(recomputeName(p.recompute));
  if (!p.stageRecompute.empty()) {
    recompute.clear();
    for (Recompute r : p.stageRecompute)
      absl::StrAppend(&recompute, recompute.empty() ? "" : "/",
                      std::string(recomputeName(r)));
  }
  return absl::StrCat("dp=", p.dp, ",tp=", p.tp, ",pp=", p.pp, ",cp=", p.cp,
                      ",ep=", p.ep, ",sp=", p.sequenceParallel ? "on" : "off",
                      ",zero=", p.zero, ",microbatch=", p.microbatchSize,
                      ",schedule=", scheduleName(p.schedule), ",vpp=", p.chunks,
                      ",recompute=", recompute, ",precision=",
                      std::string(precisionName(p.precision)),
                      p.fusedAttention ? ",attention=fused" : "",
                      p.overlapTpComm ? ",overlap-tp=on" : "",
                      p.zeroBucketElements > 0
                          ? absl::StrCat(",zero-bucket=",
                                         p.zeroBucketElements / 1000000)
                          : std::string(),
                      p.halfGradReduce ? ",grad-reduce=half" : "");
}

} // namespace cleave::cost
