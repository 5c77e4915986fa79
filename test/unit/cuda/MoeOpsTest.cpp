//===- MoeOpsTest.cpp - MoE gate, dispatch, combine and their grads -------===//
//
// The expert indices (and with them the capacity slots) must match the
// CPU's exactly: ties go to the lower expert, and each expert's slots go
// to its choices in (token, j) order, later ones dropped past the
// capacity. Dispatch is a copy and matches exactly; combine adds the
// products in the CPU's order (to the last bit, but for a CPU compiler
// that fuses them into FMAs); the weights' gradient is a dot product
// summed in another order.
//
//===----------------------------------------------------------------------===//

#include "CudaOpCase.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

using namespace cleave::test;
using cleave::plan::I64;

namespace {

/// Router logits [tokens, experts] whose first rows hold ties: all equal,
/// and a maximum shared by three experts.
std::vector<float> routerLogits(int64_t tokens, int64_t experts,
                                uint64_t seed) {
  std::vector<float> v = randomFloats(tokens * experts, seed, -2.0f, 2.0f);
  for (int64_t e = 0; e < experts; ++e) {
    v[e] = 0.5f;
    v[experts + e] = e % 3 == 1 ? 1.25f : -0.5f;
  }
  return v;
}

/// [tokens, k] expert choices, distinct per token, drawn so that some
/// experts get more than their share.
std::vector<int64_t> routing(int64_t tokens, int64_t k, int64_t experts,
                             uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> v(tokens * k);
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t j = 0; j < k; ++j) {
      // Skewed towards expert 0 (half the draws); then moved up until it
      // differs from the token's earlier choices.
      int64_t e = static_cast<int64_t>((rng() % experts) * (rng() % 2));
      while (std::find(v.begin() + t * k, v.begin() + t * k + j, e) !=
             v.begin() + t * k + j)
        e = (e + 1) % experts;
      v[t * k + j] = e;
    }
  return v;
}

} // namespace

TEST_F(CudaOps, MoeGateTopTwoWithTies) {
  for (bool renormalize : {false, true}) {
    SCOPED_TRACE(renormalize ? "renormalised" : "softmax weights");
    OpCase t("graph.moe_gate");
    t.f32({37, 8}, routerLogits(37, 8, 1));
    t.output({37, 2});
    t.output({37, 2}, I64);
    t.setInt("top_k", 2).setBool("renormalize", renormalize);
    t.expectMatch(1e-6, 1e-7);
  }
}

TEST_F(CudaOps, MoeGateTopOneAndAllExperts) {
  OpCase t("graph.moe_gate");
  t.f32({19, 5}, routerLogits(19, 5, 2));
  t.output({19, 1});
  t.output({19, 1}, I64);
  t.setInt("top_k", 1);
  t.expectMatch(1e-6, 1e-7);
  OpCase u("graph.moe_gate");
  u.f32({6, 4}, routerLogits(6, 4, 3));
  u.output({6, 4});
  u.output({6, 4}, I64);
  u.setInt("top_k", 4).setBool("renormalize", true);
  u.expectMatch(1e-6, 1e-7);
}

TEST_F(CudaOps, MoeGateGrad) {
  for (bool renormalize : {false, true}) {
    SCOPED_TRACE(renormalize ? "renormalised" : "softmax weights");
    OpCase t("graph.moe_gate_grad");
    t.f32({37, 8}, routerLogits(37, 8, 4));
    t.f32({37, 2}, 5);
    t.output({37, 8});
    t.setInt("top_k", 2).setBool("renormalize", renormalize);
    t.expectMatch(1e-6, 1e-7);
  }
}

TEST_F(CudaOps, MoeDispatchDropsPastCapacity) {
  // 40 choices over 4 experts with 6 slots each: the low experts overflow.
  OpCase t("graph.moe_dispatch");
  t.f32({20, 12}, 6);
  t.i64({20, 2}, routing(20, 2, 4, 7));
  t.output({4, 6, 12});
  t.setInt("num_experts", 4).setInt("capacity", 6);
  t.expectMatch(0, 0);
  // Top-1, odd hidden size (the scalar path), room to spare for some.
  OpCase u("graph.moe_dispatch");
  u.f32({23, 5}, 8);
  u.i64({23, 1}, routing(23, 1, 3, 9));
  u.output({3, 9, 5});
  u.setInt("num_experts", 3).setInt("capacity", 9);
  u.expectMatch(0, 0);
}

TEST_F(CudaOps, MoeCombineSkipsDroppedChoices) {
  OpCase t("graph.moe_combine");
  t.f32({4, 6, 12}, 10);
  t.f32({20, 2}, 11, 0.0f, 1.0f);
  t.i64({20, 2}, routing(20, 2, 4, 7));
  t.output({20, 12});
  t.expectMatch(1e-6, 1e-7);
  OpCase u("graph.moe_combine");
  u.f32({3, 4, 7}, 12);
  u.f32({15, 3}, 13, 0.0f, 1.0f);
  u.i64({15, 3}, routing(15, 3, 3, 14));
  u.output({15, 7});
  u.expectMatch(1e-6, 1e-7);
}

TEST_F(CudaOps, MoeCombineGrad) {
  // Both gradients, then each alone.
  for (int wanted = 0; wanted < 3; ++wanted) {
    SCOPED_TRACE("case " + std::to_string(wanted));
    OpCase t("graph.moe_combine_grad");
    t.f32({4, 6, 12}, 15);
    t.f32({20, 2}, 16, 0.0f, 1.0f);
    t.i64({20, 2}, routing(20, 2, 4, 17));
    t.f32({20, 12}, 18);
    if (wanted != 2)
      t.output({4, 6, 12});
    else
      t.absentOutput();
    if (wanted != 1)
      t.output({20, 2});
    else
      t.absentOutput();
    t.expectMatch(1e-5, 1e-6);
  }
  // Odd hidden size, top-3.
  OpCase u("graph.moe_combine_grad");
  u.f32({3, 4, 37}, 19);
  u.f32({15, 3}, 20, 0.0f, 1.0f);
  u.i64({15, 3}, routing(15, 3, 3, 21));
  u.f32({15, 37}, 22);
  u.output({3, 4, 37});
  u.output({15, 3});
  u.expectMatch(1e-5, 1e-6);
}
