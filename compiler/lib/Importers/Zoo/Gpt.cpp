//===- Gpt.cpp - GPT-2/GPT-3 decoders, dense and Switch-style MoE ---------===//
//
// Pre-LayerNorm decoder with learned positions and a language-model head
// tied to the token embedding (Radford et al. 2019, Brown et al. 2020).
// With experts > 0 every `moe_every`-th MLP becomes a top-k MoE layer
// (Switch Transformer, Fedus et al. 2021, uses top-1 on every other layer).
//
//===----------------------------------------------------------------------===//

#include "Blocks.h"
#include "ZooFamily.h"

using namespace mlir;

namespace cleave::zoo {

static std::vector<KeyDesc> gptKeys() {
  return {
      {"layers", "12", "transformer blocks"},
      {"hidden", "768", "model width"},
      {"heads", "12", "attention heads"},
      {"ffn", "0", "MLP width (0: 4 * hidden)"},
      {"vocab", "50257", "vocabulary size"},
      {"pad_vocab", "1",
       "embedding and logit rows padded to a multiple of this (Megatron-LM "
       "pads to 128 x tp so that the table splits; 1: no padding)"},
      {"seq", "1024", "sequence length of a sample"},
      {"positions", "0", "learned positions (0: seq)"},
      {"batch", "1", "samples per step"},
      {"dropout", "0.0", "dropout ratio (0 builds no dropout ops)"},
      {"tied", "true", "LM head shares the token embedding"},
      {"eps", "1e-5", "LayerNorm epsilon"},
      {"experts", "0", "experts per MoE layer (0: dense)"},
      {"top_k", "1", "experts per token"},
      {"moe_every", "2", "every n-th MLP is an MoE layer"},
      {"capacity_factor", "1.25", "expert capacity over the even share"},
  };
}

static llvm::Error buildGpt(GraphBuilder &g, const Config &c) {
  int64_t layers = c.integer("layers"), hidden = c.integer("hidden"),
          heads = c.integer("heads"), vocab = c.integer("vocab"),
          seq = c.integer("seq"), batch = c.integer("batch");
  int64_t ffn = c.integer("ffn") ? c.integer("ffn") : 4 * hidden;
  int64_t positions = c.integer("positions") ? c.integer("positions") : seq;
  int64_t experts = c.integer("experts");
  double dropout = c.real("dropout"), eps = c.real("eps");
  if (auto err = requireDivisible(c, "hidden", "heads"))
    return err;
  if (positions < seq)
    return configError("positions (" + llvm::Twine(positions) +
                       ") must be at least seq (" + llvm::Twine(seq) + ")");
  if (experts && (c.integer("top_k") > experts || c.integer("moe_every") < 1))
    return configError("top_k must be at most experts and moe_every >= 1");

  auto i64 = g.builder().getI64Type();
  Value tokens = g.input("tokens", {batch, seq}, i64);
  Value labels = g.input("labels", {batch, seq}, i64);

  // Padded rows are never looked up by real data and learn nothing but
  // the softmax's share; they let the table split over tensor parallelism.
  int64_t pad = c.integer("pad_vocab");
  if (pad < 1)
    return configError("pad_vocab must be at least 1");
  int64_t rows = (vocab + pad - 1) / pad * pad;
  Value wte = g.param("wte.weight", {rows, hidden});
  Value wpe = g.param("wpe.weight", {positions, hidden});
  if (positions > seq)
    wpe = g.slice(wpe, 0, 0, seq);
  Value x = g.dropout(g.add(g.gather(wte, tokens), wpe), dropout);

  AttentionConfig attn{hidden, heads, heads, /*bias=*/true, /*causal=*/true,
                       std::nullopt, dropout};
  MoeConfig moe{hidden, ffn, experts, c.integer("top_k"),
                c.real("capacity_factor"), /*swiglu=*/false};
  for (int64_t i = 0; i < layers; ++i) {
    auto layer = g.scope("h", i);
    Value h;
    {
      auto s = g.scope("ln_1");
      h = g.layerNorm(x, hidden, eps);
    }
    {
      auto s = g.scope("attn");
      x = g.add(x, selfAttention(g, h, attn));
    }
    {
      auto s = g.scope("ln_2");
      h = g.layerNorm(x, hidden, eps);
    }
    bool isMoe = experts > 0 && (i % c.integer("moe_every")) ==
                                    c.integer("moe_every") - 1;
    auto s = g.scope(isMoe ? "moe" : "mlp");
    Value m = isMoe ? moeMlp(g, h, moe) : geluMlp(g, h, hidden, ffn, true);
    x = g.add(x, g.dropout(m, dropout));
  }
  {
    auto s = g.scope("ln_f");
    x = g.layerNorm(x, hidden, eps);
  }
  Value logits = c.flag("tied")
                     ? g.matmul(x, wte, false, /*transposeB=*/true)
                     : g.matmul(x, g.param("lm_head.weight", {hidden, rows}));
  g.finish({g.crossEntropy(logits, labels)});
  return llvm::Error::success();
}

Family gptFamily() {
  return {"gpt", "GPT-2/GPT-3 decoder (pre-LN, learned positions, tied head)",
          gptKeys(), buildGpt};
}

Family switchFamily() {
  std::vector<KeyDesc> keys = gptKeys();
  for (KeyDesc &k : keys) {
    if (llvm::StringRef(k.key) == "experts")
      k.defaultValue = "8";
  }
  return {"switch",
          "GPT decoder with Switch-style top-1 MoE on every other MLP", keys,
          buildGpt};
}

} // namespace cleave::zoo
