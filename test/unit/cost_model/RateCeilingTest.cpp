//===- RateCeilingTest.cpp - No plan beats the kernels it is made of ------===//
//
// The invariant behind every throughput the planner reports: a step is
// GEMMs and attention kernels (plus slower memory-bound work and
// communication), so its hardware FLOP rate cannot exceed what those
// kernels reach at their best. The ceilings are the presets' measured
// ones (ClusterPresets.cpp: the best GEMM of any shape, the fused
// attention curve's long-sequence rates), mixed in the proportions of
// the model's own FLOPs:
//
//   rate <= FLOPs / (GEMM FLOPs / G + attention FLOPs run / A)
//
// with attention counted as the model does (the whole S x S scores) and
// run at half of it under a causal mask when fused. Expected values come
// from the model's shapes here, not from the library.
//
//===----------------------------------------------------------------------===//

#include "LlamaShape.h"
#include "cleave/cost_model/PlanSearch.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <string>

using namespace cleave::cost;

namespace {

struct Case {
  std::string name;
  TransformerModel model;
  std::string cluster;
  int64_t globalBatch;
};

using shapes::llama;

/// The highest hardware FLOP rate (FLOP/s per device) a plan of `m`
/// could reach on `c`: every GEMM at the GEMM ceiling, every attention
/// kernel at the attention ceiling, nothing else costing time.
double ceiling(const TransformerModel &m, const Cluster &c,
               const ParallelConfig &p) {
  double h = m.hidden, d = h / m.heads, S = m.seq;
  double f = m.mlp(), kv = m.kv() * d;
  // Forward FLOPs per token: per layer, then the head.
  double gemm = m.layers * 2 * h * (h + 2 * kv + h + (m.gatedMlp ? 3 : 2) * f) +
                2 * h * m.vocab;
  double attention = m.layers * 4 * S * h;
  double peak = c.device.peakFlops(p.precision);
  double g = c.efficiency.gemmMax * peak;
  bool fused = p.fusedAttention && c.efficiency.attentionForward > 0;
  double run = p.fusedAttention && m.causal ? 0.5 : 1.0;
  double af = fused ? c.efficiency.attentionForward * peak : g;
  double ab = fused ? c.efficiency.attentionBackward * peak : g;
  // Forward once, backward twice the FLOPs; full recomputation (the
  // largest extra) runs the forward again: the looser of the two bounds.
  double bound = 0;
  for (int forwards : {1, 2}) {
    double flops = (forwards + 2) * (gemm + attention);
    double seconds = (forwards + 2) * gemm / g + forwards * attention * run / af +
                     2 * attention * run / ab;
    bound = std::max(bound, flops / seconds);
  }
  return bound;
}

} // namespace

TEST(RateCeiling, NoSearchedPlanBeatsItsKernels) {
  std::vector<Case> cases = {
      {"Llama 3 8B, seq 8192, 64 H100", llama(32, 4096, 32, 14336, 8192),
       "dgx-h100,nodes=8", 128},
      {"Llama 3 8B, seq 32768, 32 H100", llama(32, 4096, 32, 14336, 32768),
       "dgx-h100,nodes=4", 32},
      {"Llama 3 70B, seq 8192, 64 H100", llama(80, 8192, 64, 28672, 8192),
       "dgx-h100,nodes=8", 128},
  };
  TransformerModel gpt3;
  gpt3.layers = 96;
  gpt3.hidden = 12288;
  gpt3.heads = 96;
  gpt3.seq = 2048;
  gpt3.vocab = 51200;
  cases.push_back({"GPT-3 175B, 1024 A100", gpt3, "dgx-a100-80g,nodes=128", 1536});
  gpt3.dropout = false;
  cases.push_back({"GPT-3 175B, 512 H100", gpt3, "dgx-h100,nodes=64", 1536});
  for (const Case &k : cases) {
    absl::StatusOr<Cluster> c = parseCluster(k.cluster);
    ASSERT_TRUE(c.ok()) << c.status();
    PlanSearchOptions o;
    o.topK = 5;
    absl::StatusOr<PlanSearchResult> found =
        searchTransformerPlans(k.model, *c, k.globalBatch, o);
    ASSERT_TRUE(found.ok()) << k.name << ": " << found.status();
    ASSERT_FALSE(found->best.empty()) << k.name;
    for (const PlanPrediction &plan : found->best) {
      double rate = plan.hwTflopsPerDevice * 1e12;
      double most = ceiling(k.model, *c, plan.plan);
      EXPECT_GT(rate, 0) << k.name;
      EXPECT_LE(rate, most)
          << k.name << ": " << plan.hwTflopsPerDevice << " TFLOP/s against "
          << most / 1e12 << " its kernels allow";
    }
  }
}
