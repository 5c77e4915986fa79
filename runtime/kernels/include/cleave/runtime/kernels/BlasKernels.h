//===- BlasKernels.h - Which OpenBLAS kernels this machine runs -*- C++ -*-===//
//
// Debian's OpenBLAS is built with DYNAMIC_ARCH: when the library loads it
// picks one set of kernels ("core type") for the CPU from its model, and
// the environment variable OPENBLAS_CORETYPE overrides that pick. The pick
// by model is not always the fastest: on an AMD EPYC with AVX-512 (Zen 4,
// whose 512-bit units run as two 256-bit halves) OpenBLAS 0.3.21 loads its
// Cooperlake kernels, and its Haswell (AVX2) kernels ran 4-6% faster there
// (measured: 106-109 against 101-104 GFLOP/s, one thread, the GPT GEMMs of
// bench/runtime_speed.py; the 1-rank training step 940 against 996 ms).
//
// So `cleave profile --backend cpu`, which measures the machine, also times
// each core type the CPU can run (probeCoreTypes in the profiler, each in
// a `cleave-worker --blas-probe` process of its own) and keeps the fastest
// if it beats the default by more than the noise (chooseCoreType), in a
// small cache file keyed by the CPU model and the OpenBLAS build. The
// programs that run kernels (cleave-worker, the profiler) call
// adoptChosenBlasKernels first thing: where OPENBLAS_CORETYPE is unset and
// the cache holds a choice for this CPU and build, they re-execute
// themselves with it set, since OpenBLAS reads it only when it loads. A
// value the user sets is never overridden, and CLEAVE_BLAS_CORETYPE=default
// turns the choice off.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_KERNELS_BLASKERNELS_H
#define CLEAVE_RUNTIME_KERNELS_BLASKERNELS_H

#include <optional>
#include <string>
#include <vector>

namespace cleave::kernels {

/// The loaded OpenBLAS's core type ("Haswell") and build configuration, or
/// empty strings where the BLAS is not OpenBLAS.
std::string openBlasCoreName();
std::string openBlasConfig();

/// GFLOP/s of this process's BLAS on fp32 GEMMs of the shapes a small
/// transformer's layers run (about `seconds` of work, best of repeats).
double probeGemmRate(double seconds = 0.3);

/// The OpenBLAS core types worth timing on this CPU: those its instruction
/// set (the `flags` of /proc/cpuinfo) can run, among the x86 kernels that
/// differ in vector width. Empty off x86 or where /proc/cpuinfo is missing.
std::vector<std::string> candidateCoreTypes(const std::string &cpuFlags);

/// This CPU's /proc/cpuinfo flags and model name (empty where unknown).
std::string cpuFlags();
std::string cpuModelName();

struct CoreTypeRate {
  std::string coreType;
  double gflops = 0;
};

/// The core type to use: the fastest of `rates` if it beats the default's
/// rate by more than `margin` (a fraction), else `defaultCore`.
std::string chooseCoreType(const std::vector<CoreTypeRate> &rates,
                           const std::string &defaultCore,
                           double margin = 0.02);

/// The choice that stands for oneDNN's GEMMs instead of any OpenBLAS
/// kernel set (GemmLibrary.h): adopting it sets CLEAVE_GEMM=onednn.
inline constexpr const char *kOneDnnChoice = "onednn";

/// The cache file: $CLEAVE_CACHE_DIR, else $XDG_CACHE_HOME/cleave, else
/// $HOME/.cache/cleave, then "openblas-kernels"; empty if none is known.
std::string choiceCachePath();

/// The key of this machine's choice: the CPU model and the OpenBLAS build.
std::string choiceKey();

/// The choice stored for `key` in `path`, if any.
std::optional<std::string> readChoice(const std::string &path,
                                      const std::string &key);

/// Stores `coreType` for `key` in `path` (other keys kept; written to a
/// temporary file and renamed, so concurrent readers see one or the other).
bool writeChoice(const std::string &path, const std::string &key,
                 const std::string &coreType);

/// See the file comment: re-executes this program (argv as main got it)
/// with OPENBLAS_CORETYPE set to the cached choice when it is unset and
/// the choice differs from the kernels loaded. Returns when there is
/// nothing to do, or when the re-execution fails.
void adoptChosenBlasKernels(char **argv);

} // namespace cleave::kernels

#endif // CLEAVE_RUNTIME_KERNELS_BLASKERNELS_H
