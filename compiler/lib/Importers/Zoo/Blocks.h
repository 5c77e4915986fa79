//===- Blocks.h - Transformer building blocks shared by families -*- C++ -*-===//

#ifndef CLEAVE_IMPORTERS_ZOO_BLOCKS_H
#define CLEAVE_IMPORTERS_ZOO_BLOCKS_H

#include "GraphBuilder.h"

#include <optional>

namespace cleave::zoo {

struct AttentionConfig {
  int64_t hidden = 0;
  int64_t heads = 0;
  int64_t kvHeads = 0; ///< grouped-query attention when < heads
  bool bias = true;
  bool causal = true;
  std::optional<double> ropeTheta;
  double dropout = 0.0;
};

/// Multi-head (or grouped-query) self-attention on x [B, S, H] with q, k, v
/// and output projections named q_proj, k_proj, v_proj, o_proj.
mlir::Value selfAttention(GraphBuilder &g, mlir::Value x,
                          const AttentionConfig &cfg);

/// GPT/BERT/ViT feed-forward: fc (H -> F), GELU, proj (F -> H), with biases.
mlir::Value geluMlp(GraphBuilder &g, mlir::Value x, int64_t hidden,
                    int64_t ffn, bool geluTanh);

/// LLaMA feed-forward: down(silu(gate(x)) * up(x)), no biases.
mlir::Value swigluMlp(GraphBuilder &g, mlir::Value x, int64_t hidden,
                      int64_t ffn);

struct MoeConfig {
  int64_t hidden = 0;
  int64_t ffn = 0;
  int64_t experts = 0;
  int64_t topK = 1;
  double capacityFactor = 1.25;
  bool swiglu = true; ///< SwiGLU experts (Mixtral); GELU experts otherwise
};

/// Mixture-of-experts feed-forward on x [B, S, H]: a router, top-k gating,
/// dispatch into [experts, capacity, H], batched expert MLPs, combine.
mlir::Value moeMlp(GraphBuilder &g, mlir::Value x, const MoeConfig &cfg);

} // namespace cleave::zoo

#endif // CLEAVE_IMPORTERS_ZOO_BLOCKS_H
