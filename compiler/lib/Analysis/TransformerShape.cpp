//===- TransformerShape.cpp - A module's transformer dimensions -----------===//

#include "cleave/Analysis/TransformerShape.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringExtras.h"

#include <map>

using namespace mlir;

namespace cleave {

FailureOr<cost::TransformerModel> getTransformerModel(ModuleOp module) {
  auto family = module->getAttrOfType<StringAttr>("cleave.zoo_family");
  auto settings = module->getAttrOfType<StringAttr>("cleave.zoo_settings");
  if (!family || !settings)
    return module.emitError(
        "knob-level plan scoring needs a model-zoo transformer (zoo:gpt, "
        "llama, moe, switch, bert, vit); imported graphs are planned op by op "
        "by the search");
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
    return module.emitError("zoo family '")
           << f << "' is not a transformer; knob-level plan scoring covers "
           << "gpt, switch, llama, moe, bert and vit";
  }
  if (kv.count("experts")) {
    m.experts = integer("experts");
    m.topK = std::max<int64_t>(1, integer("top_k"));
    m.moeEvery = std::max<int64_t>(1, integer("moe_every"));
    m.capacityFactor = real("capacity_factor");
  }
  return m;
}

} // namespace cleave
