//===- Fusion.cpp - The groups a backend fuses, as one GEMM --------------===//

#include "cleave/runtime/executor/Fusion.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace cleave::executor {

FusedGemm fusedGemm(const FusedGroup &group,
                    std::vector<OpContext> &contexts) {
  if (static_cast<int>(contexts.size()) != group.count || group.count < 2)
    throw std::invalid_argument(std::string("a fused ") +
                                fusionName(group.kind) + " needs " +
                                std::to_string(group.count) + " instructions");
  OpContext &mm = contexts[0];
  mm.expectArity(2, 1);
  FusedGemm g;
  g.lhs = mm.in(0);
  g.rhs = mm.in(1);
  g.transposeLhs = mm.attrBool("transpose_lhs");
  g.transposeRhs = mm.attrBool("transpose_rhs");
  OpContext &last = contexts.back();
  g.out = last.out(0);
  switch (group.kind) {
  case Fusion::MatmulBias:
  case Fusion::MatmulBiasActivation: {
    OpContext &add = contexts[1];
    add.expectArity(2, 1);
    g.bias = add.input(0).id == mm.output(0).id ? add.in(1) : add.in(0);
    if (group.kind == Fusion::MatmulBias)
      break;
    const std::string &op = last.inst.op();
    g.activation = op == "graph.relu"                   ? "relu"
                   : last.attrBool("approximate_tanh") ? "gelu_tanh"
                                                        : "gelu";
    if (!group.drops(add.output(0).id))
      g.preActivationOut = add.out(0);
    break;
  }
  case Fusion::MatmulActivationGrad:
    last.expectArity(2, 1);
    g.activation = last.attrString("kind");
    g.preActivation = last.in(0);
    break;
  case Fusion::MatmulBatchReduce: {
    size_t r = g.lhs.shape.size();
    if (r < 2 || g.rhs.shape.size() != r)
      throw std::invalid_argument("a batch-reduced matmul of " +
                                  kernels::shapeString(g.lhs.shape) + " and " +
                                  kernels::shapeString(g.rhs.shape));
    g.out.shape = {g.lhs.shape[r - 1], g.rhs.shape[r - 1]};
    if (g.out.numElements() != last.output(0).numElements())
      throw std::invalid_argument("a batch-reduced matmul into " +
                                  kernels::shapeString(last.output(0).shape));
    break;
  }
  case Fusion::None:
    throw std::invalid_argument("not a fused group");
  }
  return g;
}

bool fusedWritesOverlapReads(const FusedGroup &group,
                             const std::vector<OpContext> &contexts) {
  struct Range {
    const char *begin, *end;
  };
  std::set<int32_t> produced;
  std::vector<Range> reads, writes;
  for (const OpContext &c : contexts) {
    for (const TensorView &v : c.inputs)
      if (v.id >= 0 && v.data && !produced.count(v.id))
        reads.push_back({static_cast<const char *>(v.data),
                         static_cast<const char *>(v.data) + v.numBytes()});
    for (const TensorView &v : c.outputs) {
      if (v.id < 0 || !v.data)
        continue;
      produced.insert(v.id);
      if (!group.drops(v.id))
        writes.push_back({static_cast<const char *>(v.data),
                          static_cast<const char *>(v.data) + v.numBytes()});
    }
  }
  auto overlap = [](const Range &x, const Range &y) {
    return x.begin < y.end && y.begin < x.end;
  };
  for (size_t i = 0; i < writes.size(); ++i) {
    for (const Range &r : reads)
      if (overlap(writes[i], r))
        return true;
    for (size_t j = i + 1; j < writes.size(); ++j)
      if (overlap(writes[i], writes[j]))
        return true;
  }
  return false;
}

} // namespace cleave::executor
