//===- Initialization.cpp - Deterministic parameters and data -------------===//

#include "cleave/runtime/executor/Initialization.h"

#include "absl/strings/str_cat.h"

#include <cmath>
#include <cstring>
#include <fstream>

namespace cleave::executor {

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

uint64_t hashString(const std::string &text) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : text)
    h = (h ^ c) * 0x100000001B3ull;
  return h;
}

double normalSample(uint64_t key, uint64_t index) {
  uint64_t a = splitmix64(key ^ splitmix64(index));
  uint64_t b = splitmix64(a);
  // u1 in (0, 1] keeps the logarithm finite.
  double u1 = (static_cast<double>(a >> 11) + 1.0) * 0x1.0p-53;
  double u2 = static_cast<double>(b >> 11) * 0x1.0p-53;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

std::vector<int64_t> blockOrigin(const std::vector<int64_t> &localShape,
                                 const plan::TensorDecl &decl,
                                 const comm::MeshInfo &mesh) {
  std::vector<int64_t> origin(localShape.size(), 0);
  for (size_t d = 0; d < localShape.size() && d < size_t(decl.dims_size());
       ++d) {
    int64_t block = 0;
    for (const std::string &axis : decl.dims(d).axes()) {
      int i = mesh.axisIndex(axis);
      if (i >= 0)
        block = block * mesh.axisSizes[i] + mesh.coords[i];
    }
    origin[d] = block * localShape[d];
  }
  return origin;
}

namespace {

/// Calls f(local index, global index) for each element of a block.
template <typename F>
void forEachElement(const std::vector<int64_t> &local,
                    const std::vector<int64_t> &origin,
                    const std::vector<int64_t> &global, F f) {
  size_t rank = local.size();
  int64_t n = 1;
  for (int64_t d : local)
    n *= d;
  std::vector<int64_t> globalStride(rank, 1);
  for (size_t d = rank; d-- > 1;)
    globalStride[d - 1] = globalStride[d] * global[d];
  std::vector<int64_t> idx(rank, 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t g = 0;
    for (size_t d = 0; d < rank; ++d)
      g += (origin[d] + idx[d]) * globalStride[d];
    f(i, g);
    for (size_t d = rank; d-- > 0;) {
      if (++idx[d] < local[d])
        break;
      idx[d] = 0;
    }
  }
}

} // namespace

absl::Status initializeParameter(const plan::ParameterSharding &param,
                                 const plan::TensorDecl &decl,
                                 const comm::MeshInfo &mesh, uint64_t seed,
                                 float *dst) {
  std::vector<int64_t> local(decl.shape().begin(), decl.shape().end());
  std::vector<int64_t> global(param.global_shape().begin(),
                              param.global_shape().end());
  if (global.empty())
    global = local;
  if (global.size() != local.size())
    return absl::InvalidArgumentError(
        absl::StrCat("parameter '", param.name(), "' has a rank-",
                     global.size(), " global shape but its tensor '",
                     decl.name(), "' has rank ", local.size()));
  std::vector<int64_t> origin = blockOrigin(local, decl, mesh);
  int64_t globalElements = 1;
  for (size_t d = 0; d < local.size(); ++d) {
    globalElements *= global[d];
    if (origin[d] + local[d] > global[d])
      return absl::InvalidArgumentError(absl::StrCat(
          "tensor '", decl.name(), "': the block at ", origin[d], " of ",
          local[d], " along dimension ", d, " exceeds parameter '",
          param.name(), "' of size ", global[d]));
  }
  const std::string &values = param.initial_value();
  if (!values.empty()) {
    if (static_cast<int64_t>(values.size()) != globalElements * 4)
      return absl::InvalidArgumentError(
          absl::StrCat("parameter '", param.name(), "' has ", values.size(),
                       " bytes of initial value for ", globalElements,
                       " fp32 elements"));
    forEachElement(local, origin, global, [&](int64_t i, int64_t g) {
      std::memcpy(dst + i, values.data() + g * 4, 4);
    });
    return absl::OkStatus();
  }
  const plan::InitSpec &init = param.init();
  uint64_t key = hashString(param.name()) ^ splitmix64(seed);
  forEachElement(local, origin, global, [&](int64_t i, int64_t g) {
    switch (init.kind()) {
    case plan::InitSpec::ZEROS:
      dst[i] = 0.0f;
      break;
    case plan::InitSpec::ONES:
      dst[i] = 1.0f;
      break;
    default:
      dst[i] = static_cast<float>(init.std() * normalSample(key, g));
    }
  });
  return absl::OkStatus();
}

} // namespace cleave::executor
