//===- Llama.cpp - LLaMA-2/3 decoders and Mixtral-style MoE ---------------===//
//
// Pre-RMSNorm decoder with rotary positions, grouped-query attention and a
// SwiGLU MLP, untied LM head (Touvron et al. 2023; Llama 3, Dubey et al.
// 2024). With experts > 0 the MLPs become top-k SwiGLU MoE layers
// (Mixtral, Jiang et al. 2024: 8 experts, top-2).
//
//===----------------------------------------------------------------------===//

#include "Blocks.h"
#include "ZooFamily.h"

using namespace mlir;

namespace cleave::zoo {

static std::vector<KeyDesc> llamaKeys() {
  return {
      {"layers", "32", "transformer blocks"},
      {"hidden", "4096", "model width"},
      {"heads", "32", "query heads"},
      {"kv_heads", "0", "key/value heads (0: heads; fewer: GQA)"},
      {"ffn", "11008", "SwiGLU width"},
      {"vocab", "32000", "vocabulary size"},
      {"seq", "4096", "sequence length of a sample"},
      {"batch", "1", "samples per step"},
      {"theta", "10000.0", "rotary base"},
      {"eps", "1e-5", "RMSNorm epsilon"},
      {"tied", "false", "LM head shares the token embedding"},
      {"experts", "0", "experts per MoE layer (0: dense)"},
      {"top_k", "2", "experts per token"},
      {"moe_every", "1", "every n-th MLP is an MoE layer"},
      {"capacity_factor", "1.25", "expert capacity over the even share"},
  };
}

static llvm::Error buildLlama(GraphBuilder &g, const Config &c) {
  int64_t layers = c.integer("layers"), hidden = c.integer("hidden"),
          heads = c.integer("heads"), ffn = c.integer("ffn"),
          vocab = c.integer("vocab"), seq = c.integer("seq"),
          batch = c.integer("batch"), experts = c.integer("experts");
  int64_t kvHeads = c.integer("kv_heads") ? c.integer("kv_heads") : heads;
  double eps = c.real("eps");
  if (auto err = requireDivisible(c, "hidden", "heads"))
    return err;
  if (heads % kvHeads)
    return configError("heads (" + llvm::Twine(heads) +
                       ") must be a multiple of kv_heads (" +
                       llvm::Twine(kvHeads) + ")");
  if ((hidden / heads) % 2)
    return configError("rotary embedding needs an even head size, got " +
                       llvm::Twine(hidden / heads));
  if (experts && (c.integer("top_k") > experts || c.integer("moe_every") < 1))
    return configError("top_k must be at most experts and moe_every >= 1");

  auto i64 = g.builder().getI64Type();
  Value tokens = g.input("tokens", {batch, seq}, i64);
  Value labels = g.input("labels", {batch, seq}, i64);
  Value embed = g.param("embed_tokens.weight", {vocab, hidden});
  Value x = g.gather(embed, tokens);

  AttentionConfig attn{hidden, heads, kvHeads, /*bias=*/false,
                       /*causal=*/true, c.real("theta"), 0.0};
  MoeConfig moe{hidden, ffn, experts, c.integer("top_k"),
                c.real("capacity_factor"), /*swiglu=*/true};
  for (int64_t i = 0; i < layers; ++i) {
    auto layer = g.scope("layers", i);
    Value h;
    {
      auto s = g.scope("input_layernorm");
      h = g.rmsNorm(x, hidden, eps);
    }
    {
      auto s = g.scope("self_attn");
      x = g.add(x, selfAttention(g, h, attn));
    }
    {
      auto s = g.scope("post_attention_layernorm");
      h = g.rmsNorm(x, hidden, eps);
    }
    bool isMoe = experts > 0 && (i % c.integer("moe_every")) ==
                                    c.integer("moe_every") - 1;
    auto s = g.scope(isMoe ? "moe" : "mlp");
    x = g.add(x, isMoe ? moeMlp(g, h, moe) : swigluMlp(g, h, hidden, ffn));
  }
  {
    auto s = g.scope("norm");
    x = g.rmsNorm(x, hidden, eps);
  }
  Value logits = c.flag("tied")
                     ? g.matmul(x, embed, false, /*transposeB=*/true)
                     : g.matmul(x, g.param("lm_head.weight", {hidden, vocab}));
  g.finish({g.crossEntropy(logits, labels)});
  return llvm::Error::success();
}

Family llamaFamily() {
  return {"llama", "LLaMA decoder (RMSNorm, RoPE, GQA, SwiGLU)", llamaKeys(),
          buildLlama};
}

Family moeFamily() {
  std::vector<KeyDesc> keys = llamaKeys();
  for (KeyDesc &k : keys) {
    llvm::StringRef key(k.key);
    if (key == "experts")
      k.defaultValue = "8";
    else if (key == "kv_heads")
      k.defaultValue = "8";
    else if (key == "ffn")
      k.defaultValue = "14336";
  }
  return {"moe", "Mixtral-style decoder: LLaMA with top-2 SwiGLU MoE MLPs",
          keys, buildLlama};
}

} // namespace cleave::zoo
