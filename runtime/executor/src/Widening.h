//===- Widening.h - fp32 kernels on 16-bit storage --------------*- C++ -*-===//
//
// A bf16 plan stores activations, their gradients and the collectives'
// buffers in 16 bits, and computes in fp32 (as Megatron's mixed precision
// does inside its kernels). The kernels here are fp32 kernels: around each
// instruction that touches a 16-bit tensor (other than collectives, which
// carry the storage type, and casts, which convert it), the executor
// widens every such operand and result into fp32 scratch, runs the
// kernel on the scratch views, and narrows the results back (rounded to
// nearest even). Results are widened too, not only allocated: kernels that
// accumulate into their output or update in place read it. Views of one
// tensor (in place, or an instruction group) share one scratch buffer.
//
// This costs a conversion pass per operand; it is the reference path of
// the CPU backend and the first of the CUDA backend, whose GEMMs could
// read bf16 directly.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_EXECUTOR_SRC_WIDENING_H
#define CLEAVE_RUNTIME_EXECUTOR_SRC_WIDENING_H

#include "cleave/runtime/executor/Backend.h"
#include "cleave/runtime/executor/OpContext.h"

#include <map>
#include <string>
#include <vector>

namespace cleave::executor {

/// Whether instruction `op` with these views runs widened: it computes
/// (no collective, copy or cast, which handle the storage type
/// themselves), and some view is 16-bit float storage.
bool needsWidening(const std::string &op, const OpContext &context);

class Widening {
public:
  explicit Widening(Backend &backend) : backend_(backend) {}
  ~Widening();
  Widening(const Widening &) = delete;
  Widening &operator=(const Widening &) = delete;

  /// Points every 16-bit view of `context` at fp32 scratch holding its
  /// values (the contexts of one group may be widened together).
  void widen(OpContext &context);
  /// Rounds the widened results back into their tensors, and frees the
  /// scratch for the next instruction (the buffers are kept).
  void narrow();
  /// Forgets the widened views without writing them back (the instruction
  /// failed).
  void discard();

private:
  struct Slot {
    float *data = nullptr;
    int64_t elements = 0;
  };
  struct Widened {
    float *scratch;
    TensorView original;
    bool written;
  };
  float *take(int64_t elements);

  Backend &backend_;
  /// Scratch buffers, reused from instruction to instruction; the first
  /// `used_` belong to the instruction being run.
  std::vector<Slot> slots_;
  size_t used_ = 0;
  /// By the tensor's address: what it was widened into.
  std::map<const void *, Widened> widened_;
};

} // namespace cleave::executor

#endif // CLEAVE_RUNTIME_EXECUTOR_SRC_WIDENING_H
