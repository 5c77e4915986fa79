//===- Ops.h - The CUDA backend's kernels, by family ------------*- C++ -*-===//
//
// Each family maps graph-dialect, runtime.* and comm.* op names to a
// KernelFn that reads its operands from the OpContext (device pointers of
// the arena, in ODS order) and enqueues its work on context().compute. The
// semantics are the CPU kernels' (runtime/kernels, README "Semantics the
// op definitions leave open"), so that a plan gives the same numbers on
// both backends to fp32 rounding; test/unit/cuda checks every op against
// the CPU kernel on a GPU.
//
// The *Ops.cpp files are plain C++ (host code: operand checks, shapes,
// attribute parsing) and call launchers declared in kernels/*.h, whose
// definitions are in kernels/*.cu.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_CUDA_SRC_OPS_H
#define CLEAVE_RUNTIME_CUDA_SRC_OPS_H

#include "cleave/runtime/executor/Fusion.h"
#include "cleave/runtime/executor/OpContext.h"

#include <map>
#include <string>

namespace cleave::cuda {

using Registry = std::map<std::string, executor::KernelFn>;

/// add ... min, neg ... gelu, dropout, activation_grad, where, compare,
/// broadcast_to, runtime.accumulate and runtime.scale.
void registerElementwiseOps(Registry &registry);
/// reduce_sum, reduce_mean, reduce_max, reduce_max_grad.
void registerReductionOps(Registry &registry);
/// sgd_update, adamw_update.
void registerOptimizerOps(Registry &registry);
/// layer_norm, rms_norm and their grads.
void registerNormalizationOps(Registry &registry);
/// softmax (causal, query blocks), softmax_grad, rope.
void registerAttentionOps(Registry &registry);
/// cross_entropy and its grad.
void registerLossOps(Registry &registry);
/// gather, gather_grad.
void registerGatherOps(Registry &registry);
/// moe_gate, moe_dispatch, moe_combine and their grads.
void registerMoeOps(Registry &registry);
/// conv2d and its input and filter gradients (im2col and cuBLASLt).
void registerConvOps(Registry &registry);
/// matmul through cuBLASLt.
void registerMatmulOps(Registry &registry);
/// reshape, cast, stop_gradient, transpose, slice, slice_grad, concat,
/// split, shard_slice, copy_to_group, runtime.copy.
void registerDataMovementOps(Registry &registry);
/// runtime.zero and comm.* (collectives through the Communicator).
void registerRuntimeOps(Registry &registry);

/// Wraps the ops the CPU runs on integer tensors (add ... min, mod,
/// bitshift, compare, where, cast, gather, transpose, slice, concat,
/// split): integer operands run on the host with the CPU kernels, float
/// ones on the device kernels registered before. Registered last.
void registerHostIntegerOps(Registry &registry);

/// Which matched groups run fused (FusedOps.cpp): those with a cuBLASLt
/// epilogue (tanh-GELU, ReLU without its input kept) or none needed.
bool fuses(const executor::FusedGroup &group, const plan::Segment &segment);
/// The kernel of a fused group.
executor::FusedKernelFn fusedKernel(executor::Fusion kind);

/// Every CUDA kernel, by op name.
const Registry &registry();

} // namespace cleave::cuda

#endif // CLEAVE_RUNTIME_CUDA_SRC_OPS_H
