//===- Registry.h - Registration of the executor's kernels ----------------===//

#ifndef CLEAVE_RUNTIME_EXECUTOR_SRC_REGISTRY_H
#define CLEAVE_RUNTIME_EXECUTOR_SRC_REGISTRY_H

#include "cleave/runtime/executor/Fusion.h"
#include "cleave/runtime/executor/OpAttributes.h"
#include "cleave/runtime/executor/OpContext.h"
#include "cleave/runtime/kernels/Conv.h"
#include "cleave/runtime/kernels/FlashAttention.h"
#include "cleave/runtime/kernels/IntegerElementwise.h"

#include <map>
#include <string>

namespace cleave::executor {

using Registry = std::map<std::string, KernelFn>;

/// Forward graph ops (ComputeKernels.cpp).
void registerComputeKernels(Registry &registry);
/// Backward graph ops and optimizer updates (GradKernels.cpp).
void registerGradKernels(Registry &registry);
/// runtime.* and comm.* ops (RuntimeKernels.cpp).
void registerRuntimeKernels(Registry &registry);
/// graph.attention's and graph.attention_grad's kernel options from the
/// instruction (scale, causal, query_blocks, and the additive mask when
/// the operand numbered `maskOperand` is there) for the kernels' shapes.
kernels::FlashAttentionOptions
attentionOptions(const OpContext &c, const kernels::AttentionShapes &shapes,
                 size_t maskOperand);
/// The kernels that take integer types or any type (IntegerKernels.cpp;
/// plan::isIntegerDType says which are integers): binary arithmetic and
/// mod on two integer operands of one type, compare and where on f32, bool
/// or integer values, and a cast between any two dtypes.
void integerBinaryKernel(OpContext &c, kernels::IntegerOp op);
void compareAnyKernel(OpContext &c);
void whereAnyKernel(OpContext &c);
void convertElements(const TensorView &in, const TensorView &out);
/// graph.gather, transpose, slice, concat or split (`op`) on tensors of
/// any dtype, moved by their elements' width.
void moveAnyKernel(OpContext &c, const std::string &op);
/// The CPU backend's kernel for a fused group (CpuFusedKernels.cpp).
FusedKernelFn cpuFusedKernel(Fusion kind);


} // namespace cleave::executor

#endif // CLEAVE_RUNTIME_EXECUTOR_SRC_REGISTRY_H
