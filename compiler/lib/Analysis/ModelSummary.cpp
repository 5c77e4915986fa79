//===- ModelSummary.cpp - Size and work of a model ------------------------===//

#include "cleave/Analysis/ModelSummary.h"

#include "cleave/Dialect/Graph/IR/GraphOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/Format.h"

using namespace mlir;
namespace gr = cleave::graph;

namespace cleave {

static std::string typeString(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << t;
  return s;
}

ModelSummary summarizeModel(ModuleOp module) {
  ModelSummary s;
  if (auto name = module->getAttrOfType<StringAttr>("cleave.model"))
    s.model = name.str();
  if (auto source = module->getAttrOfType<StringAttr>("cleave.source"))
    s.source = source.str();
  auto func = module.lookupSymbol<func::FuncOp>("forward");
  if (!func)
    return s;
  for (Type t : func.getFunctionType().getResults())
    s.outputs.push_back(typeString(t));

  func.walk([&](Operation *op) {
    if (isa<func::FuncOp, func::ReturnOp>(op))
      return;
    s.opHistogram[op->getName().getStringRef().str()]++;
    if (auto input = dyn_cast<gr::InputOp>(op)) {
      s.inputs.push_back({input.getName().str(), typeString(input.getType())});
      if (s.inputs.size() == 1 && input.getType().getRank() > 0)
        s.samples = input.getType().getDimSize(0);
      return;
    }
    if (auto param = dyn_cast<gr::ParamOp>(op)) {
      int64_t n = gr::numElements(param.getType());
      (param.isTrainable() ? s.trainableParams : s.frozenParams) += n;
      s.paramBytes += gr::tensorBytes(param.getType());
      if (param.getValueAttr())
        s.paramsWithValues += n;
      return;
    }
    auto cost = dyn_cast<gr::CostOpInterface>(op);
    if (!cost)
      return;
    double flops = cost.getFlops();
    s.forwardFlops += flops;
    s.trainingFlops +=
        flops * (isa<gr::MatmulOp, gr::Conv2dOp>(op) ? 3 : 2);
    s.bytesRead += cost.getBytesRead();
    s.bytesWritten += cost.getBytesWritten();
    if (!isa<gr::ConstantOp>(op))
      s.activationBytes += cost.getBytesWritten();
  });
  if (auto step = module.lookupSymbol<func::FuncOp>("train_step")) {
    s.trainingFlops = 0;
    s.trainingFlopsCounted = true;
    step.walk([&](gr::CostOpInterface op) { s.trainingFlops += op.getFlops(); });
  }
  return s;
}

llvm::json::Value toJson(const ModelSummary &s) {
  llvm::json::Array inputs, outputs;
  for (const auto &i : s.inputs)
    inputs.push_back(llvm::json::Object{{"name", i.name}, {"type", i.type}});
  for (const auto &o : s.outputs)
    outputs.push_back(o);
  llvm::json::Object histogram;
  for (const auto &[name, count] : s.opHistogram)
    histogram[name] = count;
  double samples = double(std::max<int64_t>(1, s.samples));
  return llvm::json::Object{
      {"model", s.model},
      {"source", s.source},
      {"inputs", std::move(inputs)},
      {"outputs", std::move(outputs)},
      {"samples_per_step", s.samples},
      {"parameters",
       llvm::json::Object{{"trainable", s.trainableParams},
                          {"frozen", s.frozenParams},
                          {"bytes", s.paramBytes},
                          {"with_values", s.paramsWithValues}}},
      {"flops",
       llvm::json::Object{
           {"forward_per_step", s.forwardFlops},
           {"forward_per_sample", double(s.forwardFlops) / samples},
           {"training_per_step", s.trainingFlops},
           {"training_per_sample", double(s.trainingFlops) / samples},
           {"training_method",
            s.trainingFlopsCounted
                ? "counted on the training-step graph (forward, backward, "
                  "optimizer)"
                : "estimate: backward = 2x forward for matmul and conv2d, 1x "
                  "for other ops"}}},
      {"bytes",
       llvm::json::Object{{"read", s.bytesRead},
                          {"written", s.bytesWritten},
                          {"activations", s.activationBytes}}},
      {"ops", std::move(histogram)},
  };
}

/// 174592061440 -> "174.59 G"
static std::string human(double v, const char *unit = "") {
  const char *prefixes[] = {"", "K", "M", "G", "T", "P", "E"};
  int i = 0;
  while (std::abs(v) >= 1000.0 && i < 6) {
    v /= 1000.0;
    ++i;
  }
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::format("%.2f %s%s", v, prefixes[i], unit);
  return s;
}

void printSummary(const ModelSummary &s, llvm::raw_ostream &os) {
  double samples = double(std::max<int64_t>(1, s.samples));
  os << "model:            " << s.model << " (" << s.source << ")\n";
  for (const auto &i : s.inputs)
    os << "input:            " << i.name << " : " << i.type << "\n";
  for (const auto &o : s.outputs)
    os << "output:           " << o << "\n";
  os << "parameters:       " << s.trainableParams << " trainable ("
     << human(double(s.trainableParams)) << "), " << s.frozenParams
     << " frozen, " << human(double(s.paramBytes), "B") << "\n";
  os << "samples per step: " << s.samples << "\n";
  os << "forward FLOPs:    " << human(double(s.forwardFlops) / samples)
     << " per sample, " << human(double(s.forwardFlops)) << " per step\n";
  os << "training FLOPs:   " << human(double(s.trainingFlops) / samples)
     << " per sample, " << human(double(s.trainingFlops))
     << " per step ("
     << (s.trainingFlopsCounted ? "forward, backward and optimizer, counted"
                                : "estimated: backward = 2x forward")
     << ")\n";
  os << "activations:      " << human(double(s.activationBytes), "B")
     << " per step (all forward intermediates, no reuse)\n";
  os << "ops:\n";
  std::vector<std::pair<int64_t, std::string>> sorted;
  for (const auto &[name, count] : s.opHistogram)
    sorted.push_back({-count, name});
  llvm::sort(sorted);
  for (const auto &[negCount, name] : sorted)
    os << llvm::format("  %-22s %8lld\n", name.c_str(), (long long)-negCount);
}

} // namespace cleave
