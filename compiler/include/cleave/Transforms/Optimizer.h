//===- Optimizer.h - The optimizers a training step can take ----*- C++ -*-===//
//
// Plain C++: the planners count its state, the training-step builder emits
// its update, the lowering records its name in the plan artifact (where
// it stays text: TrainingConfig.optimizer).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TRANSFORMS_OPTIMIZER_H
#define CLEAVE_TRANSFORMS_OPTIMIZER_H

#include <optional>
#include <string_view>

namespace cleave {

enum class Optimizer {
  AdamW, ///< graph.adamw_update: two moments per parameter
  Sgd,   ///< graph.sgd_update with momentum: one buffer per parameter
  None,  ///< an inference plan: no backward pass, no update
};

/// "adamw", "sgd" or "none"; unset for any other text.
inline std::optional<Optimizer> parseOptimizer(std::string_view name) {
  if (name == "adamw")
    return Optimizer::AdamW;
  if (name == "sgd")
    return Optimizer::Sgd;
  if (name == "none")
    return Optimizer::None;
  return std::nullopt;
}

inline const char *optimizerName(Optimizer optimizer) {
  switch (optimizer) {
  case Optimizer::AdamW:
    return "adamw";
  case Optimizer::Sgd:
    return "sgd";
  case Optimizer::None:
    return "none";
  }
  return "adamw";
}

/// fp32 values of state the optimizer keeps per parameter.
inline int optimizerStates(Optimizer optimizer) {
  return optimizer == Optimizer::AdamW ? 2 : optimizer == Optimizer::Sgd ? 1
                                                                         : 0;
}

/// True when the step has a backward pass.
inline bool trains(Optimizer optimizer) { return optimizer != Optimizer::None; }

} // namespace cleave

#endif // CLEAVE_TRANSFORMS_OPTIMIZER_H
