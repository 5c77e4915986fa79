//===- main.cpp - The CUDA profiler without the compiler ------------------===//
//
// Usage: cleave-profile-cuda [--quick] -o PROFILE
//
// What `cleave profile --backend cuda` measures (runtime/cuda CudaProfiler:
// GEMMs through cuBLASLt, memory bandwidth, NCCL collectives across the
// node's GPUs), in a binary that links no MLIR, so that it can travel to a
// GPU machine that has none of the compiler's libraries (the device
// bundle, scripts/cuda-device-bundle.sh). Progress goes to stderr.
//
//===----------------------------------------------------------------------===//

#include "cleave/cost_model/Profile.h"
#include "cleave/runtime/cuda/CudaProfiler.h"

#include <cstdio>
#include <fstream>
#include <string>

int main(int argc, char **argv) {
  cleave::cuda::CudaProfileOptions options;
  std::string out;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--quick") {
      options.quick = true;
    } else if (arg == "-o" && i + 1 < argc) {
      out = argv[++i];
    } else {
      std::fprintf(stderr,
                   "cleave-profile-cuda: unknown argument '%s'\n"
                   "usage: cleave-profile-cuda [--quick] -o PROFILE\n",
                   arg.c_str());
      return 2;
    }
  }
  if (out.empty()) {
    std::fprintf(stderr, "cleave-profile-cuda: -o PROFILE is required\n");
    return 2;
  }
  options.progress = [](const std::string &line) {
    std::fprintf(stderr, "profile: %s\n", line.c_str());
  };
  absl::StatusOr<cleave::cost::Profile> profile =
      cleave::cuda::profileCuda(options);
  if (!profile.ok()) {
    std::fprintf(stderr, "cleave-profile-cuda: %s\n",
                 std::string(profile.status().message()).c_str());
    return 1;
  }
  std::ofstream file(out);
  file << cleave::cost::formatProfile(*profile,
                                      cleave::cuda::cudaProfileComment(options));
  if (!file) {
    std::fprintf(stderr, "cleave-profile-cuda: cannot write %s\n",
                 out.c_str());
    return 1;
  }
  return 0;
}
