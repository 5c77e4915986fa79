//===- FusionMatch.cpp - Matching runs of instructions a backend fuses ----===//

#include "cleave/runtime/fusion/FusionMatch.h"

#include <algorithm>
#include <cstdint>
#include <set>
#include <stdexcept>
#include <string>

namespace cleave::fusion {

const char *fusionName(Fusion kind) {
  switch (kind) {
  case Fusion::None:
    return "none";
  case Fusion::MatmulBias:
    return "matmul+bias";
  case Fusion::MatmulBiasActivation:
    return "matmul+bias+activation";
  case Fusion::MatmulActivationGrad:
    return "matmul+activation_grad";
  case Fusion::MatmulBatchReduce:
    return "matmul+batch_reduce";
  }
  return "?";
}

bool FusedGroup::drops(int32_t id) const {
  return std::find(dropped.begin(), dropped.end(), id) != dropped.end();
}

namespace {

using plan::Instruction;
using plan::TensorDecl;

/// A boolean attribute (or an integer one, nonzero); false when absent or
/// of another kind.
bool flag(const Instruction &inst, const char *name) {
  auto it = inst.attrs().find(name);
  if (it == inst.attrs().end())
    return false;
  return it->second.has_b() ? it->second.b()
                            : it->second.has_i() && it->second.i() != 0;
}

/// Reads the whole program makes of each tensor, and whether it leaves
/// the program (loss, outputs): a result may be dropped only when every
/// read of it is inside the group.
class Uses {
public:
  explicit Uses(const plan::Program &p) : p_(p), reads_(p.tensors_size(), 0) {
    for (const plan::Segment &s : p.segments())
      for (const Instruction &inst : s.instructions())
        for (int32_t id : inst.inputs())
          if (id >= 0 && id < p.tensors_size())
            ++reads_[id];
    if (p.has_loss_tensor())
      escapes_.insert(p.loss_tensor());
    escapes_.insert(p.output_tensors().begin(), p.output_tensors().end());
  }

  /// `id` is an f32 intermediate (transient or stashed) read `n` times in
  /// the whole program.
  bool readOnly(int32_t id, int n) const {
    if (!valid(id) || escapes_.count(id))
      return false;
    const TensorDecl &t = p_.tensors(id);
    return (t.kind() == TensorDecl::TRANSIENT ||
            t.kind() == TensorDecl::STASH) &&
           reads_[id] == n;
  }
  bool valid(int32_t id) const { return id >= 0 && id < p_.tensors_size(); }
  const TensorDecl &tensor(int32_t id) const { return p_.tensors(id); }
  bool isF32(int32_t id) const {
    return valid(id) && p_.tensors(id).dtype() == plan::F32;
  }
  std::vector<int64_t> shape(int32_t id) const {
    const TensorDecl &t = p_.tensors(id);
    return {t.shape().begin(), t.shape().end()};
  }

private:
  const plan::Program &p_;
  std::vector<int> reads_;
  std::set<int32_t> escapes_;
};

/// One f32 result of a two-input graph.matmul.
bool isMatmul(const Instruction &inst, const Uses &uses) {
  return inst.op() == "graph.matmul" && inst.inputs_size() == 2 &&
         inst.outputs_size() == 1 && uses.isF32(inst.inputs(0)) &&
         uses.isF32(inst.inputs(1)) && uses.isF32(inst.outputs(0));
}

/// matmul(x, W) with W a matrix and x not transposed, then add(·, b) with
/// b a vector over the last dimension. Returns the add's result or -1.
int32_t matchLinearBias(const Instruction &mm, const Instruction &add,
                        const Uses &uses) {
  if (!isMatmul(mm, uses) || flag(mm, "transpose_lhs") ||
      uses.tensor(mm.inputs(1)).shape_size() != 2)
    return -1;
  int32_t t = mm.outputs(0);
  if (add.op() != "graph.add" || add.inputs_size() != 2 ||
      add.outputs_size() != 1 || !uses.isF32(add.outputs(0)))
    return -1;
  int32_t bias;
  if (add.inputs(0) == t && add.inputs(1) != t)
    bias = add.inputs(1);
  else if (add.inputs(1) == t && add.inputs(0) != t)
    bias = add.inputs(0);
  else
    return -1;
  std::vector<int64_t> shape = uses.shape(t);
  if (!uses.isF32(bias) || shape.empty() ||
      uses.shape(bias) != std::vector<int64_t>{shape.back()} ||
      uses.shape(add.outputs(0)) != shape || !uses.readOnly(t, 1))
    return -1;
  return add.outputs(0);
}

bool isActivation(const Instruction &inst, int32_t input, const Uses &uses) {
  return (inst.op() == "graph.gelu" || inst.op() == "graph.relu") &&
         inst.inputs_size() == 1 && inst.inputs(0) == input &&
         inst.outputs_size() == 1 && uses.isF32(inst.outputs(0)) &&
         uses.shape(inst.outputs(0)) == uses.shape(input);
}

/// matmul(dz, W^T) (a linear layer's input gradient) then
/// activation_grad(y, ·).
bool matchActivationGrad(const Instruction &mm, const Instruction &grad,
                         const Uses &uses) {
  if (!isMatmul(mm, uses) || flag(mm, "transpose_lhs") ||
      uses.tensor(mm.inputs(1)).shape_size() != 2)
    return false;
  int32_t t = mm.outputs(0);
  return grad.op() == "graph.activation_grad" && grad.inputs_size() == 2 &&
         grad.inputs(1) == t && grad.inputs(0) != t &&
         grad.outputs_size() == 1 && uses.isF32(grad.inputs(0)) &&
         uses.isF32(grad.outputs(0)) &&
         uses.shape(grad.inputs(0)) == uses.shape(t) &&
         uses.shape(grad.outputs(0)) == uses.shape(t) && uses.readOnly(t, 1);
}

/// matmul(a, d, transpose_lhs) with a [B..., M, K] and d [B..., M, N],
/// then reduce_sum over all of B...: a^T d contracted over B...·M.
bool matchBatchReduce(const Instruction &mm, const Instruction &reduce,
                      const Uses &uses) {
  if (!isMatmul(mm, uses) || !flag(mm, "transpose_lhs") ||
      flag(mm, "transpose_rhs"))
    return false;
  std::vector<int64_t> a = uses.shape(mm.inputs(0)),
                       d = uses.shape(mm.inputs(1));
  size_t r = a.size();
  if (r < 3 || d.size() != r ||
      !std::equal(a.begin(), a.end() - 1, d.begin(), d.end() - 1))
    return false;
  int32_t t = mm.outputs(0);
  if (reduce.op() != "graph.reduce_sum" || reduce.inputs_size() != 1 ||
      reduce.inputs(0) != t || reduce.outputs_size() != 1 ||
      !uses.isF32(reduce.outputs(0)) || !uses.readOnly(t, 1))
    return false;
  auto axes = reduce.attrs().find("axes");
  if (axes == reduce.attrs().end())
    return false;
  std::vector<int64_t> got;
  if (axes->second.has_ints())
    got.assign(axes->second.ints().values().begin(),
               axes->second.ints().values().end());
  else if (axes->second.has_i())
    got.push_back(axes->second.i());
  for (int64_t &axis : got)
    if (axis < 0)
      axis += static_cast<int64_t>(r);
  std::sort(got.begin(), got.end());
  std::vector<int64_t> batch(r - 2);
  for (size_t i = 0; i < batch.size(); ++i)
    batch[i] = static_cast<int64_t>(i);
  int64_t elements = 1;
  for (int64_t e : uses.shape(reduce.outputs(0)))
    elements *= e;
  return got == batch && elements == a[r - 1] * d[r - 1];
}

} // namespace

std::vector<FusedGroup> findFusions(const plan::Program &program, int segment,
                                    const FusionFilter &supported) {
  std::vector<FusedGroup> groups;
  if (segment < 0 || segment >= program.segments_size())
    return groups;
  const plan::Segment &seg = program.segments(segment);
  Uses uses(program);
  const auto &insts = seg.instructions();
  int n = insts.size();
  for (int i = 0; i + 1 < n; ++i) {
    const Instruction &a = insts[i], &b = insts[i + 1];
    if (a.has_async_handle())
      continue;
    auto make = [&](Fusion kind, int count, std::vector<int32_t> dropped) {
      FusedGroup g;
      g.kind = kind;
      g.first = i;
      g.count = count;
      g.dropped = std::move(dropped);
      return g;
    };
    std::vector<FusedGroup> candidates;  // longest first
    if (int32_t y = matchLinearBias(a, b, uses); y >= 0) {
      if (i + 2 < n && isActivation(insts[i + 2], y, uses)) {
        // The pre-activation is written only when something else reads
        // it (the activation's gradient in the backward pass).
        std::vector<int32_t> dropped{a.outputs(0)};
        if (uses.readOnly(y, 1))
          dropped.push_back(y);
        candidates.push_back(
            make(Fusion::MatmulBiasActivation, 3, std::move(dropped)));
      }
      candidates.push_back(make(Fusion::MatmulBias, 2, {a.outputs(0)}));
    } else if (matchActivationGrad(a, b, uses)) {
      candidates.push_back(
          make(Fusion::MatmulActivationGrad, 2, {a.outputs(0)}));
    } else if (matchBatchReduce(a, b, uses)) {
      candidates.push_back(make(Fusion::MatmulBatchReduce, 2, {a.outputs(0)}));
    }
    for (FusedGroup &g : candidates)
      if (supported(g, seg)) {
        i += g.count - 1;
        groups.push_back(std::move(g));
        break;
      }
  }
  return groups;
}

} // namespace cleave::fusion
