//===- BlasKernels.cpp - Which OpenBLAS kernels this machine runs ---------===//

#include "cleave/runtime/kernels/BlasKernels.h"

#include "Gemm.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace cleave::kernels {

namespace {

/// OpenBLAS's own functions, looked up rather than linked: the generic
/// BLAS interface may be another implementation.
std::string openBlasString(const char *symbol) {
  using Get = char *(*)();
  auto get = reinterpret_cast<Get>(dlsym(RTLD_DEFAULT, symbol));
  const char *value = get ? get() : nullptr;
  return value ? std::string(value) : std::string();
}

std::string procCpuinfoField(const std::string &field) {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line))
    if (line.rfind(field, 0) == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos && colon + 2 <= line.size())
        return line.substr(colon + 2);
      return "";
    }
  return "";
}

/// Keys and core types are one line each, tab-separated; a key holds no
/// tab or newline (they become spaces).
std::string oneLine(std::string s) {
  std::replace(s.begin(), s.end(), '\t', ' ');
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

std::map<std::string, std::string> readAll(const std::string &path) {
  std::map<std::string, std::string> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    size_t tab = line.rfind('\t');
    if (tab != std::string::npos && tab > 0 && tab + 1 < line.size())
      out[line.substr(0, tab)] = line.substr(tab + 1);
  }
  return out;
}

bool makeDirectories(const std::string &dir) {
  for (size_t slash = dir.find('/', 1);; slash = dir.find('/', slash + 1)) {
    std::string prefix =
        slash == std::string::npos ? dir : dir.substr(0, slash);
    if (mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST)
      return false;
    if (slash == std::string::npos)
      return true;
  }
}

} // namespace

std::string openBlasCoreName() { return openBlasString("openblas_get_corename"); }

std::string openBlasConfig() { return openBlasString("openblas_get_config"); }

std::string cpuFlags() { return procCpuinfoField("flags"); }

std::string cpuModelName() { return procCpuinfoField("model name"); }

double probeGemmRate(double seconds) {
  // A transformer layer's projections at hidden 512 and 1024 tokens, in
  // the three transpose forms of forward and backward.
  struct Shape {
    int m, n, k;
    bool transA, transB;
  };
  const Shape shapes[] = {{1024, 1536, 512, false, false},
                          {1024, 512, 2048, false, true},
                          {512, 2048, 1024, true, false}};
  double best = 0;
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration<double>(seconds);
  std::vector<float> a, b, c;
  for (int round = 0; round < 3 || std::chrono::steady_clock::now() < deadline;
       ++round) {
    double flops = 0;
    auto start = std::chrono::steady_clock::now();
    for (const Shape &s : shapes) {
      a.assign(size_t(s.m) * s.k, 0.5f);
      b.assign(size_t(s.k) * s.n, 0.25f);
      c.assign(size_t(s.m) * s.n, 0.0f);
      // The kernels' own entry point: the library they run (GemmLibrary.h).
      detail::gemm(s.transA, s.transB, s.m, s.n, s.k, a.data(), b.data(),
                   0.0f, c.data());
      flops += 2.0 * s.m * s.n * s.k;
    }
    double elapsed = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - start)
                         .count();
    // The first round warms the caches and pages in the buffers.
    if (round > 0 && elapsed > 0)
      best = std::max(best, flops / elapsed / 1e9);
    if (round > 50)
      break;
  }
  return best;
}

std::vector<std::string> candidateCoreTypes(const std::string &flags) {
  std::set<std::string> have;
  std::istringstream words(flags);
  for (std::string w; words >> w;)
    have.insert(w);
  auto all = [&](std::initializer_list<const char *> needed) {
    return std::all_of(needed.begin(), needed.end(),
                       [&](const char *f) { return have.count(f) > 0; });
  };
  std::vector<std::string> out;
  if (all({"avx2", "fma"}))
    out.push_back("Haswell");
  if (all({"avx2", "fma"}) && have.count("sse4a"))
    out.push_back("Zen");
  if (all({"avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512cd"}))
    out.push_back("SkylakeX");
  if (all({"avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512cd",
           "avx512_bf16"}))
    out.push_back("Cooperlake");
  return out;
}

std::string chooseCoreType(const std::vector<CoreTypeRate> &rates,
                           const std::string &defaultCore, double margin) {
  double base = 0;
  for (const CoreTypeRate &r : rates)
    if (r.coreType == defaultCore)
      base = std::max(base, r.gflops);
  const CoreTypeRate *best = nullptr;
  for (const CoreTypeRate &r : rates)
    if (r.gflops > 0 && (!best || r.gflops > best->gflops))
      best = &r;
  if (!best || base <= 0 || best->gflops <= base * (1 + margin))
    return defaultCore;
  return best->coreType;
}

std::string choiceCachePath() {
  std::string dir;
  if (const char *d = std::getenv("CLEAVE_CACHE_DIR"); d && *d)
    dir = d;
  else if (const char *x = std::getenv("XDG_CACHE_HOME"); x && *x)
    dir = std::string(x) + "/cleave";
  else if (const char *h = std::getenv("HOME"); h && *h)
    dir = std::string(h) + "/.cache/cleave";
  return dir.empty() ? dir : dir + "/openblas-kernels";
}

std::string choiceKey() {
  // The build's configuration names the kernels loaded; the key must not
  // change when the choice is adopted.
  std::string config = openBlasConfig(), core = openBlasCoreName();
  if (!core.empty())
    if (size_t at = config.find(" " + core); at != std::string::npos)
      config.erase(at, core.size() + 1);
  return oneLine(cpuModelName() + " | " + config);
}

std::optional<std::string> readChoice(const std::string &path,
                                      const std::string &key) {
  if (path.empty())
    return std::nullopt;
  std::map<std::string, std::string> all = readAll(path);
  auto it = all.find(oneLine(key));
  if (it == all.end())
    return std::nullopt;
  return it->second;
}

bool writeChoice(const std::string &path, const std::string &key,
                 const std::string &coreType) {
  if (path.empty() || coreType.empty())
    return false;
  size_t slash = path.rfind('/');
  if (slash != std::string::npos && slash > 0 &&
      !makeDirectories(path.substr(0, slash)))
    return false;
  std::map<std::string, std::string> all = readAll(path);
  all[oneLine(key)] = oneLine(coreType);
  std::string temporary = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(temporary, std::ios::trunc);
    if (!out)
      return false;
    for (const auto &[k, v] : all)
      out << k << '\t' << v << '\n';
    if (!out.flush())
      return false;
  }
  return std::rename(temporary.c_str(), path.c_str()) == 0;
}

void adoptChosenBlasKernels(char **argv) {
  if (std::getenv("OPENBLAS_CORETYPE"))
    return; // the user's, or already adopted
  if (const char *off = std::getenv("CLEAVE_BLAS_CORETYPE");
      off && std::string(off) == "default")
    return;
  std::string loaded = openBlasCoreName();
  if (loaded.empty())
    return; // not OpenBLAS
  std::optional<std::string> chosen = readChoice(choiceCachePath(),
                                                 choiceKey());
  if (!chosen || chosen->empty() || *chosen == loaded)
    return;
  // oneDNN measured faster than every OpenBLAS kernel set: the GEMMs run
  // on it (chosen before the first GEMM; no re-execution needed), unless
  // the user chose a library.
  if (*chosen == kOneDnnChoice) {
    if (!std::getenv("CLEAVE_GEMM"))
      setenv("CLEAVE_GEMM", kOneDnnChoice, 1);
    return;
  }
  setenv("OPENBLAS_CORETYPE", chosen->c_str(), 1);
  // By its own path, not /proc/self/exe: the process keeps its name
  // (ps, top and pgrep -x would show "exe").
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n > 0) {
    self[n] = '\0';
    execv(self, argv);
  }
  execv("/proc/self/exe", argv);
  // Could not re-execute: run on with the kernels loaded.
  unsetenv("OPENBLAS_CORETYPE");
}

} // namespace cleave::kernels
