//===- Backend.h - Where an executor's arena lives and its kernels run -*- C++ -*-===//
//
// The executor walks the same instruction stream on every backend; what
// differs is where the arena is (host memory or GPU memory), how bytes get
// in and out of it, and which kernels run the ops. A Backend owns those
// three things, so that Executor.cpp never touches arena memory itself:
// parameters are initialised and inputs cut in host memory, then copied in;
// the loss and checked parameters are copied out.
//
// Kernels may run asynchronously (the CUDA backend enqueues them on a
// stream). Copies *in* from host memory are ordered with the kernels
// (stream order); `copyOut` waits for everything enqueued before it;
// `synchronize` waits for all work, so that host timers and host reads see
// it finished.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_EXECUTOR_BACKEND_H
#define CLEAVE_RUNTIME_EXECUTOR_BACKEND_H

#include "cleave/runtime/executor/Fusion.h"
#include "cleave/runtime/executor/OpContext.h"

#include <cstdint>
#include <memory>
#include <string>

namespace cleave::executor {

class Backend {
public:
  virtual ~Backend() = default;

  /// "cpu", "cuda".
  virtual std::string name() const = 0;
  /// The kernel of `op` on this backend, null when it has none.
  virtual KernelFn findKernel(const std::string &op) const = 0;
  /// Whether this backend runs a matched group of instructions as one
  /// kernel (Fusion.h), and that kernel.
  virtual bool fuses(const FusedGroup &group,
                     const plan::Segment &segment) const {
    return false;
  }
  virtual FusedKernelFn fusedKernel(Fusion kind) const { return nullptr; }
  /// Whether `op`'s kernel reads and writes 16-bit (bf16, fp16) operands
  /// as stored; the executor otherwise widens them to fp32 copies around
  /// the kernel (Widening.h).
  virtual bool readsHalfStorage(const std::string &op) const {
    return false;
  }
  /// Whether backend memory is host memory (the executor then fills
  /// inputs in place instead of staging them).
  virtual bool hostAddressable() const = 0;

  /// Backend memory of `bytes` (64-byte aligned, zeroed); throws
  /// std::runtime_error when it cannot be had.
  virtual void *allocate(int64_t bytes) = 0;
  virtual void deallocate(void *data) = 0;
  /// Host memory the backend copies from and to fastest (pinned on CUDA),
  /// alive until freeHost. `copyIn` may still read it after returning,
  /// until the next synchronize().
  virtual void *allocateHost(int64_t bytes) = 0;
  virtual void freeHost(void *data) = 0;

  /// dst (backend memory) := src (host memory), ordered after the kernels
  /// enqueued before it.
  virtual void copyIn(void *dst, const void *src, int64_t bytes) = 0;
  /// dst (host memory) := src (backend memory), after every kernel
  /// enqueued before it has finished.
  virtual void copyOut(void *dst, const void *src, int64_t bytes) = 0;
  /// The same without waiting: dst (from allocateHost) holds the bytes
  /// after the next synchronize().
  virtual void copyOutAsync(void *dst, const void *src, int64_t bytes) = 0;
  /// Zeroes backend memory (ordered with the kernels).
  virtual void fillZero(void *dst, int64_t bytes) = 0;
  /// n elements of 16-bit float storage (`dtype` BF16 or F16) at `src` as fp32 at
  /// `dst`, and back, rounded to nearest even; both in backend memory and
  /// ordered with the kernels. How fp32 kernels run on the tensors a bf16
  /// plan stores in 16 bits (Widening.h); throws std::invalid_argument for
  /// another dtype.
  virtual void widen(const void *src, plan::DType dtype, float *dst,
                     int64_t n) = 0;
  virtual void narrow(const float *src, void *dst, plan::DType dtype,
                      int64_t n) = 0;
  /// Waits until all enqueued work is done.
  virtual void synchronize() = 0;
};

/// The host backend: the arena in host memory, the CPU kernels
/// (runtime/kernels, OpenBLAS), everything synchronous.
std::unique_ptr<Backend> createCpuBackend();

} // namespace cleave::executor

#endif // CLEAVE_RUNTIME_EXECUTOR_BACKEND_H
