//===- CudaBackend.cpp - The executor's backend on one GPU ----------------===//

#include "cleave/runtime/cuda/CudaBackend.h"

#include "Context.h"
#include "Ops.h"
#include "kernels/Convert.h"

#include "absl/strings/str_cat.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace cleave::cuda {

namespace {

/// One backend (one Context) per process at a time.
bool gStarted = false;

/// Whether a 16-bit storage type is bf16 (else fp16); throws for others.
bool halfIsBf16(plan::DType dtype) {
  if (dtype != plan::BF16 && dtype != plan::F16)
    throw std::invalid_argument("widens and narrows bf16 or fp16 only");
  return dtype == plan::BF16;
}

class CudaBackend final : public executor::Backend {
public:
  ~CudaBackend() override {
    destroyContext();
    gStarted = false;
  }

  std::string name() const override { return "cuda"; }
  executor::KernelFn findKernel(const std::string &op) const override {
    auto it = registry().find(op);
    return it == registry().end() ? nullptr : it->second;
  }
  bool fuses(const executor::FusedGroup &group,
             const plan::Segment &segment) const override {
    return cuda::fuses(group, segment);
  }
  executor::FusedKernelFn
  fusedKernel(executor::Fusion kind) const override {
    return cuda::fusedKernel(kind);
  }
  bool hostAddressable() const override { return false; }
  /// GEMMs on the tensor cores in the storage type (gemmStored).
  bool readsHalfStorage(const std::string &op) const override {
    return op == "graph.matmul";
  }

  void *allocate(int64_t bytes) override {
    void *data = nullptr;
    size_t size = static_cast<size_t>(std::max<int64_t>(bytes, 64));
    CLEAVE_CUDA_CHECK(cudaMalloc(&data, size));
    // On the compute stream (non-blocking, so not ordered after the legacy
    // default stream): the copies in that follow must land after it.
    CLEAVE_CUDA_CHECK(cudaMemsetAsync(data, 0, size, context().compute));
    return data;
  }
  void deallocate(void *data) override { cudaFree(data); }
  void *allocateHost(int64_t bytes) override {
    void *data = nullptr;
    size_t size = static_cast<size_t>(std::max<int64_t>(bytes, 64));
    CLEAVE_CUDA_CHECK(cudaMallocHost(&data, size));
    std::memset(data, 0, size);
    return data;
  }
  void freeHost(void *data) override { cudaFreeHost(data); }

  void copyIn(void *dst, const void *src, int64_t bytes) override {
    CLEAVE_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice,
                                      context().compute));
  }
  void copyOut(void *dst, const void *src, int64_t bytes) override {
    copyOutAsync(dst, src, bytes);
    synchronize();
  }
  void copyOutAsync(void *dst, const void *src, int64_t bytes) override {
    CLEAVE_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost,
                                      context().compute));
  }
  void fillZero(void *dst, int64_t bytes) override {
    CLEAVE_CUDA_CHECK(cudaMemsetAsync(dst, 0, bytes, context().compute));
  }
  void widen(const void *src, plan::DType dtype, float *dst,
             int64_t n) override {
    convertFromHalf(src, dst, n, halfIsBf16(dtype), context().compute);
  }
  void narrow(const float *src, void *dst, plan::DType dtype,
              int64_t n) override {
    convertToHalf(src, dst, n, halfIsBf16(dtype), context().compute);
  }
  void synchronize() override {
    CLEAVE_CUDA_CHECK(cudaStreamSynchronize(context().compute));
  }
};

} // namespace

absl::StatusOr<GemmPrecision> parseGemmPrecision(const std::string &name) {
  if (name == "fp32" || name.empty())
    return GemmPrecision::Fp32;
  if (name == "tf32")
    return GemmPrecision::Tf32;
  if (name == "bf16")
    return GemmPrecision::Bf16;
  if (name == "fp16")
    return GemmPrecision::Fp16;
  return absl::InvalidArgumentError(absl::StrCat(
      "precision '", name, "': the CUDA backend multiplies in fp32, tf32, "
      "bf16 or fp16"));
}

void setGemmPrecision(GemmPrecision precision) {
  context().gemmPrecision = precision;
}

std::vector<std::string> kernelOps() {
  std::vector<std::string> ops;
  for (const auto &[name, fn] : registry())
    ops.push_back(name);
  return ops;
}

absl::StatusOr<int> probeCuda() {
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    if (status == cudaSuccess)
      status = cudaErrorNoDevice;
    // The error sticks to the runtime's state otherwise.
    cudaGetLastError();
    return absl::FailedPreconditionError(absl::StrCat(
        "no CUDA GPU found: ", cudaGetErrorName(status), " (",
        cudaGetErrorString(status), ")"));
  }
  return count;
}

absl::StatusOr<std::unique_ptr<executor::Backend>>
createCudaBackend(int localRank, GemmPrecision precision) {
  absl::StatusOr<int> count = probeCuda();
  if (!count.ok())
    return count.status();
  if (gStarted)
    return absl::FailedPreconditionError(
        "the CUDA backend runs once per process");
  int device = localRank < 0 ? 0 : localRank % *count;
  try {
    createContext(device);
    context().gemmPrecision = precision;
  } catch (const std::exception &e) {
    return absl::InternalError(absl::StrCat("starting the CUDA backend on GPU ",
                                            device, ": ", e.what()));
  }
  gStarted = true;
  return std::unique_ptr<executor::Backend>(new CudaBackend());
}

} // namespace cleave::cuda
