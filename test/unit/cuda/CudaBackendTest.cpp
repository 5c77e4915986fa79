//===- CudaBackendTest.cpp - Starting the CUDA backend --------------------===//
//
// These run everywhere: without a GPU the probe must explain why (this is
// what `--backend cuda` prints), with one it must find it.

#include "cleave/runtime/cuda/CudaBackend.h"

#include <gtest/gtest.h>

#include <cstdlib>

TEST(CudaBackend, ProbeFindsAGpuOrSaysWhyNot) {
  absl::StatusOr<int> gpus = cleave::cuda::probeCuda();
  if (gpus.ok()) {
    EXPECT_GE(*gpus, 1);
    return;
  }
  std::string message(gpus.status().message());
  EXPECT_NE(message.find("no CUDA GPU found: cudaError"), std::string::npos)
      << message;
  // Starting the backend fails the same way, without crashing.
  auto backend = cleave::cuda::createCudaBackend(0);
  ASSERT_FALSE(backend.ok());
  EXPECT_NE(std::string(backend.status().message()).find("no CUDA GPU found"),
            std::string::npos);
}
