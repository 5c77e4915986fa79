//===- Bert.cpp - BERT encoders with their pre-training heads -------------===//
//
// Post-LayerNorm encoder (Devlin et al. 2019) with word, position and
// token-type embeddings, and BertForPreTraining's two losses: masked-LM
// (transform + decoder tied to the word embedding) and next-sentence
// prediction (pooler + classifier). The masked-LM loss is taken over every
// position; which positions are masked changes no shape or cost.
//
//===----------------------------------------------------------------------===//

#include "Blocks.h"
#include "ZooFamily.h"

using namespace mlir;

namespace cleave::zoo {

static llvm::Error buildBert(GraphBuilder &g, const Config &c) {
  int64_t layers = c.integer("layers"), hidden = c.integer("hidden"),
          heads = c.integer("heads"), ffn = c.integer("ffn"),
          vocab = c.integer("vocab"), seq = c.integer("seq"),
          batch = c.integer("batch"), positions = c.integer("positions"),
          typeVocab = c.integer("type_vocab");
  double eps = c.real("eps"), dropout = c.real("dropout");
  if (auto err = requireDivisible(c, "hidden", "heads"))
    return err;
  if (positions < seq)
    return configError("positions (" + llvm::Twine(positions) +
                       ") must be at least seq (" + llvm::Twine(seq) + ")");

  auto i64 = g.builder().getI64Type();
  Value tokens = g.input("tokens", {batch, seq}, i64);
  Value types = g.input("token_types", {batch, seq}, i64);
  Value labels = g.input("labels", {batch, seq}, i64);
  Value nspLabels = g.input("next_sentence_labels", {batch}, i64);

  Value wordEmb, x;
  {
    auto s = g.scope("embeddings");
    wordEmb = g.param("word_embeddings.weight", {vocab, hidden});
    Value pos = g.param("position_embeddings.weight", {positions, hidden});
    if (positions > seq)
      pos = g.slice(pos, 0, 0, seq);
    Value typeEmb = g.param("token_type_embeddings.weight", {typeVocab, hidden});
    x = g.add(g.add(g.gather(wordEmb, tokens), pos), g.gather(typeEmb, types));
    auto ln = g.scope("LayerNorm");
    x = g.dropout(g.layerNorm(x, hidden, eps), dropout);
  }
  AttentionConfig attn{hidden, heads, heads, true, /*causal=*/false,
                       std::nullopt, dropout};
  for (int64_t i = 0; i < layers; ++i) {
    auto layer = g.scope("layer", i);
    {
      auto s = g.scope("attention");
      Value a = selfAttention(g, x, attn);
      auto ln = g.scope("LayerNorm");
      x = g.layerNorm(g.add(x, a), hidden, eps);
    }
    auto s = g.scope("ffn");
    Value m = g.dropout(geluMlp(g, x, hidden, ffn, /*geluTanh=*/false), dropout);
    auto ln = g.scope("LayerNorm");
    x = g.layerNorm(g.add(x, m), hidden, eps);
  }

  Value mlmLoss;
  {
    auto s = g.scope("cls.predictions");
    Value h;
    {
      auto t = g.scope("transform");
      h = g.gelu(g.linear(x, hidden, hidden, true), /*tanh=*/false);
      auto ln = g.scope("LayerNorm");
      h = g.layerNorm(h, hidden, eps);
    }
    Value logits = g.add(g.matmul(h, wordEmb, false, /*transposeB=*/true),
                         g.param("bias", {vocab}));
    mlmLoss = g.crossEntropy(logits, labels);
  }
  Value nspLoss;
  {
    Value first = g.reshape(g.slice(x, 1, 0, 1), {batch, hidden});
    Value pooled;
    {
      auto s = g.scope("pooler");
      pooled = g.tanh(g.linear(first, hidden, hidden, true));
    }
    auto s = g.scope("cls.seq_relationship");
    nspLoss = g.crossEntropy(g.linear(pooled, hidden, 2, true), nspLabels);
  }
  g.finish({g.add(mlmLoss, nspLoss)});
  return llvm::Error::success();
}

Family bertFamily() {
  return {"bert",
          "BERT encoder (post-LN) with masked-LM and next-sentence heads",
          {
              {"layers", "12", "encoder blocks"},
              {"hidden", "768", "model width"},
              {"heads", "12", "attention heads"},
              {"ffn", "3072", "MLP width"},
              {"vocab", "30522", "vocabulary size"},
              {"seq", "512", "sequence length of a sample"},
              {"positions", "512", "learned positions"},
              {"type_vocab", "2", "token types (segments)"},
              {"batch", "1", "samples per step"},
              {"dropout", "0.0", "dropout ratio (0 builds no dropout ops)"},
              {"eps", "1e-12", "LayerNorm epsilon"},
          },
          buildBert};
}

} // namespace cleave::zoo
