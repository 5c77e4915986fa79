//===- LossScaling.cpp - Loss scaling settings: parse and print -----------===//

#include "cleave/runtime/plan/LossScaling.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

#include <cmath>
#include <vector>

namespace cleave::plan {

LossScaling defaultDynamicLossScaling() {
  LossScaling s;
  s.set_mode(LossScaling::DYNAMIC);
  s.set_initial_scale(65536.0);
  s.set_growth_factor(2.0);
  s.set_backoff_factor(0.5);
  s.set_growth_interval(2000);
  s.set_min_scale(1.0);
  return s;
}

absl::StatusOr<LossScaling> parseLossScaling(absl::string_view text) {
  std::vector<absl::string_view> parts = absl::StrSplit(text, ',');
  absl::string_view head = parts.front();
  LossScaling s;
  double number = 0;
  if (head == "none") {
    if (parts.size() > 1)
      return absl::InvalidArgumentError("'none' takes no fields");
    return s;
  }
  if (head == "dynamic") {
    s = defaultDynamicLossScaling();
  } else if (head == "static" || absl::SimpleAtod(head, &number)) {
    s.set_mode(LossScaling::STATIC);
    s.set_initial_scale(head == "static" ? 65536.0 : number);
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", head, "' is not none, dynamic, static or a number"));
  }
  bool dynamic = s.mode() == LossScaling::DYNAMIC;
  for (size_t i = 1; i < parts.size(); ++i) {
    std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(parts[i], absl::MaxSplits('=', 1));
    auto [key, value] = kv;
    double v = 0;
    if (!absl::SimpleAtod(value, &v) || !std::isfinite(v))
      return absl::InvalidArgumentError(
          absl::StrCat("field '", parts[i], "' is not NAME=NUMBER"));
    auto dynamicOnly = [&]() -> absl::Status {
      if (dynamic)
        return absl::OkStatus();
      return absl::InvalidArgumentError(
          absl::StrCat("field '", key, "' is for dynamic scaling only"));
    };
    if (key == "init") {
      if (!(v > 0))
        return absl::InvalidArgumentError(
            absl::StrCat("init=", value, ": the scale must be above 0"));
      s.set_initial_scale(v);
    } else if (key == "window") {
      if (absl::Status st = dynamicOnly(); !st.ok())
        return st;
      if (v < 1 || v != std::floor(v))
        return absl::InvalidArgumentError(absl::StrCat(
            "window=", value, ": a whole number of steps, 1 or more"));
      s.set_growth_interval(static_cast<int64_t>(v));
    } else if (key == "growth") {
      if (absl::Status st = dynamicOnly(); !st.ok())
        return st;
      if (!(v >= 1))
        return absl::InvalidArgumentError(
            absl::StrCat("growth=", value, ": 1 or more"));
      s.set_growth_factor(v);
    } else if (key == "backoff") {
      if (absl::Status st = dynamicOnly(); !st.ok())
        return st;
      if (!(v > 0 && v <= 1))
        return absl::InvalidArgumentError(
            absl::StrCat("backoff=", value, ": above 0, at most 1"));
      s.set_backoff_factor(v);
    } else if (key == "min") {
      if (absl::Status st = dynamicOnly(); !st.ok())
        return st;
      if (!(v > 0))
        return absl::InvalidArgumentError(
            absl::StrCat("min=", value, ": above 0"));
      s.set_min_scale(v);
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown field '", key,
          "' (known: init, window, growth, backoff, min)"));
    }
  }
  return s;
}

std::string lossScalingText(const LossScaling &s) {
  switch (s.mode()) {
  case LossScaling::STATIC:
    return absl::StrCat("static,init=", s.initial_scale());
  case LossScaling::DYNAMIC:
    return absl::StrCat("dynamic,init=", s.initial_scale(),
                        ",window=", s.growth_interval(),
                        ",growth=", s.growth_factor(),
                        ",backoff=", s.backoff_factor(),
                        ",min=", s.min_scale());
  default:
    return "none";
  }
}

} // namespace cleave::plan
