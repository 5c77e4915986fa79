//===- LossScaling.h - Loss scaling settings: parse and print ---*- C++ -*-===//
//
// `cleave compile --loss-scale` and `cleave inspect` speak one text form of
// TrainingConfig.loss_scaling (plan.proto):
//
//   none                       gradients as the loss seeds them
//   dynamic                    PyTorch GradScaler's defaults: initial 2^16,
//                              x2 after 2000 clean steps, x0.5 on overflow
//   dynamic,init=1024,window=500,growth=2,backoff=0.5,min=1
//   static,init=128  (or just a number, "128")
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_PLAN_LOSSSCALING_H
#define CLEAVE_RUNTIME_PLAN_LOSSSCALING_H

#include "cleave/runtime/plan/plan.pb.h"

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

#include <string>

namespace cleave::plan {

/// Dynamic loss scaling with PyTorch GradScaler's defaults (and Megatron's
/// floor of 1).
LossScaling defaultDynamicLossScaling();

/// Parses the text form above; errors name the offending field.
absl::StatusOr<LossScaling> parseLossScaling(absl::string_view text);

/// The text form, every field given ("none" for NONE).
std::string lossScalingText(const LossScaling &scaling);

} // namespace cleave::plan

#endif // CLEAVE_RUNTIME_PLAN_LOSSSCALING_H
