//===- ModelZoo.cpp - Registry, presets and settings of the model zoo -----===//

#include "cleave/Importers/ModelZoo.h"

#include "ZooFamily.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

#include <cmath>

using namespace mlir;

namespace cleave::zoo {

//===----------------------------------------------------------------------===//
// Settings
//===----------------------------------------------------------------------===//

namespace {
enum class KeyType { Integer, Real, Flag };
} // namespace

static KeyType typeOf(llvm::StringRef defaultValue) {
  if (defaultValue == "true" || defaultValue == "false")
    return KeyType::Flag;
  if (defaultValue.contains_insensitive('.') ||
      defaultValue.contains_insensitive('e'))
    return KeyType::Real;
  return KeyType::Integer;
}

int64_t Config::integer(llvm::StringRef key) const {
  int64_t v = 0;
  llvm::to_integer(values.at(key.str()), v, 10);
  return v;
}

double Config::real(llvm::StringRef key) const {
  double v = 0;
  llvm::to_float(values.at(key.str()), v);
  return v;
}

bool Config::flag(llvm::StringRef key) const {
  llvm::StringRef v = values.at(key.str());
  return v == "true" || v == "1";
}

llvm::Error configError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::Error requireDivisible(const Config &c, llvm::StringRef a,
                             llvm::StringRef b) {
  if (c.integer(a) % c.integer(b) == 0)
    return llvm::Error::success();
  return configError(a + " (" + llvm::Twine(c.integer(a)) +
                     ") must be a multiple of " + b + " (" +
                     llvm::Twine(c.integer(b)) + ")");
}

/// Sets `key` to `value` after checking both against the family's schema.
static llvm::Error setKey(const Family &family, Config &config,
                          llvm::StringRef key, llvm::StringRef value) {
  auto desc = llvm::find_if(
      family.keys, [&](const KeyDesc &k) { return key == k.key; });
  if (desc == family.keys.end()) {
    std::string valid;
    for (const KeyDesc &k : family.keys)
      valid += (valid.empty() ? "" : ", ") + std::string(k.key);
    return configError("unknown key '" + key + "' for zoo family '" +
                       family.name + "' (valid keys: " + valid + ")");
  }
  llvm::StringRef defaultValue = desc->defaultValue;
  switch (typeOf(defaultValue)) {
  case KeyType::Flag:
    if (value != "true" && value != "false" && value != "1" && value != "0")
      return configError("key '" + key + "' takes true or false, got '" +
                         value + "'");
    break;
  case KeyType::Real: {
    double v;
    if (!llvm::to_float(value, v) || !std::isfinite(v) || v < 0)
      return configError("key '" + key +
                         "' takes a non-negative number, got '" + value + "'");
    break;
  }
  case KeyType::Integer: {
    int64_t v;
    // A default of 0 means "derive it"; other integer keys are sizes.
    bool mayBeZero = defaultValue == "0";
    if (!llvm::to_integer(value, v, 10) || v < 0 || (v == 0 && !mayBeZero))
      return configError("key '" + key + "' takes a " +
                         (mayBeZero ? "non-negative" : "positive") +
                         " integer, got '" + value + "'");
    // The graph is built layer by layer and its tensors' sizes multiply:
    // bound what no model comes near (the deepest published transformers
    // have a few hundred layers, the widest a hidden size of 25600).
    int64_t most = key == "layers" || key == "depth" ? 4096 : int64_t(1) << 24;
    if (v > most)
      return configError("key '" + key + "' is at most " +
                         llvm::Twine(most) + ", got " + value);
    break;
  }
  }
  config.values[key.str()] = value.str();
  return llvm::Error::success();
}

static llvm::Error applySettings(const Family &family, Config &config,
                                 llvm::StringRef settings) {
  llvm::SmallVector<llvm::StringRef> items;
  settings.split(items, ',', -1, /*KeepEmpty=*/false);
  llvm::StringSet<> seen;
  for (llvm::StringRef item : items) {
    auto [key, value] = item.split('=');
    key = key.trim();
    value = value.trim();
    if (!item.contains('=') || key.empty() || value.empty())
      return configError("expected key=value, got '" + item + "'");
    if (seen.count(key))
      return configError("key '" + key + "' is given twice");
    seen.insert(key);
    if (auto err = setKey(family, config, key, value))
      return err;
  }
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Registry
//===----------------------------------------------------------------------===//

static const std::vector<Family> &families() {
  static const std::vector<Family> all = {
      gptFamily(),  switchFamily(), llamaFamily(), moeFamily(),
      bertFamily(), vitFamily(),    resnetFamily()};
  return all;
}

static const std::vector<Preset> &presets() {
  // Sizes from the papers: GPT-2 (Radford et al. 2019), GPT-3 (Brown et al.
  // 2020, Table 2.1; head size 128 where the table's head count disagrees
  // with its width), Megatron-LM (Narayanan et al. 2021, Table 1), LLaMA-2
  // (Touvron et al. 2023), Llama 3 (Dubey et al. 2024), Mixtral (Jiang et al.
  // 2024), BERT (Devlin et al. 2019), ViT (Dosovitskiy et al. 2021), ResNet
  // and Wide ResNet as in torchvision.
  static const std::vector<Preset> all = {
      {"gpt2", "gpt", "layers=12,hidden=768,heads=12,seq=1024", "GPT-2 small, 124M"},
      {"gpt2-medium", "gpt", "layers=24,hidden=1024,heads=16,seq=1024", "GPT-2 medium, 355M"},
      {"gpt2-large", "gpt", "layers=36,hidden=1280,heads=20,seq=1024", "GPT-2 large, 774M"},
      {"gpt2-xl", "gpt", "layers=48,hidden=1600,heads=25,seq=1024", "GPT-2 XL, 1.5B"},
      {"gpt3-125m", "gpt", "layers=12,hidden=768,heads=12,seq=2048,pad_vocab=128", "GPT-3 Small"},
      {"gpt3-350m", "gpt", "layers=24,hidden=1024,heads=16,seq=2048,pad_vocab=128", "GPT-3 Medium"},
      {"gpt3-760m", "gpt", "layers=24,hidden=1536,heads=16,seq=2048,pad_vocab=128", "GPT-3 Large"},
      {"gpt3-1.3b", "gpt", "layers=24,hidden=2048,heads=16,seq=2048,pad_vocab=128", "GPT-3 XL"},
      {"gpt3-2.7b", "gpt", "layers=32,hidden=2560,heads=32,seq=2048,pad_vocab=128", "GPT-3 2.7B"},
      {"gpt3-6.7b", "gpt", "layers=32,hidden=4096,heads=32,seq=2048,pad_vocab=128", "GPT-3 6.7B"},
      {"gpt3-13b", "gpt", "layers=40,hidden=5120,heads=40,seq=2048,pad_vocab=128", "GPT-3 13B"},
      {"gpt3-175b", "gpt", "layers=96,hidden=12288,heads=96,seq=2048,pad_vocab=128", "GPT-3 175B"},
      {"megatron-1.7b", "gpt", "layers=24,hidden=2304,heads=24,seq=2048,vocab=51200", "Megatron-LM table row, 32 GPUs"},
      {"megatron-3.6b", "gpt", "layers=30,hidden=3072,heads=32,seq=2048,vocab=51200", "Megatron-LM table row, 64 GPUs"},
      {"megatron-7.5b", "gpt", "layers=36,hidden=4096,heads=32,seq=2048,vocab=51200", "Megatron-LM table row, 128 GPUs"},
      {"megatron-18b", "gpt", "layers=40,hidden=6144,heads=48,seq=2048,vocab=51200", "Megatron-LM table row, 256 GPUs"},
      {"megatron-39b", "gpt", "layers=48,hidden=8192,heads=64,seq=2048,vocab=51200", "Megatron-LM table row, 512 GPUs"},
      {"megatron-76b", "gpt", "layers=60,hidden=10240,heads=80,seq=2048,vocab=51200", "Megatron-LM table row, 1024 GPUs"},
      {"megatron-145b", "gpt", "layers=80,hidden=12288,heads=96,seq=2048,vocab=51200", "Megatron-LM table row, 1536 GPUs"},
      {"megatron-310b", "gpt", "layers=96,hidden=16384,heads=128,seq=2048,vocab=51200", "Megatron-LM table row, 1920 GPUs"},
      {"megatron-530b", "gpt", "layers=105,hidden=20480,heads=128,seq=2048,vocab=51200", "Megatron-LM table row, 2520 GPUs"},
      {"megatron-1t", "gpt", "layers=128,hidden=25600,heads=160,seq=2048,vocab=51200", "Megatron-LM table row, 3072 GPUs"},
      {"switch-125m-8e", "switch", "layers=12,hidden=768,heads=12,seq=2048,experts=8,top_k=1,moe_every=2", "GPT-3 Small with Switch top-1 MoE on every other MLP"},
      {"llama2-7b", "llama", "layers=32,hidden=4096,heads=32,ffn=11008", "LLaMA-2 7B"},
      {"llama2-13b", "llama", "layers=40,hidden=5120,heads=40,ffn=13824", "LLaMA-2 13B"},
      {"llama2-70b", "llama", "layers=80,hidden=8192,heads=64,kv_heads=8,ffn=28672", "LLaMA-2 70B (GQA)"},
      {"llama3-8b", "llama", "layers=32,hidden=4096,heads=32,kv_heads=8,ffn=14336,vocab=128256,seq=8192,theta=500000.0", "Llama 3 8B"},
      {"llama3-70b", "llama", "layers=80,hidden=8192,heads=64,kv_heads=8,ffn=28672,vocab=128256,seq=8192,theta=500000.0", "Llama 3 70B"},
      {"llama3-405b", "llama", "layers=126,hidden=16384,heads=128,kv_heads=8,ffn=53248,vocab=128256,seq=8192,theta=500000.0", "Llama 3.1 405B"},
      {"mixtral-8x7b", "moe", "layers=32,hidden=4096,heads=32,kv_heads=8,ffn=14336,experts=8,top_k=2,theta=1000000.0", "Mixtral 8x7B, top-2 of 8 experts"},
      {"bert-base", "bert", "layers=12,hidden=768,heads=12,ffn=3072", "BERT-Base"},
      {"bert-large", "bert", "layers=24,hidden=1024,heads=16,ffn=4096", "BERT-Large"},
      {"vit-b16", "vit", "layers=12,hidden=768,heads=12,ffn=3072,patch=16", "ViT-B/16"},
      {"vit-l16", "vit", "layers=24,hidden=1024,heads=16,ffn=4096,patch=16", "ViT-L/16"},
      {"vit-h14", "vit", "layers=32,hidden=1280,heads=16,ffn=5120,patch=14", "ViT-H/14"},
      {"resnet50", "wideresnet", "depth=50,width=1", "ResNet-50"},
      {"wrn-50-2", "wideresnet", "depth=50,width=2", "Wide ResNet-50-2"},
      {"wrn-101-2", "wideresnet", "depth=101,width=2", "Wide ResNet-101-2"},
  };
  return all;
}

} // namespace cleave::zoo

namespace cleave {

using namespace zoo;

llvm::Expected<OwningOpRef<ModuleOp>>
buildZooModel(MLIRContext &ctx, llvm::StringRef spec,
              const ImportOptions &options) {
  auto [name, overrides] = spec.split(',');
  name = name.trim();
  const Family *family = nullptr;
  const Preset *preset = nullptr;
  for (const Preset &p : presets())
    if (name == p.name)
      preset = &p;
  llvm::StringRef familyName = preset ? preset->family : name;
  for (const Family &f : families())
    if (familyName == f.name)
      family = &f;
  if (!family) {
    std::string known;
    for (const ZooEntry &e : listZooModels())
      known += (known.empty() ? "" : ", ") + e.name;
    return configError("unknown zoo model '" + name + "' (known: " + known +
                       ")");
  }

  Config config;
  for (const KeyDesc &k : family->keys)
    config.values[k.key] = k.defaultValue;
  if (preset)
    cantFail(applySettings(*family, config, preset->settings));
  if (auto err = applySettings(*family, config, overrides))
    return std::move(err);
  // Flags bind dimensions after the spec: `--batch 8` on `zoo:gpt2` works.
  if (options.batch)
    if (auto err = setKey(*family, config, "batch",
                          std::to_string(*options.batch)))
      return std::move(err);
  if (options.seq)
    if (auto err = setKey(*family, config, "seq", std::to_string(*options.seq)))
      return std::move(err);
  for (const auto &[dim, value] : options.dims)
    if (auto err = setKey(*family, config, dim, std::to_string(value)))
      return std::move(err);

  GraphBuilder builder(ctx, name);
  if (auto err = family->build(builder, config))
    return configError("zoo model '" + spec + "': " +
                       llvm::toString(std::move(err)));
  OwningOpRef<ModuleOp> module = builder.takeModule();
  // Record the settings the model was built with, for summaries and plans.
  std::string settings;
  for (const KeyDesc &k : family->keys)
    settings += (settings.empty() ? "" : ",") + std::string(k.key) + "=" +
                config.values[k.key];
  (*module)->setAttr("cleave.zoo_family",
                     StringAttr::get(&ctx, family->name));
  (*module)->setAttr("cleave.zoo_settings", StringAttr::get(&ctx, settings));
  if (failed(verify(*module)))
    return configError("zoo model '" + spec + "' failed to verify");
  return std::move(module);
}

std::vector<ZooEntry> listZooModels() {
  std::vector<ZooEntry> entries;
  for (const Family &f : families()) {
    std::string defaults;
    for (const KeyDesc &k : f.keys)
      defaults += (defaults.empty() ? "" : ",") + std::string(k.key) + "=" +
                  k.defaultValue;
    entries.push_back({f.name, f.name, defaults, f.description});
  }
  for (const Preset &p : presets())
    entries.push_back({p.name, p.family, p.settings, p.description});
  return entries;
}

} // namespace cleave
