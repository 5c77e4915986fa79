//===- Pipelines.h - The pass pipelines the tools run -----------*- C++ -*-===//

#ifndef CLEAVE_PIPELINES_H
#define CLEAVE_PIPELINES_H

#include "cleave/Transforms/Optimizer.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include <string>

namespace cleave {

struct TrainingPipelineOptions {
  /// Append a cross-entropy loss on @forward's first output first (for
  /// inference graphs such as exported ONNX classifiers).
  bool appendLoss = false;
  Optimizer optimizer = Optimizer::AdamW;
  double lr = 1e-3;
};

/// Whether @forward lacks the scalar loss that training needs.
bool needsLoss(mlir::ModuleOp module);

/// Forward graph -> @train_step (backward and optimizer update).
void buildTrainingPipeline(mlir::OpPassManager &pm,
                           const TrainingPipelineOptions &options);

} // namespace cleave

#endif // CLEAVE_PIPELINES_H
