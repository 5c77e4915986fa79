//===- Communicator.cpp - Mesh groups and block packing -------------------===//

#include "cleave/runtime/comm/Communicator.h"

#include "cleave/runtime/comm/Bfloat16.h"
#include "cleave/runtime/comm/Float16.h"

#include "cleave/runtime/comm/Pack.h"

#include <cstring>
#include <stdexcept>

namespace cleave::comm {

float halfToFloat(ElementType type, uint16_t word) {
  return type == ElementType::BF16 ? bf16ToFloat(word) : f16ToFloat(word);
}

uint16_t floatToHalf(ElementType type, float value) {
  return type == ElementType::BF16 ? floatToBf16(value) : floatToF16(value);
}

int64_t elementBytes(ElementType type) {
  switch (type) {
  case ElementType::F32:
    return 4;
  case ElementType::I64:
    return 8;
  case ElementType::U8:
    return 1;
  case ElementType::BF16:
  case ElementType::F16:
    return 2;
  }
  return 1;
}

int64_t CommTensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

Reduction parseReduction(const std::string &name) {
  if (name == "sum" || name.empty())
    return Reduction::Sum;
  if (name == "mean")
    return Reduction::Mean;
  if (name == "max")
    return Reduction::Max;
  throw std::invalid_argument("unknown reduction '" + name + "'");
}

//===----------------------------------------------------------------------===//
// MeshInfo

int64_t MeshInfo::numRanks() const {
  int64_t n = 1;
  for (int64_t s : axisSizes)
    n *= s;
  return n;
}

int MeshInfo::axisIndex(const std::string &name) const {
  for (size_t i = 0; i < axisNames.size(); ++i)
    if (axisNames[i] == name)
      return static_cast<int>(i);
  return -1;
}

int64_t MeshInfo::rankOf(const std::vector<int64_t> &c) const {
  int64_t rank = 0;
  for (size_t i = 0; i < axisSizes.size(); ++i)
    rank = rank * axisSizes[i] + c[i];
  return rank;
}

std::vector<int64_t> MeshInfo::coordsOf(int64_t rank) const {
  std::vector<int64_t> c(axisSizes.size());
  for (size_t i = axisSizes.size(); i-- > 0;) {
    c[i] = rank % axisSizes[i];
    rank /= axisSizes[i];
  }
  return c;
}

namespace {
/// The mesh indices of `axes`, in mesh order, without duplicates.
std::vector<int> selectedAxes(const MeshInfo &mesh, const Axes &axes) {
  std::vector<bool> chosen(mesh.axisNames.size(), false);
  for (const std::string &name : axes) {
    int i = mesh.axisIndex(name);
    if (i >= 0)
      chosen[i] = true;
  }
  std::vector<int> result;
  for (size_t i = 0; i < chosen.size(); ++i)
    if (chosen[i])
      result.push_back(static_cast<int>(i));
  return result;
}
} // namespace

std::vector<int64_t> MeshInfo::groupRanks(const Axes &axes) const {
  std::vector<int> chosen = selectedAxes(*this, axes);
  int64_t size = 1;
  for (int i : chosen)
    size *= axisSizes[i];
  std::vector<int64_t> ranks;
  for (int64_t g = 0; g < size; ++g) {
    // Group rank g is row-major over the chosen axes.
    std::vector<int64_t> c = coords;
    int64_t rest = g;
    for (size_t k = chosen.size(); k-- > 0;) {
      c[chosen[k]] = rest % axisSizes[chosen[k]];
      rest /= axisSizes[chosen[k]];
    }
    ranks.push_back(rankOf(c));
  }
  return ranks;
}

int64_t MeshInfo::groupRank(const Axes &axes) const {
  int64_t g = 0;
  for (int i : selectedAxes(*this, axes))
    g = g * axisSizes[i] + coords[i];
  return g;
}

int64_t MeshInfo::peer(const std::string &axis, int64_t offset) const {
  int i = axisIndex(axis);
  if (i < 0)
    return rankOf(coords);
  std::vector<int64_t> c = coords;
  int64_t size = axisSizes[i];
  c[i] = ((c[i] + offset) % size + size) % size;
  return rankOf(c);
}

int64_t Communicator::rank() const { return mesh().rankOf(mesh().coords); }

int64_t Communicator::groupSize(const Axes &axes) const {
  return static_cast<int64_t>(mesh().groupRanks(axes).size());
}

//===----------------------------------------------------------------------===//
// Packing

BlockLayout blockLayout(const CommTensor &tensor, int dim, int64_t parts,
                        const char *what) {
  int rank = static_cast<int>(tensor.shape.size());
  if (dim < 0 || dim >= rank)
    throw std::invalid_argument(std::string(what) + ": dimension " +
                                std::to_string(dim) + " of a rank-" +
                                std::to_string(rank) + " tensor");
  if (tensor.shape[dim] % parts != 0)
    throw std::invalid_argument(
        std::string(what) + ": dimension " + std::to_string(dim) + " of size " +
        std::to_string(tensor.shape[dim]) + " does not split into " +
        std::to_string(parts) + " blocks");
  BlockLayout layout;
  for (int i = 0; i < dim; ++i)
    layout.outer *= tensor.shape[i];
  layout.dimSize = tensor.shape[dim];
  layout.innerBytes = elementBytes(tensor.type);
  for (int i = dim + 1; i < rank; ++i)
    layout.innerBytes *= tensor.shape[i];
  return layout;
}

void packBlock(const BlockLayout &l, const void *tensor, int64_t parts,
               int64_t index, void *dst) {
  int64_t block = l.dimSize / parts * l.innerBytes;
  const char *src = static_cast<const char *>(tensor);
  char *out = static_cast<char *>(dst);
  for (int64_t o = 0; o < l.outer; ++o)
    std::memcpy(out + o * block,
                src + o * l.dimSize * l.innerBytes + index * block, block);
}

void unpackBlock(const BlockLayout &l, const void *src, int64_t parts,
                 int64_t index, void *tensor) {
  int64_t block = l.dimSize / parts * l.innerBytes;
  const char *in = static_cast<const char *>(src);
  char *out = static_cast<char *>(tensor);
  for (int64_t o = 0; o < l.outer; ++o)
    std::memcpy(out + o * l.dimSize * l.innerBytes + index * block,
                in + o * block, block);
}

std::vector<int64_t> scaledShape(std::vector<int64_t> shape, int dim,
                                 int64_t num, int64_t den) {
  if (dim >= 0 && dim < static_cast<int>(shape.size()))
    shape[dim] = shape[dim] * num / den;
  return shape;
}

static std::string shapeText(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

void checkShape(const CommTensor &tensor, const std::vector<int64_t> &shape,
                const char *what) {
  if (tensor.shape != shape)
    throw std::invalid_argument(std::string(what) + ": the output is " +
                                shapeText(tensor.shape) + ", expected " +
                                shapeText(shape));
}

void divideFloats(CommTensor tensor, int64_t n) {
  float scale = 1.0f / static_cast<float>(n);
  if (isHalf(tensor.type)) {
    uint16_t *data = static_cast<uint16_t *>(tensor.data);
    for (int64_t i = 0, e = tensor.numElements(); i < e; ++i)
      data[i] = floatToHalf(tensor.type,
                            halfToFloat(tensor.type, data[i]) * scale);
    return;
  }
  if (tensor.type != ElementType::F32)
    throw std::invalid_argument("a mean reduces floats only");
  float *data = static_cast<float *>(tensor.data);
  for (int64_t i = 0, e = tensor.numElements(); i < e; ++i)
    data[i] *= scale;
}

} // namespace cleave::comm
