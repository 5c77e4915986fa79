//===- Options.cpp - Command line of cleave-profile-mpi -------------------===//

#include "Options.h"

#include <cstdlib>
#include <limits>

namespace cleave::profile_mpi {

bool parseArgs(int argc, char **argv, Options &options, std::string &error) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    char *end = nullptr;
    if (arg == "--gemm" && i + 1 < argc) {
      options.gemm = std::strtoll(argv[++i], &end, 10);
      if (*end != '\0' || options.gemm < 1 || options.gemm > 8192) {
        error = "bad --gemm value '" + std::string(argv[i]) + "'";
        return false;
      }
      continue;
    }
    if ((arg == "--cores" || arg == "--rounds") && i + 1 < argc) {
      int &value = arg == "--cores" ? options.cores : options.rounds;
      long long limit = arg == "--cores" ? 4096 : 100;
      long long parsed = std::strtoll(argv[++i], &end, 10);
      if (*end != '\0' || parsed < 1 || parsed > limit) {
        error = "bad " + arg + " value '" + std::string(argv[i]) + "'";
        return false;
      }
      value = static_cast<int>(parsed);
      continue;
    }
    if (arg == "--seconds" && i + 1 < argc) {
      options.seconds = std::strtod(argv[++i], &end);
      if (*end != '\0' || !(options.seconds > 0)) {
        error = "bad --seconds value '" + std::string(argv[i]) + "'";
        return false;
      }
      continue;
    }
    long long bytes = std::strtoll(arg.c_str(), &end, 10);
    // MPI counts are ints: at most 2^31 - 1 fp32 elements.
    if (arg.empty() || *end != '\0' || bytes <= 0 ||
        bytes / 4 > std::numeric_limits<int>::max()) {
      error = "bad size '" + arg +
              "': expected a positive number of bytes "
              "below 8 GiB";
      return false;
    }
    options.sizes.push_back(bytes);
  }
  if (options.sizes.empty()) {
    error = "usage: cleave-profile-mpi [--seconds S] [--rounds N] [--gemm N "
            "[--cores C]] "
            "BYTES...";
    return false;
  }
  return true;
}

} // namespace cleave::profile_mpi
