//===- Options.h - Command line of cleave-profile-mpi -----------*- C++ -*-===//

#ifndef CLEAVE_TOOLS_CLEAVE_PROFILE_MPI_OPTIONS_H
#define CLEAVE_TOOLS_CLEAVE_PROFILE_MPI_OPTIONS_H

#include <string>
#include <vector>

namespace cleave::profile_mpi {

/// --seconds S (target time per collective and size), --rounds N, --gemm
/// N, --cores C, then the sizes in bytes.
struct Options {
  double seconds = 0.05;
  int rounds = 2;
  long long gemm = 0;
  int cores = 0;
  std::vector<long long> sizes;
};


/// Parses argv; on error returns false with `error` set.
bool parseArgs(int argc, char **argv, Options &options, std::string &error);

} // namespace cleave::profile_mpi

#endif // CLEAVE_TOOLS_CLEAVE_PROFILE_MPI_OPTIONS_H
