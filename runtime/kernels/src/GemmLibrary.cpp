//===- GemmLibrary.cpp - Which library runs the kernels' GEMMs ------------===//

#include "cleave/runtime/kernels/GemmLibrary.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace cleave::kernels {
namespace {

detail::DnnlSgemm loadDnnl() {
  void *handle = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    return nullptr;
  return reinterpret_cast<detail::DnnlSgemm>(dlsym(handle, "dnnl_sgemm"));
}

detail::DnnlSgemm dnnl() {
  static detail::DnnlSgemm loaded = loadDnnl();
  return loaded;
}

GemmLibrary settle() {
  const char *chosen = std::getenv("CLEAVE_GEMM");
  if (!chosen || !*chosen || std::string(chosen) == "openblas")
    return GemmLibrary::OpenBlas;
  if (std::string(chosen) != "onednn")
    throw std::invalid_argument(std::string("CLEAVE_GEMM=") + chosen +
                                ": expected openblas or onednn");
  if (dnnl())
    return GemmLibrary::OneDnn;
  std::fprintf(stderr,
               "cleave: warning: CLEAVE_GEMM=onednn, but libdnnl.so.2 "
               "(Debian's libdnnl2) cannot be loaded: GEMMs run on "
               "OpenBLAS\n");
  return GemmLibrary::OpenBlas;
}

} // namespace

const char *gemmLibraryName(GemmLibrary library) {
  return library == GemmLibrary::OneDnn ? "onednn" : "openblas";
}

bool oneDnnAvailable() { return dnnl() != nullptr; }

GemmLibrary gemmLibrary() {
  static GemmLibrary active = settle();
  return active;
}

namespace detail {
DnnlSgemm activeDnnlSgemm() {
  static DnnlSgemm active =
      gemmLibrary() == GemmLibrary::OneDnn ? dnnl() : nullptr;
  return active;
}
} // namespace detail

} // namespace cleave::kernels
