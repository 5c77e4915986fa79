//===- CpuBackend.cpp - The host backend of the executor ------------------===//
//
// Arena and staging in host memory, the CPU kernel registry (OpContext.cpp),
// every operation synchronous: copies are memcpy, and there is nothing to
// wait for.
//
//===----------------------------------------------------------------------===//

#include "cleave/runtime/executor/Backend.h"

#include "Registry.h"

#include "cleave/runtime/comm/Bfloat16.h"
#include "cleave/runtime/comm/Float16.h"

#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace cleave::executor {

namespace {

constexpr int64_t kAlignment = 64;

void *alignedZeroed(int64_t bytes) {
  int64_t size = std::max<int64_t>(bytes, kAlignment);
  size = (size + kAlignment - 1) / kAlignment * kAlignment;
  void *data = std::aligned_alloc(kAlignment, size);
  if (!data)
    throw std::runtime_error("cannot allocate " + std::to_string(bytes) +
                             " bytes of host memory");
  std::memset(data, 0, size);
  return data;
}

class CpuBackend final : public Backend {
public:
  std::string name() const override { return "cpu"; }
  KernelFn findKernel(const std::string &op) const override {
    return executor::findKernel(op);
  }
  /// Every group the matcher finds: each has a CPU kernel.
  bool fuses(const FusedGroup &, const plan::Segment &) const override {
    return true;
  }
  FusedKernelFn fusedKernel(Fusion kind) const override {
    return cpuFusedKernel(kind);
  }
  bool hostAddressable() const override { return true; }
  void *allocate(int64_t bytes) override { return alignedZeroed(bytes); }
  void deallocate(void *data) override { std::free(data); }
  void *allocateHost(int64_t bytes) override { return alignedZeroed(bytes); }
  void freeHost(void *data) override { std::free(data); }
  void copyIn(void *dst, const void *src, int64_t bytes) override {
    if (dst != src)
      std::memmove(dst, src, bytes);
  }
  void copyOut(void *dst, const void *src, int64_t bytes) override {
    copyIn(dst, src, bytes);
  }
  void copyOutAsync(void *dst, const void *src, int64_t bytes) override {
    copyIn(dst, src, bytes);
  }
  void fillZero(void *dst, int64_t bytes) override {
    std::memset(dst, 0, bytes);
  }
  void widen(const void *src, plan::DType dtype, float *dst,
             int64_t n) override {
    const uint16_t *in = static_cast<const uint16_t *>(src);
    if (dtype == plan::BF16)
      return comm::bf16ToFloats(in, dst, n);
    if (dtype == plan::F16)
      return comm::f16ToFloats(in, dst, n);
    throw std::invalid_argument("widen: not a 16-bit float type");
  }
  void narrow(const float *src, void *dst, plan::DType dtype,
              int64_t n) override {
    uint16_t *out = static_cast<uint16_t *>(dst);
    if (dtype == plan::BF16)
      return comm::floatsToBf16(src, out, n);
    if (dtype == plan::F16)
      return comm::floatsToF16(src, out, n);
    throw std::invalid_argument("narrow: not a 16-bit float type");
  }
  void synchronize() override {}
};

} // namespace

std::unique_ptr<Backend> createCpuBackend() {
  return std::make_unique<CpuBackend>();
}

} // namespace cleave::executor
