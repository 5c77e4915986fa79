//===- Tensor.cpp - Shape helpers shared by the kernels -------------------===//

#include "cleave/runtime/kernels/Tensor.h"

#include <algorithm>
#include <stdexcept>

namespace cleave::kernels {

int64_t numElements(const Shape &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

Shape rowMajorStrides(const Shape &shape) {
  Shape strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;)
    strides[i - 1] = strides[i] * shape[i];
  return strides;
}

Shape broadcastShape(const Shape &a, const Shape &b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank, 1);
  for (const Shape *s : {&a, &b}) {
    size_t offset = rank - s->size();
    for (size_t i = 0; i < s->size(); ++i) {
      int64_t &o = out[offset + i];
      int64_t d = (*s)[i];
      if (d == o || d == 1)
        continue;
      if (o != 1)
        throwInvalid("shapes " + shapeString(a) + " and " + shapeString(b) +
                     " do not broadcast");
      o = d;
    }
  }
  return out;
}

std::string shapeString(const Shape &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

void throwInvalid(const std::string &message) {
  throw std::invalid_argument(message);
}

} // namespace cleave::kernels
