//===- LoweringPipeline.h - The lowering's passes in order ------*- C++ -*-===//
//
// A model and its knobs to one training step per pipeline stage, as
// passes: lowerToPlan (PlanLowering.h) runs these three parts, checking the
// module between them, then emits each stage's program; cleave-opt runs
// them as one pipeline, `cleave-lower-to-stages`, with the knobs as its
// options (test/Lowering).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_LOWERING_LOWERINGPIPELINE_H
#define CLEAVE_LOWERING_LOWERINGPIPELINE_H

#include "cleave/Lowering/PlanLowering.h"

#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/ArrayRef.h"

#include <string>

namespace cleave::lowering {

/// The loss an inference graph trains on (`appendLoss`) and, with
/// attention=fused, graph.attention in place of its unfused ops.
void addLossAndFusionPasses(mlir::OpPassManager &pm,
                            const LoweringOptions &options, bool appendLoss);

/// Expert parallelism, 16-bit storage, then context and tensor parallelism
/// (each an intra-op search and the SPMD partitioner on its axis).
void addPartitionPasses(mlir::OpPassManager &pm,
                        const LoweringOptions &options);

/// Pipeline chunks of `layersPerStage` layers (empty: an even split) and,
/// for a training plan, each chunk's training step (`recomputeNames`, as
/// text: the options' recomputation where empty).
void addStagePasses(mlir::OpPassManager &pm, const LoweringOptions &options,
                    llvm::ArrayRef<int64_t> layersPerStage,
                    llvm::ArrayRef<std::string> recomputeNames = {});

/// Registers `cleave-lower-to-stages` and the lowering's passes.
void registerLoweringPipeline();

} // namespace cleave::lowering

#endif // CLEAVE_LOWERING_LOWERINGPIPELINE_H
