//===- OpAttributes.cpp - Kernel options from an instruction's attributes ===//

#include "cleave/runtime/executor/OpAttributes.h"

#include <stdexcept>

namespace cleave::executor {

namespace k = cleave::kernels;

k::Conv2dOptions convOptions(const OpContext &c) {
  std::vector<int64_t> s = c.attrInts("strides"), p = c.attrInts("padding"),
                       d = c.attrInts("dilations");
  if (s.size() != 2 || p.size() != 4 || d.size() != 2)
    throw std::invalid_argument("conv attributes need 2 strides, 4 paddings "
                                "and 2 dilations");
  k::Conv2dOptions o;
  o.strides = {s[0], s[1]};
  o.padding = {p[0], p[1], p[2], p[3]};
  o.dilations = {d[0], d[1]};
  o.groups = c.attrInt("groups", 1);
  return o;
}

k::Pool2dOptions poolOptions(const OpContext &c) {
  std::vector<int64_t> kr = c.attrInts("kernel"), s = c.attrInts("strides"),
                       p = c.attrInts("padding");
  if (kr.size() != 2 || s.size() != 2 || p.size() != 4)
    throw std::invalid_argument("pool attributes need 2 kernel sizes, 2 "
                                "strides and 4 paddings");
  k::Pool2dOptions o;
  o.kernel = {kr[0], kr[1]};
  o.strides = {s[0], s[1]};
  o.padding = {p[0], p[1], p[2], p[3]};
  return o;
}

k::UnaryOp activationKind(const std::string &kind) {
  if (kind == "relu")
    return k::UnaryOp::Relu;
  if (kind == "gelu")
    return k::UnaryOp::Gelu;
  if (kind == "gelu_tanh")
    return k::UnaryOp::GeluTanh;
  if (kind == "silu")
    return k::UnaryOp::Silu;
  if (kind == "sigmoid")
    return k::UnaryOp::Sigmoid;
  if (kind == "tanh")
    return k::UnaryOp::Tanh;
  if (kind == "erf")
    return k::UnaryOp::Erf;
  throw std::invalid_argument("unknown activation kind '" + kind + "'");
}

} // namespace cleave::executor
