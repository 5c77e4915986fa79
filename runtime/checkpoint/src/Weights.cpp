//===- Weights.cpp - Start a plan from whole named weights -----------------===//

#include "cleave/runtime/checkpoint/Weights.h"

#include "cleave/runtime/comm/Bfloat16.h"
#include "cleave/runtime/comm/Float16.h"

#include "cleave/runtime/checkpoint/Blocks.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include <cstring>
#include <map>
#include <set>
#include <string_view>

namespace cleave::checkpoint {

namespace {

std::string shapeText(const std::vector<int64_t> &shape) {
  return shape.empty() ? "scalar" : absl::StrJoin(shape, "x");
}

/// A generation plan's key/value caches (plan.proto GenerationConfig):
/// state the steps fill, not weights a file gives.
bool isCache(const plan::Plan &plan, std::string_view name) {
  auto endsWith = [&](std::string_view tail) {
    return name.size() >= tail.size() &&
           name.substr(name.size() - tail.size()) == tail;
  };
  return plan.has_generation() && (endsWith(".k_cache") || endsWith(".v_cache"));
}

} // namespace

absl::Status checkWeightsMatch(const SafeTensorsReader &weights,
                               const plan::Plan &plan) {
  std::vector<std::string> missing, misShaped, extra;
  std::set<std::string> names;
  for (const plan::ParameterSharding &p : plan.parameters()) {
    if (isCache(plan, p.name()))
      continue;
    names.insert(p.name());
    names.insert(p.aliases().begin(), p.aliases().end());
    std::vector<int64_t> shape(p.global_shape().begin(),
                               p.global_shape().end());
    // A tied parameter may come under any of its names (PyTorch's
    // state_dict lists them all); each one given must fit.
    std::vector<std::string> given;
    if (weights.find(p.name()))
      given.push_back(p.name());
    for (const std::string &alias : p.aliases())
      if (weights.find(alias))
        given.push_back(alias);
    if (given.empty())
      missing.push_back(absl::StrCat("'", p.name(), "' (", shapeText(shape),
                                     ")"));
    for (const std::string &name : given)
      if (const SafeTensorInfo *t = weights.find(name); t->shape != shape)
        misShaped.push_back(absl::StrCat("'", name, "' is ",
                                         shapeText(t->shape), ", the model's ",
                                         shapeText(shape)));
  }
  for (const SafeTensorInfo &t : weights.tensors())
    if (!names.count(t.name))
      extra.push_back(absl::StrCat("'", t.name, "'"));
  if (missing.empty() && misShaped.empty() && extra.empty())
    return absl::OkStatus();
  auto list = [](std::vector<std::string> items) {
    size_t total = items.size();
    if (items.size() > 20) {
      items.resize(20);
      items.push_back(absl::StrCat("... (", total, " in all)"));
    }
    return absl::StrJoin(items, ", ");
  };
  std::vector<std::string> parts;
  if (!missing.empty())
    parts.push_back(absl::StrCat(missing.size(), " missing: ", list(missing)));
  if (!misShaped.empty())
    parts.push_back(
        absl::StrCat(misShaped.size(), " mis-shaped: ", list(misShaped)));
  if (!extra.empty())
    parts.push_back(absl::StrCat(extra.size(), " not parameters of the model: ",
                                 list(extra)));
  return absl::InvalidArgumentError(absl::StrCat(
      weights.path(), ": the weights do not fit model '", plan.model().name(),
      "' (", plan.parameters_size(), " parameters): ",
      absl::StrJoin(parts, "; ")));
}

absl::Status loadWeightsIntoRank(const SafeTensorsReader &weights,
                                 const plan::Plan &plan, int rank,
                                 executor::Executor &executor) {
  std::string buffer;
  for (const Block &b : blocksOfRank(plan, rank)) {
    // Parameters, and the fp32 master weights a 16-bit parameter keeps
    // (ZeRO under mixed precision), take the file's values; a bf16 or
    // fp16 parameter holds them rounded.
    if ((!b.state.empty() && b.state != "master") || isCache(plan, b.name))
      continue;
    const SafeTensorInfo *t = weights.find(b.name);
    for (size_t i = 0; !t && i < b.aliases.size(); ++i)
      t = weights.find(b.aliases[i]);
    if (!t)
      return absl::NotFoundError(absl::StrCat(weights.path(), ": no tensor '",
                                              b.name, "'"));
    absl::StatusOr<std::vector<float>> whole = weights.readF32(*t);
    if (!whole.ok())
      return whole.status();
    if (b.dtype != plan::F32 && b.dtype != plan::BF16 && b.dtype != plan::F16)
      return absl::InvalidArgumentError(absl::StrCat(
          "parameter '", b.name, "' is ", plan::DType_Name(b.dtype),
          " in the plan (f32, bf16 or f16 expected)"));
    Box all{std::vector<int64_t>(b.globalShape.size(), 0), b.globalShape};
    int64_t n = b.box.numElements();
    buffer.assign(static_cast<size_t>(n * 4), '\0');
    copyRegion(reinterpret_cast<const char *>(whole->data()), all,
               buffer.data(), b.box, b.box, 4);
    if (b.dtype == plan::BF16 || b.dtype == plan::F16) {
      std::string half(static_cast<size_t>(n * 2), '\0');
      const float *values = reinterpret_cast<const float *>(buffer.data());
      uint16_t *words = reinterpret_cast<uint16_t *>(half.data());
      if (b.dtype == plan::BF16)
        comm::floatsToBf16(values, words, n);
      else
        comm::floatsToF16(values, words, n);
      buffer.swap(half);
    }
    executor.writeTensorBytes(b.tensorId, buffer.data(), b.bytes());
  }
  return absl::OkStatus();
}

absl::Status bakeWeights(plan::Plan &plan, const SafeTensorsReader &weights,
                         const std::string &source) {
  if (absl::Status s = checkWeightsMatch(weights, plan); !s.ok())
    return s;
  for (plan::ParameterSharding &p : *plan.mutable_parameters()) {
    if (isCache(plan, p.name()))
      continue;
    // checkWeightsMatch saw the name or one of its aliases.
    const SafeTensorInfo *t = weights.find(p.name());
    for (int i = 0; !t && i < p.aliases_size(); ++i)
      t = weights.find(p.aliases(i));
    absl::StatusOr<std::vector<float>> values = weights.readF32(*t);
    if (!values.ok())
      return values.status();
    // Plans hold initial values as raw little-endian fp32 (plan.proto).
    std::string bytes(values->size() * sizeof(float), '\0');
    std::memcpy(bytes.data(), values->data(), bytes.size());
    p.set_initial_value(std::move(bytes));
  }
  plan.mutable_model()->set_initial_weights(source);
  return absl::OkStatus();
}

void inheritInitialValues(const plan::Plan &from, plan::Plan &to) {
  std::map<std::string, const std::string *> values;
  for (const plan::ParameterSharding &p : from.parameters())
    if (!p.initial_value().empty())
      values[p.name()] = &p.initial_value();
  // Weights baked by --init-from replace what the model file holds; other
  // values only fill parameters that have none.
  bool baked = !from.model().initial_weights().empty();
  for (plan::ParameterSharding &p : *to.mutable_parameters())
    if (auto it = values.find(p.name());
        it != values.end() && (baked || p.initial_value().empty()))
      p.set_initial_value(*it->second);
  if (baked)
    to.mutable_model()->set_initial_weights(from.model().initial_weights());
}

} // namespace cleave::checkpoint
