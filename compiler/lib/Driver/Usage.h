//===- Usage.h - The driver's bad-input status ------------------*- C++ -*-===//
//
// Private to CleaveDriver: what a planner says of input the user can fix
// (a flag, a knob), which the tool reports as bad usage (exit code 2).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_DRIVER_USAGE_H
#define CLEAVE_DRIVER_USAGE_H

#include "absl/status/status.h"
#include "llvm/ADT/Twine.h"

namespace cleave::driver {

inline absl::Status usage(const llvm::Twine &message) {
  return absl::InvalidArgumentError(message.str());
}

} // namespace cleave::driver

#endif // CLEAVE_DRIVER_USAGE_H
