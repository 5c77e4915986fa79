//===- Context.cpp - The process's GPU ------------------------------------===//

#include "Context.h"

#include <memory>
#include <stdexcept>

namespace cleave::cuda {

namespace {
std::unique_ptr<Context> gContext;
} // namespace

void check(cudaError_t status, const char *what) {
  if (status == cudaSuccess)
    return;
  throw std::runtime_error(std::string(what) + ": " +
                           cudaGetErrorName(status) + " (" +
                           cudaGetErrorString(status) + ")");
}

void check(cublasStatus_t status, const char *what) {
  if (status == CUBLAS_STATUS_SUCCESS)
    return;
  throw std::runtime_error(std::string(what) + ": " +
                           cublasLtGetStatusName(status) + " (" +
                           cublasLtGetStatusString(status) + ")");
}

Context &context() {
  if (!gContext)
    throw std::runtime_error("the CUDA backend has not been started");
  return *gContext;
}

void createContext(int device) {
  auto c = std::make_unique<Context>();
  c->device = device;
  CLEAVE_CUDA_CHECK(cudaSetDevice(device));
  CLEAVE_CUDA_CHECK(cudaGetDeviceProperties(&c->properties, device));
  CLEAVE_CUDA_CHECK(
      cudaStreamCreateWithFlags(&c->compute, cudaStreamNonBlocking));
  CLEAVE_CUDA_CHECK(cublasLtCreate(&c->lt));
  c->ltWorkspaceBytes = size_t(32) << 20;
  CLEAVE_CUDA_CHECK(cudaMalloc(&c->ltWorkspace, c->ltWorkspaceBytes));
  gContext = std::move(c);
}

void destroyContext() {
  if (!gContext)
    return;
  Context &c = *gContext;
  cudaStreamSynchronize(c.compute);
  cudaFree(c.ltWorkspace);
  cublasLtDestroy(c.lt);
  cudaStreamDestroy(c.compute);
  gContext.reset();
}

Scratch::Scratch(size_t bytes) {
  if (bytes == 0)
    return;
  CLEAVE_CUDA_CHECK(cudaMallocAsync(&data_, bytes, context().compute));
}

Scratch::~Scratch() {
  if (data_)
    cudaFreeAsync(data_, context().compute);
}

} // namespace cleave::cuda
