//===- Registry.cpp - Every CUDA kernel by op name ------------------------===//

#include "Ops.h"

namespace cleave::cuda {

const Registry &registry() {
  static const Registry r = [] {
    Registry all;
    registerElementwiseOps(all);
    registerReductionOps(all);
    registerOptimizerOps(all);
    registerNormalizationOps(all);
    registerAttentionOps(all);
    registerLossOps(all);
    registerGatherOps(all);
    registerMoeOps(all);
    registerMatmulOps(all);
    registerConvOps(all);
    registerDataMovementOps(all);
    registerRuntimeOps(all);
    registerHostIntegerOps(all);
    return all;
  }();
  return r;
}

} // namespace cleave::cuda
