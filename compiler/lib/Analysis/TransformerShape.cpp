//===- TransformerShape.cpp - A module's transformer dimensions -----------===//

#include "cleave/Analysis/TransformerShape.h"

#include "cleave/Dialect/Graph/IR/GraphOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <map>

using namespace mlir;

namespace cleave {

/// The module's @forward (an error at the module when it has none), with
/// the model's name recorded in `m`.
static func::FuncOp forwardOf(ModuleOp module, cost::TransformerModel &m) {
  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  if (!forward) {
    module.emitError("expected a func.func @forward");
    return nullptr;
  }
  if (auto name = module->getAttrOfType<StringAttr>("cleave.model"))
    m.name = name.str();
  return forward;
}

/// Reads the dimensions off the graph itself (imported models): attention
/// softmaxes over square [.., seq, seq] scores count the layers and give
/// the sequence and heads, norms give the width, the MLP's down projection
/// [ffn, hidden] its width, the embedding table or the last projection the
/// vocabulary (or classes).
static FailureOr<std::optional<cost::TransformerModel>>
inferFromGraph(ModuleOp module) {
  cost::TransformerModel m;
  func::FuncOp forward = forwardOf(module, m);
  if (!forward)
    return failure();
  int64_t samples = 1;
  bool sawInput = false;
  std::map<int64_t, int> normWidths;
  int64_t lastProjection = 0;
  forward.walk([&](Operation *op) {
    if (auto input = dyn_cast<graph::InputOp>(op)) {
      if (!sawInput && input.getType().getRank() > 0)
        samples = input.getType().getDimSize(0);
      sawInput = true;
    } else if (auto softmax = dyn_cast<graph::SoftmaxOp>(op)) {
      auto t = softmax.getType();
      int64_t r = t.getRank();
      if (r >= 3 && t.getDimSize(r - 1) == t.getDimSize(r - 2) &&
          softmax.getAxis() == r - 1) {
        ++m.layers;
        m.seq = t.getDimSize(r - 1);
        m.heads = r >= 4 ? t.getDimSize(r - 3)
                         : t.getDimSize(0) / std::max<int64_t>(1, samples);
      }
    } else if (isa<graph::LayerNormOp, graph::RmsNormOp>(op)) {
      auto t = cast<RankedTensorType>(op->getResult(0).getType());
      ++normWidths[t.getDimSize(t.getRank() - 1)];
    } else if (isa<graph::SiluOp>(op)) {
      m.gatedMlp = true;
    } else if (auto gather = dyn_cast<graph::GatherOp>(op)) {
      auto table = cast<RankedTensorType>(gather.getData().getType());
      if (gather.getData().getDefiningOp<graph::ParamOp>() &&
          table.getRank() == 2 && gather.getAxis() == 0)
        m.vocab = std::max(m.vocab, table.getDimSize(0));
    } else if (auto matmul = dyn_cast<graph::MatmulOp>(op)) {
      lastProjection = matmul.getType().getDimSize(matmul.getType().getRank() - 1);
    }
  });
  // No attention layers: not a transformer (knob-level plan scoring covers
  // attention softmax over [.., seq, seq] scores and layer norms); the
  // search plans it op by op.
  if (m.layers == 0 || normWidths.empty())
    return std::optional<cost::TransformerModel>();
  m.hidden = std::max_element(normWidths.begin(), normWidths.end(),
                              [](auto &a, auto &b) { return a.second < b.second; })
                 ->first;
  // The MLP's down projection: a [ffn, hidden] weight with ffn > hidden.
  forward.walk([&](graph::MatmulOp matmul) {
    auto rhs = cast<RankedTensorType>(matmul.getRhs().getType());
    if (rhs.getRank() != 2 || !matmul.getRhs().getDefiningOp<graph::ParamOp>())
      return;
    int64_t k = rhs.getDimSize(matmul.getTransposeRhs() ? 1 : 0);
    int64_t n = rhs.getDimSize(matmul.getTransposeRhs() ? 0 : 1);
    if (n == m.hidden && k > m.hidden)
      m.ffn = std::max(m.ffn, k);
  });
  if (m.vocab == 0)
    m.vocab = lastProjection;
  m.learnedPositions = !m.gatedMlp;
  m.tiedEmbedding = false;
  if (m.heads <= 0 || m.hidden % m.heads || m.vocab <= 0)
    return module.emitError("could not read consistent transformer "
                            "dimensions off the graph (hidden ")
           << m.hidden << ", heads " << m.heads << ", vocabulary " << m.vocab
           << ")";
  return std::optional<cost::TransformerModel>(m);
}

static bool hasDropout(ModuleOp module) {
  bool found = false;
  module.walk([&](graph::DropoutOp d) { found |= d.getRatio().convertToDouble() > 0; });
  return found;
}

static bool hasCausalAttention(ModuleOp module) {
  bool found = false;
  module.walk([&](graph::SoftmaxOp s) { found |= s.getCausal(); });
  return found;
}

static FailureOr<std::optional<cost::TransformerModel>>
readTransformerModel(ModuleOp module) {
  auto family = module->getAttrOfType<StringAttr>("cleave.zoo_family");
  auto settings = module->getAttrOfType<StringAttr>("cleave.zoo_settings");
  if (!family || !settings)
    return inferFromGraph(module);
  std::map<std::string, std::string> kv;
  llvm::SmallVector<StringRef> items;
  settings.getValue().split(items, ',');
  for (StringRef item : items) {
    auto [k, v] = item.split('=');
    kv[k.str()] = v.str();
  }
  auto integer = [&](StringRef key) -> int64_t {
    int64_t v = 0;
    auto it = kv.find(key.str());
    if (it != kv.end())
      llvm::to_integer(it->second, v, 10);
    return v;
  };
  auto real = [&](StringRef key) -> double {
    double v = 0;
    auto it = kv.find(key.str());
    if (it != kv.end())
      llvm::to_float(it->second, v);
    return v;
  };

  cost::TransformerModel m;
  m.name = module->getAttrOfType<StringAttr>("cleave.model").str();
  StringRef f = family.getValue();
  m.layers = integer("layers");
  m.hidden = integer("hidden");
  m.heads = integer("heads");
  m.ffn = integer("ffn");
  m.seq = integer("seq");
  m.vocab = integer("vocab");
  // The table's rows: GPT's pad_vocab rounds them up (to split over tp).
  if (int64_t pad = integer("pad_vocab"); pad > 1)
    m.vocab = (m.vocab + pad - 1) / pad * pad;
  if (f == "gpt" || f == "switch" || f == "bert") {
    m.learnedPositions = true;
    m.tiedEmbedding = f == "bert" || kv["tied"] == "true";
  } else if (f == "llama" || f == "moe") {
    m.gatedMlp = true;
    m.learnedPositions = false;
    m.tiedEmbedding = kv["tied"] == "true";
    m.kvHeads = integer("kv_heads");
  } else if (f == "vit") {
    // Patches are the sequence (plus the class token); the classifier head
    // plays the part of the vocabulary.
    int64_t grid = integer("image") / std::max<int64_t>(1, integer("patch"));
    m.seq = grid * grid + 1;
    m.vocab = integer("classes");
    m.tiedEmbedding = false;
  } else {
    // Not a transformer (knob-level plan scoring covers gpt, switch,
    // llama, moe, bert and vit): planned op by op.
    return std::optional<cost::TransformerModel>();
  }
  if (kv.count("experts")) {
    m.experts = integer("experts");
    m.topK = std::max<int64_t>(1, integer("top_k"));
    m.moeEvery = std::max<int64_t>(1, integer("moe_every"));
    m.capacityFactor = real("capacity_factor");
  }
  return std::optional<cost::TransformerModel>(m);
}

FailureOr<std::optional<cost::TransformerModel>>
getTransformerModel(ModuleOp module) {
  FailureOr<std::optional<cost::TransformerModel>> m =
      readTransformerModel(module);
  if (succeeded(m) && m->has_value()) {
    (*m)->dropout = hasDropout(module);
    (*m)->causal = hasCausalAttention(module);
  }
  return m;
}

FailureOr<cost::TransformerModel> readDecoderModel(ModuleOp module) {
  cost::TransformerModel m;
  func::FuncOp forward = forwardOf(module, m);
  if (!forward)
    return failure();
  m.dropout = false;
  m.causal = true;
  m.tiedEmbedding = false;
  for (graph::AttentionOp a : forward.getOps<graph::AttentionOp>()) {
    if (!a.getCausal() || a.getMask())
      return a.emitOpError("is not causal self-attention: --serve plans "
                           "decoders, which generate a token at a time");
    // [B, H, S, D] against [B, kv, S, D], or grouped as [B, kv, G, S, D]
    // against [B, kv, 1, S, D].
    auto q = cast<RankedTensorType>(a.getQuery().getType()).getShape();
    auto k = cast<RankedTensorType>(a.getKey().getType()).getShape();
    int64_t heads = q.size() == 5 ? q[1] * q[2] : q[q.size() - 3];
    int64_t kvHeads = k.size() == 5 ? k[1] : k[k.size() - 3];
    if (m.layers && (heads != m.heads || kvHeads != m.kvHeads))
      return a.emitOpError("has ")
             << heads << " heads (" << kvHeads << " for keys) where another "
             << "layer has " << m.heads << " (" << m.kvHeads << ")";
    m.heads = heads;
    m.kvHeads = kvHeads;
    m.seq = q[q.size() - 2];
    ++m.layers;
  }
  if (m.layers == 0)
    return forward.emitError("has no fused causal attention: --serve "
                             "plans decoders (attention as "
                             "cleave-fuse-attention recognises it)");
  // The token embedding is the first table read by row; a second one is
  // a learned position table.
  int64_t tables = 0;
  forward.walk([&](graph::GatherOp g) {
    auto table = cast<RankedTensorType>(g.getData().getType());
    if (!g.getData().getDefiningOp<graph::ParamOp>() ||
        table.getRank() != 2 || g.getAxis() != 0)
      return;
    if (tables++ == 0) {
      m.vocab = table.getDimSize(0);
      m.hidden = table.getDimSize(1);
    }
  });
  if (m.vocab == 0)
    return forward.emitError("has no token embedding (a parameter table "
                             "gathered by row): --serve plans decoders "
                             "that read token ids");
  m.learnedPositions = tables > 1;
  // MLP projections: [ffn, hidden] weights one way or the other, ffn the
  // widest (two a layer plain, three gated).
  int64_t projections = 0;
  forward.walk([&](graph::MatmulOp matmul) {
    Value rhs = matmul.getRhs();
    if (auto t = rhs.getDefiningOp<graph::TransposeOp>())
      rhs = t.getInput();
    auto w = cast<RankedTensorType>(rhs.getType());
    if (!rhs.getDefiningOp<graph::ParamOp>() || w.getRank() != 2)
      return;
    int64_t a = w.getDimSize(0), b = w.getDimSize(1);
    int64_t other = a == m.hidden ? b : b == m.hidden ? a : 0;
    if (other > m.hidden && other != m.vocab) {
      m.ffn = std::max(m.ffn, other);
      ++projections;
    }
  });
  m.gatedMlp = projections >= 3 * m.layers;
  // Experts: weights stacked [experts, a, b] and gathered by the experts
  // each token is routed to (top-k of them a token), the MLP's width
  // their narrower side beside the width (a fused gate-and-up projection
  // is twice as wide: gated).
  int64_t tokens = 1;
  for (graph::InputOp in : forward.getOps<graph::InputOp>()) {
    tokens = in.getType().getNumElements();
    break;
  }
  int64_t moeLayers = 0, widest = 0, expertWidth = 0;
  forward.walk([&](graph::GatherOp g) {
    auto w = cast<RankedTensorType>(g.getData().getType());
    if (!g.getData().getDefiningOp<graph::ParamOp>() || w.getRank() != 3 ||
        g.getAxis() != 0)
      return;
    int64_t a = w.getDimSize(1), b = w.getDimSize(2);
    int64_t other = a == m.hidden ? b : b == m.hidden ? a : 0;
    if (other == 0)
      return;
    m.experts = w.getDimSize(0);
    m.topK = std::max<int64_t>(
        1, cast<RankedTensorType>(g.getIndices().getType()).getNumElements() /
               std::max<int64_t>(1, tokens));
    expertWidth = expertWidth ? std::min(expertWidth, other) : other;
    widest = std::max(widest, other);
    ++moeLayers;
  });
  if (m.experts) {
    // Two or three stacked weights a MoE layer.
    int64_t perLayer = widest == 2 * expertWidth ? 2 : 3;
    m.moeEvery = std::max<int64_t>(1, m.layers * perLayer /
                                          std::max<int64_t>(1, moeLayers));
    m.ffn = expertWidth;
    m.gatedMlp = widest == 2 * expertWidth || perLayer == 3;
  }
  return m;
}

} // namespace cleave
